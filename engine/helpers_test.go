package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/flowsnap/flowsnap/fault"
	"github.com/flowsnap/flowsnap/store"
)

// testClock is a clock that ticks one second per reading, so every action
// gets a distinct, predictable time.
func testClock() func() int64 {
	var t atomic.Int64
	t.Store(1_780_000_000_000)
	return func() int64 { return t.Add(1000) }
}

// position reads the store's revision.
func position(t testing.TB, db *store.DB) int64 {
	t.Helper()
	var rev int64
	readRow(t, db, `SELECT revision FROM flows_run_source`, nil, &rev)
	return rev
}

// changeOf reads a run's change row; ok is false when there is none.
func changeOf(t testing.TB, db *store.DB, runID string) (rev int64, deleted bool, ok bool) {
	t.Helper()
	var del int64
	ok = readRow(t, db, `SELECT revision, deleted FROM flows_run_changes WHERE run_id = $1`, []any{runID}, &rev, &del)
	return rev, del == 1, ok
}

// readRow reads one row in a read transaction of its own; it reports false
// when there is none.
func readRow(t testing.TB, db *store.DB, query string, args []any, dest ...any) bool {
	t.Helper()
	ctx := context.Background()
	tx, err := db.BeginRead(ctx)
	if err != nil {
		t.Fatalf("beginning a read: %v", err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	err = tx.QueryRow(ctx, query, args...).Scan(dest...)
	if errors.Is(err, store.ErrNoRows) {
		return false
	}
	if err != nil {
		t.Fatalf("%s: %v", strings.TrimSpace(query), err)
	}
	return true
}

// count returns the single integer a query yields.
func count(t testing.TB, db *store.DB, query string, args ...any) int64 {
	t.Helper()
	var n int64
	if !readRow(t, db, query, args, &n) {
		t.Fatalf("%s: no row", strings.TrimSpace(query))
	}
	return n
}

// column returns the first column of every row of a query, NULL as "<null>".
func column(t testing.TB, db *store.DB, query string, args ...any) []string {
	t.Helper()
	ctx := context.Background()
	tx, err := db.BeginRead(ctx)
	if err != nil {
		t.Fatalf("beginning a read: %v", err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	rows, err := tx.Query(ctx, query, args...)
	if err != nil {
		t.Fatalf("%s: %v", strings.TrimSpace(query), err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s *string
		if err := rows.Scan(&s); err != nil {
			t.Fatalf("%s: %v", strings.TrimSpace(query), err)
		}
		if s == nil {
			out = append(out, "<null>")
		} else {
			out = append(out, *s)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("%s: %v", strings.TrimSpace(query), err)
	}
	return out
}

// tableColumns lists every column of the engine's tables, with the order
// that makes a dump of each table canonical.
var tableColumns = []struct {
	table, order string
	cols         []string
}{
	{"flows_run_source", "singleton", []string{"singleton", "revision"}}, // source is random per store
	{"flows_runs", "run_id", []string{"run_id", "status", "created_at_ms", "started_at_ms", "finished_at_ms",
		"owner_host_id", "owner_pid", "owner_nonce", "heartbeat_at_ms", "claim_host_id", "claim_pid", "claim_nonce",
		"claimed_at_ms", "state_json", "parent_run_id", "execution_parent_id", "lineage_id", "round_ordinal",
		"cancel_requested_at_ms", "cancel_acknowledgement_json", "waiting_reason", "waiting_wake_at_ms",
		"waiting_token", "waiting_request"}},
	{"flows_run_changes", "run_id", []string{"run_id", "revision", "deleted"}},
	{"flows_run_parents", "parent_id, child_id", []string{"parent_id", "child_id", "seq"}},
	{"flows_steps", "run_id, step_id", []string{"run_id", "step_id", "type", "created_at_ms", "state", "max_attempts",
		"target_wake_at_ms", "event_name", "timeout_at_ms", "resolved_at_ms", "parent_step_id"}},
	{"flows_step_attempts", "run_id, attempt_id", []string{"attempt_id", "run_id", "step_id", "started_at_ms", "state",
		"ended_at_ms", "result_type", "result_json", "error_message", "error_name", "next_attempt_at_ms"}},
	{"flows_inbound_events", "run_id, event_id", []string{"event_id", "run_id", "event_name", "payload", "created_at_ms",
		"claimed_by", "claimed_at_ms"}},
	{"flows_run_events", "run_id, seq", []string{"run_id", "seq", "recorded_at_ms", "type", "cancellation_reason"}},
}

// digest hashes every row of the engine's tables but the store's random
// source id: two stores with the same digest hold the same history.
func digest(t testing.TB, db *store.DB) string {
	t.Helper()
	return digestOf(t, db, true)
}

// digestOf is digest, leaving out the revisions unless withRevisions.
func digestOf(t testing.TB, db *store.DB, withRevisions bool) string {
	t.Helper()
	h := sha256.New()
	for _, tc := range tableColumns {
		var parts []string
		for _, c := range tc.cols {
			if c == "revision" && !withRevisions {
				continue
			}
			parts = append(parts, "COALESCE(CAST("+c+" AS TEXT), '<null>')")
		}
		// One text column per row keeps the scan the same in both dialects.
		q := "SELECT " + strings.Join(parts, " || '\x1f' || ") + " FROM " + tc.table + " ORDER BY " + tc.order
		h.Write([]byte(tc.table + "\n"))
		for _, row := range column(t, db, q) {
			h.Write([]byte(row + "\n"))
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// wantCode fails unless err is a fault with code.
func wantCode(t testing.TB, err error, code fault.Code) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want %s", code)
	}
	if got := fault.CodeOf(err); got != code {
		t.Fatalf("got %s (%v), want %s", got, err, code)
	}
}
