package engine

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/flowsnap/flowsnap/fault"
	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/storetest"
	"github.com/flowsnap/flowsnap/store/vocab"
)

var (
	ownerA = vocab.Owner{HostID: "host-a", PID: 101, Nonce: "nonce-a"}
	ownerB = vocab.Owner{HostID: "host-b", PID: 202, Nonce: "nonce-b"}
)

// TestEveryActionAdvancesTheRevisionOfItsRun walks runs through every
// action of the writer and checks, after each, that the position advanced
// by exactly as many changes as the action made, that the run's change row
// carries the newest revision, and that the row, edges or journal show the
// action.
func TestEveryActionAdvancesTheRevisionOfItsRun(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		ctx := context.Background()
		db := storetest.Open(t, d)
		w := NewWriter(db, testClock())

		str := func(q string, args ...any) string {
			t.Helper()
			vals := column(t, db, q, args...)
			if len(vals) != 1 {
				t.Fatalf("%s: got %d rows, want 1", q, len(vals))
			}
			return vals[0]
		}
		field := func(runID, col string) string {
			t.Helper()
			return str(`SELECT CAST(`+col+` AS TEXT) FROM flows_runs WHERE run_id = $1`, runID)
		}
		hasAll := func(got string, want ...string) {
			t.Helper()
			for _, w := range want {
				if !strings.Contains(got, w) {
					t.Errorf("got %s, want it to contain %s", got, w)
				}
			}
		}
		var compact = func(s string) string { return strings.ReplaceAll(s, " ", "") }

		steps := []struct {
			name string
			// changes is how many run changes the action makes; 0 means at
			// least one, when it depends on how the triggers cascade.
			changes int64
			run     string
			act     func() error
			check   func()
		}{
			{"creating a run", 1, "r1", func() error {
				return w.CreateRun(ctx, NewRun{ID: "r1", FlowName: "orders", State: json.RawMessage(`{"input":{"n":1}}`)})
			}, func() {
				if got := field("r1", "status"); got != "pending" {
					t.Errorf("status %s, want pending", got)
				}
				hasAll(compact(field("r1", "state_json")), `"flowName":"orders"`, `"input":{"n":1}`)
			}},
			{"claiming it", 1, "r1", func() error { return w.Claim(ctx, "r1", ownerA) }, func() {
				if got := field("r1", "claim_nonce"); got != "nonce-a" {
					t.Errorf("claim nonce %s", got)
				}
			}},
			{"starting it", 1, "r1", func() error { return w.Start(ctx, "r1", ownerA) }, func() {
				if got := field("r1", "status") + " " + field("r1", "owner_host_id"); got != "running host-a" {
					t.Errorf("got %s", got)
				}
				if field("r1", "started_at_ms") != field("r1", "heartbeat_at_ms") {
					t.Errorf("a run starts with a heartbeat")
				}
			}},
			{"heartbeating", 1, "r1", func() error { return w.Heartbeat(ctx, "r1", "nonce-a") }, nil},
			{"adding a run step", 1, "r1", func() error {
				return w.AddStep(ctx, "r1", Step{ID: "s1", Type: vocab.StepRun, MaxAttempts: 3})
			}, nil},
			{"starting an attempt", 1, "r1", func() error { return w.StartAttempt(ctx, "r1", "s1", "a1") }, nil},
			{"failing the attempt", 1, "r1", func() error {
				return w.FailAttempt(ctx, "r1", "a1", AttemptError{Message: "boom", Name: "Boom", NextAttemptAt: 1_790_000_000_000})
			}, func() {
				if got := str(`SELECT state || ' ' || error_message || ' ' || CAST(next_attempt_at_ms AS TEXT) FROM flows_step_attempts WHERE attempt_id = 'a1'`); got != "failed boom 1790000000000" {
					t.Errorf("got %s", got)
				}
			}},
			{"retrying it", 1, "r1", func() error { return w.StartAttempt(ctx, "r1", "s1", "a2") }, nil},
			{"succeeding with JSON null", 1, "r1", func() error {
				return w.SucceedAttempt(ctx, "r1", "a2", json.RawMessage("null"))
			}, func() {
				if got := str(`SELECT result_type || ' ' || CAST(result_json AS TEXT) FROM flows_step_attempts WHERE attempt_id = 'a2'`); got != "json null" {
					t.Errorf("got %s", got)
				}
			}},
			{"adding a nested step", 1, "r1", func() error {
				return w.AddStep(ctx, "r1", Step{ID: "s1.1", Type: vocab.StepRun, ParentStepID: "s1"})
			}, nil},
			{"starting its attempt", 1, "r1", func() error { return w.StartAttempt(ctx, "r1", "s1.1", "a3") }, nil},
			{"succeeding with nothing", 1, "r1", func() error { return w.SucceedAttempt(ctx, "r1", "a3", nil) }, func() {
				if got := str(`SELECT result_type || ' ' || COALESCE(CAST(result_json AS TEXT), '<null>') FROM flows_step_attempts WHERE attempt_id = 'a3'`); got != "none <null>" {
					t.Errorf("got %s", got)
				}
			}},
			{"adding a sleep", 1, "r1", func() error {
				return w.AddStep(ctx, "r1", Step{ID: "s2", Type: vocab.StepSleep, WakeAt: 1_790_000_000_000})
			}, nil},
			{"suspending on a timer", 1, "r1", func() error {
				return w.Wait(ctx, "r1", Waiting{Reason: "timer", WakeAt: 1_790_000_000_000})
			}, func() {
				if got := field("r1", "status") + " " + field("r1", "waiting_reason"); got != "suspended timer" {
					t.Errorf("got %s", got)
				}
				if got := column(t, db, `SELECT owner_host_id FROM flows_runs WHERE run_id = 'r1'`); got[0] != "<null>" {
					t.Errorf("a suspended run has no owner, got %s", got[0])
				}
			}},
			{"elapsing the sleep", 1, "r1", func() error { return w.ElapseSleep(ctx, "r1", "s2") }, func() {
				if got := str(`SELECT state FROM flows_steps WHERE run_id = 'r1' AND step_id = 's2'`); got != "elapsed" {
					t.Errorf("got %s", got)
				}
			}},
			{"waking", 1, "r1", func() error { return w.Wake(ctx, "r1", ownerB) }, func() {
				if got := field("r1", "status") + " " + field("r1", "owner_nonce"); got != "running nonce-b" {
					t.Errorf("got %s", got)
				}
			}},
			{"adding a wait", 1, "r1", func() error {
				return w.AddStep(ctx, "r1", Step{ID: "s3", Type: vocab.StepWait, EventName: "paid", TimeoutAt: 1_790_000_000_000})
			}, nil},
			{"delivering an event without payload", 1, "r1", func() error {
				return w.AddInboundEvent(ctx, InboundEvent{ID: "e1", RunID: "r1", Name: "paid"})
			}, nil},
			{"delivering an event with a null payload", 1, "r1", func() error {
				return w.AddInboundEvent(ctx, InboundEvent{ID: "e2", RunID: "r1", Name: "paid", Payload: json.RawMessage("null")})
			}, func() {
				got := column(t, db, `SELECT CAST(payload AS TEXT) FROM flows_inbound_events ORDER BY event_id`)
				if strings.Join(got, ",") != "<null>,null" {
					t.Errorf("payloads %v, want no payload and JSON null apart", got)
				}
			}},
			{"satisfying the wait", 2, "r1", func() error { return w.SatisfyWait(ctx, "r1", "s3", "e2") }, func() {
				if got := str(`SELECT state FROM flows_steps WHERE run_id = 'r1' AND step_id = 's3'`); got != "satisfied" {
					t.Errorf("got %s", got)
				}
				if got := str(`SELECT claimed_by FROM flows_inbound_events WHERE event_id = 'e2'`); got != "s3" {
					t.Errorf("got %s", got)
				}
			}},
			{"adding another wait", 1, "r1", func() error {
				return w.AddStep(ctx, "r1", Step{ID: "s4", Type: vocab.StepWait, EventName: "signed", TimeoutAt: 1_790_000_000_000})
			}, nil},
			{"timing the wait out", 1, "r1", func() error { return w.TimeOutWait(ctx, "r1", "s4") }, func() {
				if got := str(`SELECT state FROM flows_steps WHERE run_id = 'r1' AND step_id = 's4'`); got != "timed_out" {
					t.Errorf("got %s", got)
				}
			}},
			{"logging a lifecycle event", 1, "r1", func() error { return w.AppendRunEvent(ctx, "r1", vocab.EventStarted, "") }, nil},
			{"logging another", 1, "r1", func() error { return w.AppendRunEvent(ctx, "r1", vocab.EventResumed, "") }, func() {
				if got := column(t, db, `SELECT type FROM flows_run_events WHERE run_id = 'r1' ORDER BY seq`); strings.Join(got, ",") != "started,resumed" {
					t.Errorf("got %v", got)
				}
			}},
			{"requesting cancellation", 1, "r1", func() error { return w.RequestCancel(ctx, "r1") }, nil},
			{"requesting it again changes nothing", -1, "r1", func() error { return w.RequestCancel(ctx, "r1") }, nil},
			{"acknowledging it", 1, "r1", func() error { return w.AcknowledgeCancel(ctx, "r1", ownerB) }, func() {
				var ack struct {
					ObservedAtMs int64 `json:"observedAtMs"`
					Owner        struct {
						HostID string `json:"hostId"`
						PID    int64  `json:"pid"`
						Nonce  string `json:"nonce"`
					} `json:"owner"`
				}
				if err := json.Unmarshal([]byte(field("r1", "cancel_acknowledgement_json")), &ack); err != nil {
					t.Fatal(err)
				}
				if ack.ObservedAtMs == 0 || ack.Owner.HostID != "host-b" || ack.Owner.PID != 202 || ack.Owner.Nonce != "nonce-b" {
					t.Errorf("got %+v", ack)
				}
			}},
			{"completing with output", 1, "r1", func() error { return w.Complete(ctx, "r1", json.RawMessage(`{"ok":true}`)) }, func() {
				if got := field("r1", "status"); got != "completed" {
					t.Errorf("got %s", got)
				}
				hasAll(compact(field("r1", "state_json")), `"output":{"ok":true}`, `"flowName":"orders"`)
				if got := column(t, db, `SELECT claim_nonce FROM flows_runs WHERE run_id = 'r1'`); got[0] != "<null>" {
					t.Errorf("finishing releases the claim, got %s", got[0])
				}
			}},
			{"spawning a child", 0, "c1", func() error {
				return w.CreateRun(ctx, NewRun{ID: "c1", FlowName: "orders", Parents: []ParentEdge{{ParentID: "r1", Seq: 0}}})
			}, func() {
				if got := field("c1", "parent_run_id") + " " + field("c1", "execution_parent_id"); got != "r1 r1" {
					t.Errorf("got %s", got)
				}
				if n := count(t, db, `SELECT COUNT(*) FROM flows_run_parents WHERE parent_id = 'r1' AND child_id = 'c1'`); n != 1 {
					t.Errorf("%d edges", n)
				}
			}},
			{"continuing as round 1", 1, "r1.1", func() error {
				return w.CreateRun(ctx, NewRun{ID: "r1.1", FlowName: "orders", Round: &Round{LineageID: "r1", Ordinal: 1, Previous: "r1"}})
			}, func() {
				if got := field("r1.1", "lineage_id") + " " + field("r1.1", "round_ordinal") + " " + field("r1.1", "parent_run_id"); got != "r1 1 r1" {
					t.Errorf("got %s", got)
				}
			}},
			{"creating a second parent", 1, "p2", func() error { return w.CreateRun(ctx, NewRun{ID: "p2", FlowName: "joins"}) }, nil},
			{"creating a third parent", 1, "p3", func() error { return w.CreateRun(ctx, NewRun{ID: "p3", FlowName: "joins"}) }, nil},
			{"spawning a join child", 0, "j", func() error {
				return w.CreateRun(ctx, NewRun{ID: "j", FlowName: "joins", Parents: []ParentEdge{{ParentID: "p3", Seq: 0}, {ParentID: "p2", Seq: 0}}})
			}, func() {
				if got := column(t, db, `SELECT parent_run_id FROM flows_runs WHERE run_id = 'j'`); got[0] != "<null>" {
					t.Errorf("a join has no parent_run_id, got %s", got[0])
				}
				if got := field("j", "execution_parent_id"); got != "p2" {
					t.Errorf("effective parent %s, want p2 (earliest by seq, then id)", got)
				}
			}},
			{"adding an earlier edge to the join", 0, "j", func() error { return w.AddChild(ctx, "c1", "j", 0) }, func() {
				if got := field("j", "execution_parent_id"); got != "c1" {
					t.Errorf("effective parent %s, want c1 after the trigger", got)
				}
			}},
			{"creating a run to fail", 1, "f1", func() error { return w.CreateRun(ctx, NewRun{ID: "f1", FlowName: "orders"}) }, nil},
			{"failing it", 1, "f1", func() error { return w.Fail(ctx, "f1", RunError{Name: "E", Message: "bad <thing>"}) }, func() {
				hasAll(compact(field("f1", "state_json")), `"error":{"name":"E","message":"bad<thing>"}`)
				if got := field("f1", "status"); got != "failed" {
					t.Errorf("got %s", got)
				}
			}},
			{"creating a run to cancel", 1, "x1", func() error { return w.CreateRun(ctx, NewRun{ID: "x1", FlowName: "orders"}) }, nil},
			{"cancelling it", 1, "x1", func() error { return w.Cancel(ctx, "x1") }, func() {
				if got := field("x1", "status"); got != "cancelled" {
					t.Errorf("got %s", got)
				}
			}},
			{"logging the cancellation", 1, "x1", func() error { return w.AppendRunEvent(ctx, "x1", vocab.EventCancelled, "operator") }, func() {
				if got := str(`SELECT cancellation_reason FROM flows_run_events WHERE run_id = 'x1'`); got != "operator" {
					t.Errorf("got %s", got)
				}
			}},
			{"creating a run to suspend", 1, "w1", func() error { return w.CreateRun(ctx, NewRun{ID: "w1", FlowName: "orders"}) }, nil},
			{"starting it", 1, "w1", func() error { return w.Start(ctx, "w1", ownerA) }, nil},
			{"suspending it for an approval", 1, "w1", func() error {
				return w.Wait(ctx, "w1", Waiting{Reason: "approval", Token: "secret-token", Request: json.RawMessage(`{"approvers":["ops"]}`)})
			}, func() {
				if got := field("w1", "waiting_token"); got != "secret-token" {
					t.Errorf("got %s", got)
				}
				hasAll(compact(field("w1", "waiting_request")), `{"approvers":["ops"]}`)
			}},
			{"deleting the run with a journal and edges", 0, "r1", func() error { return w.Delete(ctx, "r1") }, func() {
				if _, deleted, _ := changeOf(t, db, "r1"); !deleted {
					t.Errorf("no tombstone")
				}
				for _, q := range []string{
					`SELECT COUNT(*) FROM flows_runs WHERE run_id = 'r1'`,
					`SELECT COUNT(*) FROM flows_run_parents WHERE parent_id = 'r1' OR child_id = 'r1'`,
					`SELECT COUNT(*) FROM flows_steps WHERE run_id = 'r1'`,
					`SELECT COUNT(*) FROM flows_step_attempts WHERE run_id = 'r1'`,
					`SELECT COUNT(*) FROM flows_inbound_events WHERE run_id = 'r1'`,
					`SELECT COUNT(*) FROM flows_run_events WHERE run_id = 'r1'`,
				} {
					if n := count(t, db, q); n != 0 {
						t.Errorf("%s: %d left", q, n)
					}
				}
			}},
			{"recreating the deleted id", 1, "r1", func() error { return w.CreateRun(ctx, NewRun{ID: "r1", FlowName: "orders"}) }, func() {
				if _, deleted, _ := changeOf(t, db, "r1"); deleted {
					t.Errorf("still a tombstone")
				}
			}},
		}
		for _, st := range steps {
			before := position(t, db)
			runBefore, _, _ := changeOf(t, db, st.run)
			if err := st.act(); err != nil {
				t.Fatalf("%s: %v", st.name, err)
			}
			after := position(t, db)
			rev, deleted, ok := changeOf(t, db, st.run)
			switch {
			case st.changes < 0:
				if after != before || rev != runBefore {
					t.Errorf("%s: position %d→%d, run %d→%d, want no change", st.name, before, after, runBefore, rev)
				}
			case st.changes > 0 && after != before+st.changes:
				t.Errorf("%s: position %d→%d, want +%d", st.name, before, after, st.changes)
			case after <= before:
				t.Errorf("%s: position %d→%d, want it advanced", st.name, before, after)
			}
			if st.changes >= 0 && (!ok || rev <= before || rev > after || rev <= runBefore) {
				t.Errorf("%s: run %s has revision %d (ok %v), want in (%d, %d]", st.name, st.run, rev, ok, before, after)
			}
			if !deleted && st.changes == 1 && rev != after {
				t.Errorf("%s: run %s has revision %d, want the position %d", st.name, st.run, rev, after)
			}
			if st.check != nil {
				st.check()
			}
			if t.Failed() {
				t.FailNow()
			}
		}
	})
}

