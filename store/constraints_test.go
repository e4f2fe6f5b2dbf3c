package store_test

import (
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/storetest"
)

// journalFixture is committed once per store: two pending runs, r1 with a
// journal of every kind.
var journalFixture = []string{
	insertRun("r1"),
	insertRun("r2"),
	`INSERT INTO flows_steps (run_id, step_id, type, created_at_ms) VALUES ('r1', 'run1', 'run', 1000)`,
	`INSERT INTO flows_steps (run_id, step_id, type, created_at_ms) VALUES ('r1', 'run2', 'run', 1000)`,
	`INSERT INTO flows_steps (run_id, step_id, type, created_at_ms, state, target_wake_at_ms) VALUES ('r1', 'sleep1', 'sleep', 1000, 'waiting', 2000)`,
	`INSERT INTO flows_steps (run_id, step_id, type, created_at_ms, state, event_name) VALUES ('r1', 'wait1', 'wait', 1000, 'waiting', 'approved')`,
	`INSERT INTO flows_steps (run_id, step_id, type, created_at_ms, state, event_name) VALUES ('r1', 'wait2', 'wait', 1000, 'waiting', 'approved')`,
	`INSERT INTO flows_step_attempts (attempt_id, run_id, step_id, started_at_ms, state) VALUES ('a1', 'r1', 'run1', 1000, 'started')`,
	`INSERT INTO flows_step_attempts (attempt_id, run_id, step_id, started_at_ms, state, ended_at_ms, result_type, result_json) VALUES ('a2', 'r1', 'run2', 1000, 'succeeded', 1100, 'json', '{"ok":true}')`,
	`INSERT INTO flows_inbound_events (event_id, run_id, event_name, payload, created_at_ms, claimed_by, claimed_at_ms) VALUES ('e1', 'r1', 'approved', '{}', 1000, 'wait1', 1100)`,
	`INSERT INTO flows_inbound_events (event_id, run_id, event_name, created_at_ms) VALUES ('e2', 'r1', 'approved', 1000)`,
	`INSERT INTO flows_run_events (run_id, seq, recorded_at_ms, type) VALUES ('r1', 0, 1000, 'created')`,
}

// run is an INSERT of a run 'x' that is pending and minimal but for the
// given columns, whose values are SQL literals.
func run(cols map[string]string) string {
	row := map[string]string{
		"run_id": "'x'", "status": "'pending'", "created_at_ms": "1000", "state_json": `'{"flowName":"f"}'`,
	}
	for k, v := range cols {
		row[k] = v
	}
	names := make([]string, 0, len(row))
	for k := range row {
		names = append(names, k)
	}
	sort.Strings(names)
	values := make([]string, len(names))
	for i, k := range names {
		values[i] = row[k]
	}
	return `INSERT INTO flows_runs (` + strings.Join(names, ", ") + `) VALUES (` + strings.Join(values, ", ") + `)`
}

const (
	owner      = "'h', 7, 'n', 1000"
	ownerCols  = "owner_host_id, owner_pid, owner_nonce, heartbeat_at_ms"
	invalidPG  = "|invalid input syntax for type json"
	uniqueness = "(?i)unique constraint failed|duplicate key"
)

func withOwner(status string) string {
	return `INSERT INTO flows_runs (run_id, status, created_at_ms, state_json, ` + ownerCols + `) VALUES ('x', '` + status + `', 1000, '{"flowName":"f"}', ` + owner + `)`
}

