package store

// Schema version 2 (migrations/<dialect>/002_listing_indexes.sql) adds the
// indexes that list runs by filter. Every list is ordered by (created_at_ms,
// run_id), so each index ends with those two columns after the filter's
// own, and a page is one range scan at any depth. Both directions of the order read the same index, backwards for
// the newest first. The partial indexes hold only the rows their filter
// can match; a query must repeat the index's WHERE for SQLite to use it.
//
// The expressions below are part of the rung: a query must spell them
// exactly so for either dialect to match the expression indexes.

// listingRung is the name schema version 2 records.
const listingRung = "listing indexes: runs by status, flow, parent, lineage, waiting, cancellation, creation"

// FlowNameExpr is the expression of a run's flow name (state_json.flowName)
// in dialect d, as flows_runs_by_flow indexes it.
func (d Dialect) FlowNameExpr() string {
	if d == Postgres {
		return `(state_json::json ->> 'flowName')`
	}
	return `json_extract(state_json, '$.flowName')`
}

// WaitingKindExpr is the expression of a run's waiting kind (vocab.KindOf),
// as flows_runs_by_waiting_kind indexes it: timer, approval, quota and
// human are kinds of their own, event and signal are signal, any other
// reason is other, and no reason is NULL. Both dialects accept it verbatim.
const WaitingKindExpr = `(CASE WHEN waiting_reason IN ('timer', 'approval', 'quota', 'human') THEN waiting_reason
    WHEN waiting_reason IN ('event', 'signal') THEN 'signal'
    WHEN waiting_reason IS NOT NULL THEN 'other' END)`

// CancelPendingCond is the condition of cancellations requested and not
// yet finished, as flows_runs_cancel_pending indexes it.
const CancelPendingCond = `cancel_requested_at_ms IS NOT NULL AND finished_at_ms IS NULL`

// opsRung is the name schema version 3 records. Its indexes
// (migrations/<dialect>/003_ops_indexes.sql) end with (finished_at_ms,
// run_id), as version 2's end with (created_at_ms, run_id): a list of
// finished runs by finish time, or a count of the runs finished in a
// window, is one range of one index. A statement reaches them by
// spelling a term on finished_at_ms (a range, or IS NOT NULL) beside the
// index's leading columns.
const opsRung = "ops indexes: runs by finish time, overall, by status and by flow; flow names"

// statsRung is the name schema version 4 (migrations/<dialect>/004_stats_indexes.sql)
// records: the index the workflow metrics count overdue waits with.
const statsRung = "stats indexes: wait steps still waiting, by timeout"

// tokenDigestRung is the name schema version 5
// (migrations/<dialect>/005_token_digest.sql) records: on PostgreSQL,
// flows_runs.waiting_token_digest, a generated column, so that serve reads
// the token's digest without reading the token.
const tokenDigestRung = "token digest: the waiting token's digest in a column of its own"

// WaitingTokenColumns are the two columns a run read selects of its waiting
// token, from flows_runs as alias r: the token and its digest, one of them
// NULL. PostgreSQL keeps the digest (schema version 5), so a role without
// SELECT on waiting_token can serve; SQLite has neither roles nor SHA-256,
// and its reader hashes the token.
func (d Dialect) WaitingTokenColumns() string {
	if d == Postgres {
		return `NULL, r.waiting_token_digest`
	}
	return `r.waiting_token, NULL`
}

// FlowNameKeyExpr is the expression distinct flow names are read through,
// in dialect d: the flow name in code-point order, as
// flows_runs_flow_names indexes it (under collation "C" on PostgreSQL;
// SQLite's BINARY collation already sorts so). A comparison with it
// is one in code-point order in both dialects, so a prefix is one range.
func (d Dialect) FlowNameKeyExpr() string {
	if d == Postgres {
		return `((state_json::json ->> 'flowName') COLLATE "C")`
	}
	return d.FlowNameExpr()
}
