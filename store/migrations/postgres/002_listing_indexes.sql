-- Schema version 2: listing indexes: runs by status, flow, parent, lineage, waiting, cancellation, creation.
-- Released: never edit this file; add a new rung instead (see ARCHITECTURE.md).

-- index flows_runs_created
CREATE INDEX flows_runs_created ON flows_runs (created_at_ms, run_id);

-- index flows_runs_by_status
CREATE INDEX flows_runs_by_status ON flows_runs (status, created_at_ms, run_id);

-- index flows_runs_by_flow
CREATE INDEX flows_runs_by_flow ON flows_runs ((state_json::json ->> 'flowName'), created_at_ms, run_id);

-- index flows_runs_by_flow_status
CREATE INDEX flows_runs_by_flow_status ON flows_runs ((state_json::json ->> 'flowName'), status, created_at_ms, run_id);

-- index flows_runs_by_parent
CREATE INDEX flows_runs_by_parent ON flows_runs (parent_run_id, created_at_ms, run_id) WHERE parent_run_id IS NOT NULL;

-- index flows_runs_by_execution_parent
CREATE INDEX flows_runs_by_execution_parent ON flows_runs (execution_parent_id, created_at_ms, run_id) WHERE execution_parent_id IS NOT NULL;

-- index flows_runs_roots
CREATE INDEX flows_runs_roots ON flows_runs (created_at_ms, run_id) WHERE execution_parent_id IS NULL;

-- index flows_runs_by_lineage
CREATE INDEX flows_runs_by_lineage ON flows_runs (COALESCE(lineage_id, run_id), created_at_ms, run_id);

-- index flows_runs_by_waiting_reason
CREATE INDEX flows_runs_by_waiting_reason ON flows_runs (waiting_reason, created_at_ms, run_id) WHERE waiting_reason IS NOT NULL;

-- index flows_runs_by_waiting_kind
CREATE INDEX flows_runs_by_waiting_kind ON flows_runs ((CASE WHEN waiting_reason IN ('timer', 'approval', 'quota', 'human') THEN waiting_reason WHEN waiting_reason IN ('event', 'signal') THEN 'signal' WHEN waiting_reason IS NOT NULL THEN 'other' END), created_at_ms, run_id) WHERE waiting_reason IS NOT NULL;

-- index flows_runs_cancel_pending
CREATE INDEX flows_runs_cancel_pending ON flows_runs (created_at_ms, run_id) WHERE cancel_requested_at_ms IS NOT NULL AND finished_at_ms IS NULL;