func TestTheStoreRejects(t *testing.T) {
	tests := []struct {
		name  string
		setup []string // must succeed, in the same transaction
		stmt  string   // must fail
		args  []any
		want  string // a regexp the error matches in both dialects
	}{
		// Runs.
		{name: "a run with an unknown status", stmt: run(map[string]string{"status": "'paused'"}), want: "flows_runs_status"},
		{name: "a running run without an owner", stmt: run(map[string]string{"status": "'running'"}), want: "flows_runs_owner"},
		{name: "an owner on a run that is not running", stmt: withOwner("pending"), want: "flows_runs_owner"},
		{name: "a running run with only part of its owner", stmt: run(map[string]string{"status": "'running'", "owner_host_id": "'h'", "owner_pid": "7", "owner_nonce": "'n'"}), want: "flows_runs_owner"},
		{name: "a claim without its time", stmt: run(map[string]string{"claim_host_id": "'h'", "claim_pid": "7", "claim_nonce": "'n'"}), want: "flows_runs_claim"},
		{name: "a claim time without a claimer", stmt: run(map[string]string{"claimed_at_ms": "1000"}), want: "flows_runs_claim"},
		{name: "state that is not a JSON object", stmt: run(map[string]string{"state_json": `'["flowName"]'`}), want: "flows_runs_state_json"},
		{name: "state without a flowName", stmt: run(map[string]string{"state_json": `'{"input":1}'`}), want: "flows_runs_state_json"},
		{name: "state with an empty flowName", stmt: run(map[string]string{"state_json": `'{"flowName":""}'`}), want: "flows_runs_state_json"},
		{name: "state whose flowName is not a string", stmt: run(map[string]string{"state_json": `'{"flowName":7}'`}), want: "flows_runs_state_json"},
		{name: "state that is not JSON", stmt: run(map[string]string{"state_json": `'{flowName: "f"}'`}), want: "flows_runs_state_json" + invalidPG},
		{name: "a lineage without a round", stmt: run(map[string]string{"lineage_id": "'r1'"}), want: "flows_runs_lineage"},
		{name: "a round without a lineage", stmt: run(map[string]string{"round_ordinal": "1"}), want: "flows_runs_lineage"},
		{name: "round 0 spelled out instead of NULLs", stmt: run(map[string]string{"lineage_id": "'r1'", "round_ordinal": "0"}), want: "flows_runs_ranges"},
		{name: "a run that is a later round of its own lineage", stmt: run(map[string]string{"lineage_id": "'x'", "round_ordinal": "1"}), want: "flows_runs_lineage"},
		{
			name:  "two runs for the same round of a lineage",
			setup: []string{run(map[string]string{"lineage_id": "'r1'", "round_ordinal": "1"})},
			stmt:  run(map[string]string{"run_id": "'y'", "lineage_id": "'r1'", "round_ordinal": "1"}),
			want:  uniqueness,
		},
		{name: "a waiting token without a reason", stmt: run(map[string]string{"waiting_token": "'secret'"}), want: "flows_runs_waiting"},
		{name: "a waiting wake time without a reason", stmt: run(map[string]string{"waiting_wake_at_ms": "2000"}), want: "flows_runs_waiting"},
		{name: "a waiting request without a reason", stmt: run(map[string]string{"waiting_request": "'{}'"}), want: "flows_runs_waiting"},
		{name: "a waiting request that is not JSON", stmt: run(map[string]string{"waiting_reason": "'approval'", "waiting_request": "'{'"}), want: "flows_runs_waiting_request" + invalidPG},
		{
			name: "a cancel acknowledgement without a request",
			stmt: run(map[string]string{"cancel_acknowledgement_json": `'{"observedAtMs":1,"owner":{"hostId":"h","pid":7,"nonce":"n"}}'`}),
			want: "flows_runs_cancel_acknowledgement",
		},
		{name: "a cancel acknowledgement that is not an object", stmt: run(map[string]string{"cancel_requested_at_ms": "1000", "cancel_acknowledgement_json": "'[]'"}), want: "flows_runs_cancel_acknowledgement"},
		{name: "updating a run id", stmt: `UPDATE flows_runs SET run_id = 'r9' WHERE run_id = 'r2'`, want: "flows_runs_run_id_immutable"},
		{name: "an empty run id", stmt: run(map[string]string{"run_id": "''"}), want: "flows_runs_identifiers"},
		{name: "a run id of 1025 characters", stmt: run(map[string]string{"run_id": "$1"}), args: []any{strings.Repeat("x", 1025)}, want: "flows_runs_identifiers"},
		{name: "a run id with a NUL", stmt: run(map[string]string{"run_id": "$1"}), args: []any{"a\x00b"}, want: "flows_runs_identifiers|0x00"},
		{name: "an empty owner host", stmt: `INSERT INTO flows_runs (run_id, status, created_at_ms, state_json, ` + ownerCols + `) VALUES ('x', 'running', 1000, '{"flowName":"f"}', '', 7, 'n', 1000)`, want: "flows_runs_identifiers"},
		{name: "a negative creation time", stmt: run(map[string]string{"created_at_ms": "-1"}), want: "flows_runs_ranges"},
		{name: "a creation time past 2^53-1", stmt: run(map[string]string{"created_at_ms": "9007199254740992"}), want: "flows_runs_ranges"},
		{name: "a finish time past 2^53-1", stmt: run(map[string]string{"finished_at_ms": "9007199254740992"}), want: "flows_runs_ranges"},
		{name: "a negative pid", stmt: run(map[string]string{"claim_host_id": "'h'", "claim_pid": "-7", "claim_nonce": "'n'", "claimed_at_ms": "1000"}), want: "flows_runs_ranges"},
		{name: "a parent_run_id the execution parent differs from", stmt: run(map[string]string{"parent_run_id": "'r1'"}), want: "flows_runs_execution_parent"},
		{name: "an execution parent that no spawn edge names", stmt: run(map[string]string{"execution_parent_id": "'r1'"}), want: "flows_runs_execution_parent"},
		{
			name:  "an execution parent that is not the earliest edge's parent",
			setup: []string{`INSERT INTO flows_run_parents (parent_id, child_id, seq) VALUES ('r1', 'r2', 0)`},
			stmt:  `UPDATE flows_runs SET execution_parent_id = NULL WHERE run_id = 'r2'`,
			want:  "flows_runs_execution_parent",
		},
		{name: "a run that is its own parent", stmt: run(map[string]string{"parent_run_id": "'x'", "execution_parent_id": "'x'"}), want: "flows_runs_not_own_parent"},

		// Spawn edges.
		{name: "a spawn edge from a run to itself", stmt: `INSERT INTO flows_run_parents (parent_id, child_id, seq) VALUES ('r1', 'r1', 0)`, want: "flows_run_parents_not_self"},
		{name: "a spawn edge to a run that does not exist", stmt: `INSERT INTO flows_run_parents (parent_id, child_id, seq) VALUES ('r1', 'ghost', 0)`, want: "(?i)foreign key"},
		{name: "a spawn edge with a negative seq", stmt: `INSERT INTO flows_run_parents (parent_id, child_id, seq) VALUES ('r1', 'r2', -1)`, want: "flows_run_parents_seq"},

		// Steps.
		{name: "a step of an unknown type", stmt: `INSERT INTO flows_steps (run_id, step_id, type, created_at_ms) VALUES ('r1', 's', 'loop', 1000)`, want: "flows_steps_(type|shape)"},
		{name: "a sleep step without a wake time", stmt: `INSERT INTO flows_steps (run_id, step_id, type, created_at_ms, state) VALUES ('r1', 's', 'sleep', 1000, 'waiting')`, want: "flows_steps_shape"},
		{name: "a sleep step without a state", stmt: `INSERT INTO flows_steps (run_id, step_id, type, created_at_ms, target_wake_at_ms) VALUES ('r1', 's', 'sleep', 1000, 2000)`, want: "flows_steps_shape"},
		{name: "an elapsed sleep without resolved_at_ms", stmt: `INSERT INTO flows_steps (run_id, step_id, type, created_at_ms, state, target_wake_at_ms) VALUES ('r1', 's', 'sleep', 1000, 'elapsed', 2000)`, want: "flows_steps_shape"},
		{name: "a sleep step in a wait state", stmt: `INSERT INTO flows_steps (run_id, step_id, type, created_at_ms, state, target_wake_at_ms, resolved_at_ms) VALUES ('r1', 's', 'sleep', 1000, 'satisfied', 2000, 2000)`, want: "flows_steps_shape"},
		{name: "a wait step without an event name", stmt: `INSERT INTO flows_steps (run_id, step_id, type, created_at_ms, state) VALUES ('r1', 's', 'wait', 1000, 'waiting')`, want: "flows_steps_shape"},
		{name: "a timed out wait without timeout_at_ms", stmt: `INSERT INTO flows_steps (run_id, step_id, type, created_at_ms, state, event_name, resolved_at_ms) VALUES ('r1', 's', 'wait', 1000, 'timed_out', 'approved', 2000)`, want: "flows_steps_shape"},
		{name: "a waiting wait that is already resolved", stmt: `INSERT INTO flows_steps (run_id, step_id, type, created_at_ms, state, event_name, resolved_at_ms) VALUES ('r1', 's', 'wait', 1000, 'waiting', 'approved', 2000)`, want: "flows_steps_shape"},
		{name: "a run step with a state", stmt: `INSERT INTO flows_steps (run_id, step_id, type, created_at_ms, state) VALUES ('r1', 's', 'run', 1000, 'waiting')`, want: "flows_steps_shape"},
		{name: "a run step with an event name", stmt: `INSERT INTO flows_steps (run_id, step_id, type, created_at_ms, event_name) VALUES ('r1', 's', 'run', 1000, 'approved')`, want: "flows_steps_shape"},
		{name: "a run step allowed zero attempts", stmt: `INSERT INTO flows_steps (run_id, step_id, type, created_at_ms, max_attempts) VALUES ('r1', 's', 'run', 1000, 0)`, want: "flows_steps_ranges"},
		{name: "a parent step that is a sleep step", stmt: `INSERT INTO flows_steps (run_id, step_id, type, created_at_ms, parent_step_id) VALUES ('r1', 's', 'run', 1000, 'sleep1')`, want: "flows_steps_parent_step"},
		{name: "a parent step that does not exist", stmt: `INSERT INTO flows_steps (run_id, step_id, type, created_at_ms, parent_step_id) VALUES ('r1', 's', 'run', 1000, 'ghost')`, want: "flows_steps_parent_step"},
		{name: "a parent step of another run", stmt: `INSERT INTO flows_steps (run_id, step_id, type, created_at_ms, parent_step_id) VALUES ('r2', 's', 'run', 1000, 'run1')`, want: "flows_steps_parent_step"},
		{name: "a step that is its own parent", stmt: `INSERT INTO flows_steps (run_id, step_id, type, created_at_ms, parent_step_id) VALUES ('r1', 's', 'run', 1000, 's')`, want: "flows_steps_(parent_step|not_own_parent)"},
		{name: "changing a step's type", stmt: `UPDATE flows_steps SET type = 'sleep', state = 'waiting', target_wake_at_ms = 2000 WHERE run_id = 'r1' AND step_id = 'run1'`, want: "flows_steps_identity"},
		{name: "changing a step's creation time", stmt: `UPDATE flows_steps SET created_at_ms = 999 WHERE run_id = 'r1' AND step_id = 'run1'`, want: "flows_steps_identity"},
		{name: "changing a step's parent", stmt: `UPDATE flows_steps SET parent_step_id = 'run2' WHERE run_id = 'r1' AND step_id = 'run1'`, want: "flows_steps_identity"},
		{name: "a step of a run that does not exist", stmt: `INSERT INTO flows_steps (run_id, step_id, type, created_at_ms) VALUES ('ghost', 's', 'run', 1000)`, want: "(?i)foreign key"},

		// Attempts.
		{name: "an attempt on a sleep step", stmt: `INSERT INTO flows_step_attempts (attempt_id, run_id, step_id, started_at_ms, state) VALUES ('a9', 'r1', 'sleep1', 1000, 'started')`, want: "flows_step_attempts_run_step"},
		{name: "an attempt on a step that does not exist", stmt: `INSERT INTO flows_step_attempts (attempt_id, run_id, step_id, started_at_ms, state) VALUES ('a9', 'r1', 'ghost', 1000, 'started')`, want: "flows_step_attempts_run_step"},
		{name: "a second started attempt of a step", stmt: `INSERT INTO flows_step_attempts (attempt_id, run_id, step_id, started_at_ms, state) VALUES ('a9', 'r1', 'run1', 1000, 'started')`, want: uniqueness + "|flows_step_attempts_one_started"},
		{name: "an attempt going from succeeded to failed", stmt: `UPDATE flows_step_attempts SET state = 'failed', result_type = NULL, result_json = NULL, error_message = 'boom' WHERE attempt_id = 'a2'`, want: "flows_step_attempts_transition"},
		{name: "a succeeded attempt rewriting its result", stmt: `UPDATE flows_step_attempts SET result_json = '2' WHERE attempt_id = 'a2'`, want: "flows_step_attempts_transition"},
		{name: "a succeeded attempt going back to started", stmt: `UPDATE flows_step_attempts SET state = 'started', ended_at_ms = NULL, result_type = NULL, result_json = NULL WHERE attempt_id = 'a2'`, want: "flows_step_attempts_transition"},
		{name: "a started attempt moving to another step", stmt: `UPDATE flows_step_attempts SET step_id = 'run2' WHERE attempt_id = 'a1'`, want: "flows_step_attempts_transition"},
		{name: "a succeeded attempt without a result type", stmt: `UPDATE flows_step_attempts SET state = 'succeeded', ended_at_ms = 1100 WHERE attempt_id = 'a1'`, want: "flows_step_attempts_shape"},
		{name: "result type none with a result", stmt: `UPDATE flows_step_attempts SET state = 'succeeded', ended_at_ms = 1100, result_type = 'none', result_json = '1' WHERE attempt_id = 'a1'`, want: "flows_step_attempts_shape"},
		{name: "result type json without a result", stmt: `UPDATE flows_step_attempts SET state = 'succeeded', ended_at_ms = 1100, result_type = 'json' WHERE attempt_id = 'a1'`, want: "flows_step_attempts_shape"},
		{name: "an unknown result type", stmt: `UPDATE flows_step_attempts SET state = 'succeeded', ended_at_ms = 1100, result_type = 'text', result_json = '1' WHERE attempt_id = 'a1'`, want: "flows_step_attempts_shape"},
		{name: "a result that is not JSON", stmt: `UPDATE flows_step_attempts SET state = 'succeeded', ended_at_ms = 1100, result_type = 'json', result_json = 'undefined' WHERE attempt_id = 'a1'`, want: "flows_step_attempts_result_json" + invalidPG},
		{name: "a succeeded attempt without an end time", stmt: `UPDATE flows_step_attempts SET state = 'succeeded', result_type = 'none' WHERE attempt_id = 'a1'`, want: "flows_step_attempts_shape"},
		{name: "a failed attempt without an error message", stmt: `UPDATE flows_step_attempts SET state = 'failed', ended_at_ms = 1100, error_name = 'TypeError' WHERE attempt_id = 'a1'`, want: "flows_step_attempts_shape"},
		{name: "a started attempt with an error", stmt: `UPDATE flows_step_attempts SET error_message = 'boom' WHERE attempt_id = 'a1'`, want: "flows_step_attempts_shape"},
		{name: "an attempt in an unknown state", stmt: `UPDATE flows_step_attempts SET state = 'retrying' WHERE attempt_id = 'a1'`, want: "flows_step_attempts_(state|shape)"},
		{name: "an attempt with an empty id", stmt: `INSERT INTO flows_step_attempts (attempt_id, run_id, step_id, started_at_ms, state, ended_at_ms, result_type) VALUES ('', 'r1', 'run2', 1000, 'succeeded', 1100, 'none')`, want: "flows_step_attempts_identifiers"},

		// Inbound events.
		{name: "a claim without a time", stmt: `INSERT INTO flows_inbound_events (event_id, run_id, event_name, created_at_ms, claimed_by) VALUES ('e9', 'r1', 'approved', 1000, 'wait2')`, want: "flows_inbound_events_claim"},
		{name: "a claim time without a claimer", stmt: `INSERT INTO flows_inbound_events (event_id, run_id, event_name, created_at_ms, claimed_at_ms) VALUES ('e9', 'r1', 'approved', 1000, 1100)`, want: "flows_inbound_events_claim"},
		{name: "two events claimed by one step", stmt: `UPDATE flows_inbound_events SET claimed_by = 'wait1', claimed_at_ms = 1200 WHERE event_id = 'e2'`, want: uniqueness + "|flows_inbound_events_one_claim"},
		{name: "a payload that is not JSON", stmt: `INSERT INTO flows_inbound_events (event_id, run_id, event_name, payload, created_at_ms) VALUES ('e9', 'r1', 'approved', 'nope', 1000)`, want: "flows_inbound_events_payload" + invalidPG},
		{name: "changing an event's payload", stmt: `UPDATE flows_inbound_events SET payload = 'null' WHERE event_id = 'e2'`, want: "flows_inbound_events_identity"},
		{name: "an event for a run that does not exist", stmt: `INSERT INTO flows_inbound_events (event_id, run_id, event_name, created_at_ms) VALUES ('e9', 'ghost', 'approved', 1000)`, want: "(?i)foreign key"},

		// Run events.
		{name: "updating a run event", stmt: `UPDATE flows_run_events SET recorded_at_ms = 2000 WHERE run_id = 'r1'`, want: "flows_run_events_no_update"},
		{name: "deleting a run event while its run exists", stmt: `DELETE FROM flows_run_events WHERE run_id = 'r1'`, want: "flows_run_events_no_delete"},
		{name: "a cancellation reason on an event that is not a cancellation", stmt: `INSERT INTO flows_run_events (run_id, seq, recorded_at_ms, type, cancellation_reason) VALUES ('r1', 1, 1000, 'failed', 'why')`, want: "flows_run_events_cancellation_reason"},
		{name: "a run event of an unknown type", stmt: `INSERT INTO flows_run_events (run_id, seq, recorded_at_ms, type) VALUES ('r1', 1, 1000, 'retried')`, want: "flows_run_events_type"},
		{name: "a run event recorded past 2^53-1", stmt: `INSERT INTO flows_run_events (run_id, seq, recorded_at_ms, type) VALUES ('r1', 1, 9007199254740992, 'started')`, want: "flows_run_events_ranges"},

		// Identity, position and changes.
		{name: "changing the source", stmt: `UPDATE flows_run_source SET source = '00000000000000000000000000000000'`, want: "flows_run_source_guard"},
		{name: "moving the revision back", stmt: `UPDATE flows_run_source SET revision = revision - 1`, want: "flows_run_source_guard"},
		{name: "deleting the source row", stmt: `DELETE FROM flows_run_source`, want: "flows_run_source_keep"},
		{name: "a second source row", stmt: `INSERT INTO flows_run_source (singleton, source, revision) VALUES (2, '00000000000000000000000000000000', 0)`, want: "flows_run_source_singleton"},
		{name: "a change that is neither live nor deleted", stmt: `INSERT INTO flows_run_changes (run_id, revision, deleted) VALUES ('zz', 999999, 2)`, want: "flows_run_changes_deleted"},
		{name: "a change at revision 0", stmt: `INSERT INTO flows_run_changes (run_id, revision, deleted) VALUES ('zz', 0, 0)`, want: "flows_run_changes_revision"},
	}
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		db := storetest.Open(t, d)
		mustExec(t, db, journalFixture...)
		for _, tt := range tests {
			t.Run(tt.name+" is rejected", func(t *testing.T) {
				ctx := testContext(t)
				tx, err := db.BeginWrite(ctx)
				if err != nil {
					t.Fatal(err)
				}
				defer func() { _ = tx.Rollback(ctx) }()
				for _, s := range tt.setup {
					if _, err := tx.Exec(ctx, s); err != nil {
						t.Fatalf("setup %s: %v", s, err)
					}
				}
				_, err = tx.Exec(ctx, tt.stmt, tt.args...)
				if err == nil {
					t.Fatalf("accepted: %s", tt.stmt)
				}
				if !regexp.MustCompile(tt.want).MatchString(err.Error()) {
					t.Errorf("rejected for another reason than %q: %v", tt.want, err)
				}
			})
		}
	})
}

