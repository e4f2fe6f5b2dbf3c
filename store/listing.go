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