// TestATransactionChangingTwoRunsAdvancesTwice checks that revisions count
// run changes, not transactions.
func TestATransactionChangingTwoRunsAdvancesTwice(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		ctx := context.Background()
		db := storetest.Open(t, d)
		w := NewWriter(db, testClock())
		for _, id := range []string{"a", "b"} {
			if err := w.CreateRun(ctx, NewRun{ID: id, FlowName: "f"}); err != nil {
				t.Fatal(err)
			}
			if err := w.Start(ctx, id, ownerA); err != nil {
				t.Fatal(err)
			}
		}
		before := position(t, db)
		err := w.Do(ctx, func(tx *Tx) error {
			if err := tx.Heartbeat(ctx, "a", ownerA.Nonce); err != nil {
				return err
			}
			return tx.Heartbeat(ctx, "b", ownerA.Nonce)
		})
		if err != nil {
			t.Fatal(err)
		}
		if after := position(t, db); after != before+2 {
			t.Fatalf("position %d→%d, want +2", before, after)
		}
		ra, _, _ := changeOf(t, db, "a")
		rb, _, _ := changeOf(t, db, "b")
		if ra != before+1 || rb != before+2 {
			t.Fatalf("revisions a=%d b=%d, want %d and %d", ra, rb, before+1, before+2)
		}
	})
}