func TestTheStoreAccepts(t *testing.T) {
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		ctx := testContext(t)
		db := storetest.Open(t, d)
		mustExec(t, db, journalFixture...)
		state := `{"flowName":"checkout",  "input": {"b":1,"a":[1.50, "\u00e9"]}, "output":null}`
		mustExec(t, db,
			// A running round 1 of r1's lineage, claimed, waiting, cancelled
			// and acknowledged: every optional column set.
			`INSERT INTO flows_runs (run_id, status, created_at_ms, started_at_ms, finished_at_ms,
				owner_host_id, owner_pid, owner_nonce, heartbeat_at_ms,
				claim_host_id, claim_pid, claim_nonce, claimed_at_ms, state_json,
				parent_run_id, execution_parent_id, lineage_id, round_ordinal,
				cancel_requested_at_ms, cancel_acknowledgement_json,
				waiting_reason, waiting_wake_at_ms, waiting_token, waiting_request)
			VALUES ('full', 'running', 0, 1000, NULL, 'h', 7, 'n', 9007199254740991,
				'h', 7, 'n', 1000, '`+state+`',
				'r1', 'r1', 'r1', 1,
				1500, '{"observedAtMs":1600,"owner":{"hostId":"h","pid":7,"nonce":"n"}}',
				'approval', 2000, 'secret', '{"form":"refund"}')`,
			`INSERT INTO flows_steps (run_id, step_id, type, created_at_ms, max_attempts, parent_step_id) VALUES ('r1', 'child', 'run', 1000, 3, 'run1')`,
			`INSERT INTO flows_steps (run_id, step_id, type, created_at_ms, state, target_wake_at_ms, resolved_at_ms, parent_step_id) VALUES ('r1', 'slept', 'sleep', 1000, 'elapsed', 2000, 2001, 'run1')`,
			`INSERT INTO flows_steps (run_id, step_id, type, created_at_ms, state, event_name, timeout_at_ms, resolved_at_ms) VALUES ('r1', 'late', 'wait', 1000, 'timed_out', 'approved', 3000, 3000)`,
			`INSERT INTO flows_steps (run_id, step_id, type, created_at_ms, state, event_name, timeout_at_ms) VALUES ('r1', 'waiting', 'wait', 1000, 'waiting', 'approved', 3000)`,
			`UPDATE flows_steps SET state = 'satisfied', resolved_at_ms = 1200 WHERE run_id = 'r1' AND step_id = 'wait1'`,
			`UPDATE flows_step_attempts SET state = 'failed', ended_at_ms = 1100, error_message = 'boom', error_name = 'TypeError', next_attempt_at_ms = 5000 WHERE attempt_id = 'a1'`,
			`INSERT INTO flows_step_attempts (attempt_id, run_id, step_id, started_at_ms, state) VALUES ('a3', 'r1', 'run1', 5000, 'started')`,
			`UPDATE flows_step_attempts SET state = 'succeeded', ended_at_ms = 5100, result_type = 'json', result_json = 'null' WHERE attempt_id = 'a3'`,
			`INSERT INTO flows_step_attempts (attempt_id, run_id, step_id, started_at_ms, state, ended_at_ms, result_type) VALUES ('a4', 'r1', 'child', 1000, 'succeeded', 1100, 'none')`,
			`INSERT INTO flows_inbound_events (event_id, run_id, event_name, created_at_ms) VALUES ('no-payload', 'r1', 'ping', 1000)`,
			`INSERT INTO flows_inbound_events (event_id, run_id, event_name, payload, created_at_ms) VALUES ('null-payload', 'r1', 'ping', 'null', 1000)`,
			`UPDATE flows_inbound_events SET claimed_by = 'wait2', claimed_at_ms = 1300 WHERE event_id = 'e2'`,
			`INSERT INTO flows_run_events (run_id, seq, recorded_at_ms, type, cancellation_reason) VALUES ('r1', 1, 1000, 'cancelled', 'operator asked')`,
			`INSERT INTO flows_run_events (run_id, seq, recorded_at_ms, type) VALUES ('r1', 2, 1000, 'cancelled')`,
		)

		text := func(query string) *string {
			t.Helper()
			tx, err := db.BeginRead(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = tx.Rollback(ctx) }()
			var s *string
			if err := tx.QueryRow(ctx, query).Scan(&s); err != nil {
				t.Fatalf("%s: %v", query, err)
			}
			return s
		}
		if got := text(`SELECT state_json FROM flows_runs WHERE run_id = 'full'`); got == nil || *got != state {
			t.Errorf("state_json came back as %v, want it byte for byte: %s", got, state)
		}
		if got := text(`SELECT payload FROM flows_inbound_events WHERE event_id = 'no-payload'`); got != nil {
			t.Errorf("no payload came back as %q, want NULL", *got)
		}
		if got := text(`SELECT payload FROM flows_inbound_events WHERE event_id = 'null-payload'`); got == nil || *got != "null" {
			t.Errorf("the payload null came back as %v, want the text null", got)
		}
		if got := text(`SELECT result_json FROM flows_step_attempts WHERE attempt_id = 'a3'`); got == nil || *got != "null" {
			t.Errorf("the result null came back as %v, want the text null", got)
		}
		if got := text(`SELECT result_json FROM flows_step_attempts WHERE attempt_id = 'a4'`); got != nil {
			t.Errorf("result type none came back with result %q", *got)
		}
	})
}

