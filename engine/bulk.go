package engine

import (
	"context"

	"github.com/flowsnap/flowsnap/store"
)

// The statements Seed writes with: each is the head of a multi-row INSERT
// that store.Dialect.InsertRows completes with as many tuples as a chunk
// holds. The store's row triggers still fire for every row, so revisions and
// change rows come out exactly as row by row.
const (
	bulkRunsHead = `INSERT INTO flows_runs (run_id, status, created_at_ms, started_at_ms, finished_at_ms,
  owner_host_id, owner_pid, owner_nonce, heartbeat_at_ms,
  claim_host_id, claim_pid, claim_nonce, claimed_at_ms,
  state_json, parent_run_id, execution_parent_id, lineage_id, round_ordinal,
  cancel_requested_at_ms, cancel_acknowledgement_json,
  waiting_reason, waiting_wake_at_ms, waiting_token, waiting_request) VALUES `
	bulkEdgesHead = `INSERT INTO flows_run_parents (parent_id, child_id, seq) VALUES `
	bulkStepsHead = `INSERT INTO flows_steps (run_id, step_id, type, created_at_ms, state, max_attempts,
  target_wake_at_ms, event_name, timeout_at_ms, resolved_at_ms, parent_step_id) VALUES `
	bulkAttemptsHead = `INSERT INTO flows_step_attempts (attempt_id, run_id, step_id, started_at_ms, state,
  ended_at_ms, result_type, result_json, error_message, error_name, next_attempt_at_ms) VALUES `
	bulkInboundHead = `INSERT INTO flows_inbound_events (event_id, run_id, event_name, payload,
  created_at_ms, claimed_by, claimed_at_ms) VALUES `
	bulkRunEventsHead = `INSERT INTO flows_run_events (run_id, seq, recorded_at_ms, type, cancellation_reason) VALUES `
	bulkDeleteHead    = `DELETE FROM flows_runs WHERE run_id IN `
)

// bulkTable is one table's rows waiting to be inserted, flattened: every
// cols consecutive args are one row.
type bulkTable struct {
	head string
	cols int
	args []any
}

func (b *bulkTable) rows() int { return len(b.args) / b.cols }

// insert writes the rows of b in chunks and empties it.
func (b *bulkTable) insert(ctx context.Context, tx store.Tx, d store.Dialect) error {
	if err := d.InsertRows(ctx, tx, b.head, b.cols, b.args); err != nil {
		return err
	}
	b.args = b.args[:0]
	return nil
}

// deleteRuns garbage-collects the runs of ids in chunks, each one DELETE
// whose triggers remove the runs' edges and journals and leave tombstones.
func deleteRuns(ctx context.Context, tx store.Tx, d store.Dialect, ids []any) error {
	return d.ExecIn(ctx, tx, bulkDeleteHead, ids)
}