// TestAFailedActionLeavesNoTrace checks that bad input, a run in the wrong
// state and a constraint the store enforces all roll the whole transaction
// back.
func TestAFailedActionLeavesNoTrace(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		ctx := context.Background()
		db := storetest.Open(t, d)
		w := NewWriter(db, testClock())
		if err := w.CreateRun(ctx, NewRun{ID: "live", FlowName: "f"}); err != nil {
			t.Fatal(err)
		}
		if err := w.Start(ctx, "live", ownerA); err != nil {
			t.Fatal(err)
		}
		if err := w.AddStep(ctx, "live", Step{ID: "sleep", Type: vocab.StepSleep, WakeAt: 5}); err != nil {
			t.Fatal(err)
		}
		cases := []struct {
			name string
			code fault.Code
			fn   func(tx *Tx) error
		}{
			{"a valid run then starting a missing one", fault.BadUserInput, func(tx *Tx) error {
				if err := tx.CreateRun(ctx, NewRun{ID: "ghost", FlowName: "f"}); err != nil {
					return err
				}
				return tx.Start(ctx, "missing", ownerA)
			}},
			{"a run then completing it while pending", fault.BadUserInput, func(tx *Tx) error {
				if err := tx.CreateRun(ctx, NewRun{ID: "ghost", FlowName: "f"}); err != nil {
					return err
				}
				return tx.Complete(ctx, "ghost", nil)
			}},
			{"a step then two started attempts of it", fault.PersistenceFailed, func(tx *Tx) error {
				if err := tx.AddStep(ctx, "live", Step{ID: "twice", Type: vocab.StepRun}); err != nil {
					return err
				}
				if err := tx.StartAttempt(ctx, "live", "twice", "t1"); err != nil {
					return err
				}
				return tx.StartAttempt(ctx, "live", "twice", "t2")
			}},
			{"an attempt of a sleep step", fault.PersistenceFailed, func(tx *Tx) error {
				if err := tx.Heartbeat(ctx, "live", ownerA.Nonce); err != nil {
					return err
				}
				return tx.StartAttempt(ctx, "live", "sleep", "s1")
			}},
			{"a step nested in a sleep step", fault.PersistenceFailed, func(tx *Tx) error {
				return tx.AddStep(ctx, "live", Step{ID: "inner", Type: vocab.StepRun, ParentStepID: "sleep"})
			}},
			{"a heartbeat from another owner", fault.BadUserInput, func(tx *Tx) error {
				if err := tx.Heartbeat(ctx, "live", ownerA.Nonce); err != nil {
					return err
				}
				return tx.Heartbeat(ctx, "live", ownerB.Nonce)
			}},
			{"an acknowledgement without a request", fault.BadUserInput, func(tx *Tx) error {
				return tx.AcknowledgeCancel(ctx, "live", ownerA)
			}},
			{"a live id created twice", fault.BadUserInput, func(tx *Tx) error {
				return tx.CreateRun(ctx, NewRun{ID: "live", FlowName: "f"})
			}},
		}
		for _, c := range cases {
			before := digest(t, db)
			err := w.Do(ctx, c.fn)
			wantCode(t, err, c.code)
			if after := digest(t, db); after != before {
				t.Errorf("%s: the store changed", c.name)
			}
		}
	})
}

