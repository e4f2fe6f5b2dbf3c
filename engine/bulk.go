package engine

import (
	"context"
	"strconv"
	"strings"
	"sync"

	"github.com/flowsnap/flowsnap/store"
)

// The statements Seed writes with: each is the head of a multi-row INSERT
// that bulkInsert completes with as many "($n, …)" tuples as a chunk holds.
// One statement per chunk rather than per row matters most on SQLite, where
// every statement is compiled afresh; on PostgreSQL pgx prepares each chunk
// shape once per connection. The store's row triggers still fire for every
// row, so revisions and change rows come out exactly as row by row.
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

// maxParams is the most placeholders one statement may bind: SQLite's
// default limit is 32766, PostgreSQL's 65535.
func maxParams(d store.Dialect) int {
	if d == store.Postgres {
		return 65535
	}
	return 32766
}

// chunkRows is how many rows one statement inserts. Past a few hundred rows
// a bigger statement saves nothing but costs compile time on SQLite.
func chunkRows(d store.Dialect, cols int) int {
	return min(500, maxParams(d)/cols)
}

// insert writes the rows of b in chunks and empties it.
func (b *bulkTable) insert(ctx context.Context, tx store.Tx, d store.Dialect) error {
	per := chunkRows(d, b.cols)
	for len(b.args) > 0 {
		n := min(per, b.rows())
		if _, err := tx.Exec(ctx, b.head+tuples(d, n, b.cols), b.args[:n*b.cols]...); err != nil {
			return err
		}
		b.args = b.args[n*b.cols:]
	}
	b.args = b.args[:0]
	return nil
}

var tupleCache sync.Map // tupleKey → string

type tupleKey struct {
	rows, cols int
	d          store.Dialect
}

// tuples returns "($1,…,$cols),(…)" for rows rows: the VALUES list of a
// multi-row INSERT (or, with one row, an IN list). Chunks mostly share a few
// shapes, so the text is built once per shape.
//
// SQLite gets anonymous "?" placeholders instead: it files "$n" as a named
// parameter and looks each one up by a linear search, at compile and again
// at bind time, which makes a statement of thousands of them quadratic.
func tuples(d store.Dialect, rows, cols int) string {
	key := tupleKey{rows, cols, d}
	if s, ok := tupleCache.Load(key); ok {
		return s.(string)
	}
	var sb strings.Builder
	sb.Grow(rows * cols * 7)
	p := 1
	for r := range rows {
		if r > 0 {
			sb.WriteByte(',')
		}
		sb.WriteByte('(')
		for c := range cols {
			if c > 0 {
				sb.WriteByte(',')
			}
			if d == store.SQLite {
				sb.WriteByte('?')
			} else {
				sb.WriteByte('$')
				sb.WriteString(strconv.Itoa(p))
			}
			p++
		}
		sb.WriteByte(')')
	}
	s := sb.String()
	tupleCache.Store(key, s)
	return s
}

// deleteRuns garbage-collects the runs of ids in chunks, each one DELETE
// whose triggers remove the runs' edges and journals and leave tombstones.
func deleteRuns(ctx context.Context, tx store.Tx, d store.Dialect, ids []any) error {
	per := min(500, maxParams(d))
	for len(ids) > 0 {
		n := min(per, len(ids))
		if _, err := tx.Exec(ctx, bulkDeleteHead+tuples(d, 1, n), ids[:n]...); err != nil {
			return err
		}
		ids = ids[n:]
	}
	return nil
}