func TestIdentifiersAreMeasuredInUTF16CodeUnits(t *testing.T) {
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		ctx := testContext(t)
		db := storetest.Open(t, d)
		insert := func(id string) error {
			return db.Write(ctx, func(tx store.Tx) error {
				_, err := tx.Exec(ctx, run(map[string]string{"run_id": "$1"}), id)
				return err
			})
		}
		for _, id := range []string{
			strings.Repeat("x", 1024),
			strings.Repeat("é", 1024),         // 2048 UTF-8 bytes, 1024 code units
			strings.Repeat("\U0001F600", 512), // 512 characters, 1024 code units
		} {
			if err := insert(id); err != nil {
				t.Errorf("an id of %d bytes and 1024 UTF-16 code units was rejected: %v", len(id), err)
			}
		}
		if err := insert(strings.Repeat("é", 1025)); err == nil {
			t.Errorf("an id of 1025 code units was accepted")
		}
		// SQLite has no way to count UTF-16 code units in SQL, so there the
		// guard is 1024 characters and the rest is the writer's and the
		// decoder's.
		if d == store.Postgres {
			if err := insert(strings.Repeat("\U0001F600", 513)); err == nil {
				t.Errorf("an id of 513 astral characters (1026 code units) was accepted")
			}
		}
	})
}