// TestBadInputIsRefusedBeforeTheStore checks the writer's validation.
func TestBadInputIsRefusedBeforeTheStore(t *testing.T) {
	t.Parallel()
	db := storetest.Open(t, store.SQLite)
	ctx := context.Background()
	w := NewWriter(db, testClock())
	long := strings.Repeat("😀", 513) // 1026 UTF-16 units in 2052 bytes
	cases := map[string]func() error{
		"an empty id":            func() error { return w.CreateRun(ctx, NewRun{ID: "", FlowName: "f"}) },
		"an id with NUL":         func() error { return w.CreateRun(ctx, NewRun{ID: "a\x00b", FlowName: "f"}) },
		"an id of invalid UTF-8": func() error { return w.CreateRun(ctx, NewRun{ID: "a\xffb", FlowName: "f"}) },
		"an encoded surrogate":   func() error { return w.CreateRun(ctx, NewRun{ID: "a\xed\xa0\x80", FlowName: "f"}) },
		"an id over 1024 units":  func() error { return w.CreateRun(ctx, NewRun{ID: long, FlowName: "f"}) },
		"an empty flow name":     func() error { return w.CreateRun(ctx, NewRun{ID: "y", FlowName: ""}) },
		"a state that is a list": func() error { return w.CreateRun(ctx, NewRun{ID: "y", FlowName: "f", State: json.RawMessage(`[1]`)}) },
		"a state of JSON null":   func() error { return w.CreateRun(ctx, NewRun{ID: "y", FlowName: "f", State: json.RawMessage(`null`)}) },
		"a state of broken JSON": func() error { return w.CreateRun(ctx, NewRun{ID: "y", FlowName: "f", State: json.RawMessage(`{`)}) },
		"a state naming another": func() error {
			return w.CreateRun(ctx, NewRun{ID: "y", FlowName: "f", State: json.RawMessage(`{"flowName":"g"}`)})
		},
		"a negative creation": func() error { return w.CreateRun(ctx, NewRun{ID: "y", FlowName: "f", CreatedAt: -1}) },
		"its own parent": func() error {
			return w.CreateRun(ctx, NewRun{ID: "y", FlowName: "f", Parents: []ParentEdge{{ParentID: "y"}}})
		},
		"a negative seq": func() error {
			return w.CreateRun(ctx, NewRun{ID: "y", FlowName: "f", Parents: []ParentEdge{{ParentID: "p", Seq: -1}}})
		},
		"a parent twice": func() error {
			return w.CreateRun(ctx, NewRun{ID: "y", FlowName: "f", Parents: []ParentEdge{{ParentID: "p"}, {ParentID: "p", Seq: 1}}})
		},
		"a child and a round": func() error {
			return w.CreateRun(ctx, NewRun{ID: "y", FlowName: "f", Parents: []ParentEdge{{ParentID: "p"}}, Round: &Round{LineageID: "l", Ordinal: 1, Previous: "l"}})
		},
		"round zero": func() error {
			return w.CreateRun(ctx, NewRun{ID: "y", FlowName: "f", Round: &Round{LineageID: "l", Ordinal: 0, Previous: "l"}})
		},
		"an owner without nonce":  func() error { return w.Start(ctx, "x", vocab.Owner{HostID: "h", PID: 1}) },
		"an owner with pid 0":     func() error { return w.Start(ctx, "x", vocab.Owner{HostID: "h", Nonce: "n"}) },
		"a wait without reason":   func() error { return w.Wait(ctx, "x", Waiting{}) },
		"a request of bad JSON":   func() error { return w.Wait(ctx, "x", Waiting{Reason: "human", Request: json.RawMessage(`{x}`)}) },
		"a sleep without wake":    func() error { return w.AddStep(ctx, "x", Step{ID: "s", Type: vocab.StepSleep}) },
		"a wait without event":    func() error { return w.AddStep(ctx, "x", Step{ID: "s", Type: vocab.StepWait}) },
		"a step of unknown type":  func() error { return w.AddStep(ctx, "x", Step{ID: "s", Type: "loop"}) },
		"a step enclosing itself": func() error { return w.AddStep(ctx, "x", Step{ID: "s", Type: vocab.StepRun, ParentStepID: "s"}) },
		"an unknown run event":    func() error { return w.AppendRunEvent(ctx, "x", "exploded", "") },
		"a reason on completion":  func() error { return w.AppendRunEvent(ctx, "x", vocab.EventCompleted, "why") },
		"a failure with no text":  func() error { return w.Fail(ctx, "x", RunError{}) },
		"a payload of bad JSON": func() error {
			return w.AddInboundEvent(ctx, InboundEvent{ID: "e", RunID: "x", Name: "n", Payload: json.RawMessage(`nul`)})
		},
		"a NUL escape in JSON":   func() error { return w.Complete(ctx, "x", json.RawMessage(`"a\u0000"`)) },
		"a missing run":          func() error { return w.Heartbeat(ctx, "nobody", "n") },
		"deleting a missing run": func() error { return w.Delete(ctx, "nobody") },
	}
	// A running run, so that only the input can be what is refused.
	if err := w.CreateRun(ctx, NewRun{ID: "x", FlowName: "f"}); err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx, "x", ownerA); err != nil {
		t.Fatal(err)
	}
	before := digest(t, db)
	for name, fn := range cases {
		err := fn()
		if fault.CodeOf(err) != fault.BadUserInput {
			t.Errorf("%s: got %v, want BAD_USER_INPUT", name, err)
		}
	}
	if digest(t, db) != before {
		t.Errorf("refused input changed the store")
	}
	// The longest ids pass: 1024 units, in any plane.
	for _, id := range []string{strings.Repeat("é", 1024), strings.Repeat("😀", 512)} {
		if err := w.CreateRun(ctx, NewRun{ID: id, FlowName: "f"}); err != nil {
			t.Errorf("an id of exactly 1024 UTF-16 units: %v", err)
		}
	}
}
