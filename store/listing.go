package store

// Schema version 2: the indexes that list runs by filter (SPEC §5). Every
// list is ordered by (created_at_ms, run_id), so each index ends with those
// two columns after the filter's own, and a page is one range scan at any
// depth. Both directions of the order read the same index, backwards for
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

// WaitingKindExpr is the expression of a run's waiting kind (SPEC §1.2),
// as flows_runs_by_waiting_kind indexes it: timer, approval, quota and
// human are kinds of their own, event and signal are signal, any other
// reason is other, and no reason is NULL. Both dialects accept it verbatim.
const WaitingKindExpr = `(CASE WHEN waiting_reason IN ('timer', 'approval', 'quota', 'human') THEN waiting_reason
    WHEN waiting_reason IN ('event', 'signal') THEN 'signal'
    WHEN waiting_reason IS NOT NULL THEN 'other' END)`

// CancelPendingCond is the condition of cancellations requested and not
// yet finished, as flows_runs_cancel_pending indexes it.
const CancelPendingCond = `cancel_requested_at_ms IS NOT NULL AND finished_at_ms IS NULL`

func listingIndexes() []Object {
	index := func(name, why, ddl string) Object {
		return Object{Name: name, Kind: KindIndex, Table: "flows_runs", Since: 2, Why: why, Portable: ddl}
	}
	byFlow := func(d Dialect, name, cols string) string {
		return `CREATE INDEX ` + name + ` ON flows_runs (` + d.FlowNameExpr() + cols + `, created_at_ms, run_id)`
	}
	return []Object{
		index("flows_runs_created", "Lists every run by creation, and serves the createdAfter/createdBefore range.",
			`CREATE INDEX flows_runs_created ON flows_runs (created_at_ms, run_id)`),
		index("flows_runs_by_status", "Lists the runs of one status by creation; heartbeatBefore reads the running ones through it.",
			`CREATE INDEX flows_runs_by_status ON flows_runs (status, created_at_ms, run_id)`),
		{Name: "flows_runs_by_flow", Kind: KindIndex, Table: "flows_runs", Since: 2,
			Why:    "Lists the runs of one flow (state_json.flowName) by creation.",
			SQLite: byFlow(SQLite, "flows_runs_by_flow", ""), Postgres: byFlow(Postgres, "flows_runs_by_flow", "")},
		{Name: "flows_runs_by_flow_status", Kind: KindIndex, Table: "flows_runs", Since: 2,
			Why:    "Lists the runs of one flow in one status by creation, the dashboard's most common view.",
			SQLite: byFlow(SQLite, "flows_runs_by_flow_status", ", status"), Postgres: byFlow(Postgres, "flows_runs_by_flow_status", ", status")},
		index("flows_runs_by_parent", "Lists the runs with one parent_run_id by creation.",
			`CREATE INDEX flows_runs_by_parent ON flows_runs (parent_run_id, created_at_ms, run_id) WHERE parent_run_id IS NOT NULL`),
		index("flows_runs_by_execution_parent", "Lists the runs with one effective parent by creation.",
			`CREATE INDEX flows_runs_by_execution_parent ON flows_runs (execution_parent_id, created_at_ms, run_id) WHERE execution_parent_id IS NOT NULL`),
		index("flows_runs_roots", "Lists the runs without an effective parent (rootsOnly) by creation.",
			`CREATE INDEX flows_runs_roots ON flows_runs (created_at_ms, run_id) WHERE execution_parent_id IS NULL`),
		index("flows_runs_by_lineage", "Lists the rounds of one lineage, round 0 included, by creation.",
			`CREATE INDEX flows_runs_by_lineage ON flows_runs (COALESCE(lineage_id, run_id), created_at_ms, run_id)`),
		index("flows_runs_by_waiting_reason", "Lists the runs waiting for one reason by creation.",
			`CREATE INDEX flows_runs_by_waiting_reason ON flows_runs (waiting_reason, created_at_ms, run_id) WHERE waiting_reason IS NOT NULL`),
		index("flows_runs_by_waiting_kind", "Lists the runs waiting for one kind of thing by creation.",
			`CREATE INDEX flows_runs_by_waiting_kind ON flows_runs (`+WaitingKindExpr+`, created_at_ms, run_id) WHERE waiting_reason IS NOT NULL`),
		index("flows_runs_cancel_pending", "Lists the cancellations requested and not yet finished (cancelRequested) by creation.",
			`CREATE INDEX flows_runs_cancel_pending ON flows_runs (created_at_ms, run_id) WHERE `+CancelPendingCond),
	}
}
