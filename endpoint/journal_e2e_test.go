package endpoint_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/flowsnap/flowsnap/endpoint"
	"github.com/flowsnap/flowsnap/engine"
	"github.com/flowsnap/flowsnap/snapshot"
	"github.com/flowsnap/flowsnap/snapshot/snapshottest"
	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/storetest"
	"github.com/flowsnap/flowsnap/store/vocab"
)

// t0 is the journal fixture's epoch, 2026-01-01T00:00:00.000Z; at(ms) is
// how a response spells t0 + ms.
const t0 = int64(1_767_225_600_000)

func at(ms int64) string {
	return fmt.Sprintf("2026-01-01T00:%02d:%02d.%03dZ", ms/60_000, ms/1000%60, ms%1000)
}

// journalRuns is how many "jfan" runs the statement count reads at most.
const journalRuns = 60

// journalEnv serves a store whose runs have journals that the reference
// writer wrote, with the writer's clock at the times given:
//
//	retry-ok   completed: "fetch" failed twice (NetworkError, then
//	           HTTPError) and succeeded; "nil" returned JSON null, "void"
//	           returned nothing
//	exhausted  failed: "charge" failed its 3 attempts (PaymentError)
//	retrying   running: "call" failed once, retried at 9 s
//	sleeper    suspended: "nap-1" elapsed, "nap-2" sleeping until 99 s
//	waiter     suspended: "approve" satisfied by e1 (payload JSON null),
//	           "confirm" timed out, "pay" waiting for order.paid; e2 has
//	           no payload
//	nested     running: "outer" runs "outer.1" (done) and "outer.2"
//	           (running)
//	stopped    cancelled, its log ending with a reason
//	jfan-NNN   running, each with two run steps of two attempts and a
//	           satisfied wait step: the statement count's subjects
//	broken     journal rows that break their shapes, written past the
//	           store's constraints (only when broken is set)
func journalEnv(t *testing.T, d store.Dialect, broken bool) *env {
	t.Helper()
	dsn := storetest.DSN(t, d)
	db := storetest.OpenDSN(t, dsn, true)
	ctx := context.Background()
	now := t0
	w := engine.NewWriter(db, func() int64 { return now })
	set := func(ms int64) { now = t0 + ms }
	owner := vocab.Owner{HostID: "host-j", PID: 77, Nonce: "nonce-j"}
	must(t, w.Do(ctx, func(tx *engine.Tx) error {
		ids := []string{"retry-ok", "exhausted", "retrying", "sleeper", "waiter", "nested", "stopped"}
		for i := range journalRuns {
			ids = append(ids, fmt.Sprintf("jfan-%03d", i))
		}
		for _, id := range ids {
			if err := tx.CreateRun(ctx, engine.NewRun{ID: id, FlowName: "journal"}); err != nil {
				return err
			}
			if err := tx.AppendRunEvent(ctx, id, vocab.EventCreated, ""); err != nil {
				return err
			}
			if err := tx.Start(ctx, id, owner); err != nil {
				return err
			}
			if err := tx.AppendRunEvent(ctx, id, vocab.EventStarted, ""); err != nil {
				return err
			}
		}
		return nil
	}))
	do := func(fn func(tx *engine.Tx) error) { t.Helper(); must(t, w.Do(ctx, fn)) }
	step := func(run string, s engine.Step) func(tx *engine.Tx) error {
		return func(tx *engine.Tx) error { return tx.AddStep(ctx, run, s) }
	}
	start := func(run, step, attempt string) func(tx *engine.Tx) error {
		return func(tx *engine.Tx) error { return tx.StartAttempt(ctx, run, step, attempt) }
	}
	fail := func(run, attempt string, e engine.AttemptError) func(tx *engine.Tx) error {
		return func(tx *engine.Tx) error { return tx.FailAttempt(ctx, run, attempt, e) }
	}
	succeed := func(run, attempt string, result json.RawMessage) func(tx *engine.Tx) error {
		return func(tx *engine.Tx) error { return tx.SucceedAttempt(ctx, run, attempt, result) }
	}

	// retry-ok: retries, then success.
	set(1000)
	do(step("retry-ok", engine.Step{ID: "fetch", Type: vocab.StepRun, MaxAttempts: 5}))
	set(1100)
	do(start("retry-ok", "fetch", "a1"))
	set(1200)
	do(fail("retry-ok", "a1", engine.AttemptError{Message: "connection reset", Name: "NetworkError", NextAttemptAt: t0 + 2000}))
	set(2000)
	do(start("retry-ok", "fetch", "a2"))
	set(2100)
	do(fail("retry-ok", "a2", engine.AttemptError{Message: "502 Bad Gateway", Name: "HTTPError", NextAttemptAt: t0 + 4000}))
	set(4000)
	do(start("retry-ok", "fetch", "a3"))
	set(4100)
	do(succeed("retry-ok", "a3", json.RawMessage(`{"ok":true}`)))
	set(5000)
	do(step("retry-ok", engine.Step{ID: "nil", Type: vocab.StepRun}))
	do(start("retry-ok", "nil", "a4"))
	do(succeed("retry-ok", "a4", json.RawMessage(`null`)))
	set(5001)
	do(step("retry-ok", engine.Step{ID: "void", Type: vocab.StepRun}))
	do(start("retry-ok", "void", "a5"))
	do(succeed("retry-ok", "a5", nil))
	set(6000)
	must(t, w.Complete(ctx, "retry-ok", nil))
	must(t, w.AppendRunEvent(ctx, "retry-ok", vocab.EventCompleted, ""))

	// exhausted: retries exhausted.
	set(1000)
	do(step("exhausted", engine.Step{ID: "charge", Type: vocab.StepRun, MaxAttempts: 3}))
	for i, next := range []int64{2000, 3000, 0} {
		id := fmt.Sprintf("a%d", i+1)
		set(1000 * int64(i+1))
		do(start("exhausted", "charge", id))
		set(1000*int64(i+1) + 500)
		if next != 0 {
			next += t0
		}
		do(fail("exhausted", id, engine.AttemptError{Message: "card declined", Name: "PaymentError", NextAttemptAt: next}))
	}
	must(t, w.Fail(ctx, "exhausted", engine.RunError{Name: "PaymentError", Message: "card declined"}))
	must(t, w.AppendRunEvent(ctx, "exhausted", vocab.EventFailed, ""))

	// retrying: a retry scheduled.
	set(1000)
	do(step("retrying", engine.Step{ID: "call", Type: vocab.StepRun, MaxAttempts: 4}))
	do(start("retrying", "call", "a1"))
	set(1500)
	do(fail("retrying", "a1", engine.AttemptError{Message: "rate limited", Name: "QuotaExceeded", NextAttemptAt: t0 + 9000}))

	// sleeper: one sleep elapsed, one sleeping.
	set(1000)
	do(step("sleeper", engine.Step{ID: "nap-1", Type: vocab.StepSleep, WakeAt: t0 + 2000}))
	set(2000)
	must(t, w.ElapseSleep(ctx, "sleeper", "nap-1"))
	set(3000)
	do(step("sleeper", engine.Step{ID: "nap-2", Type: vocab.StepSleep, WakeAt: t0 + 99000}))
	must(t, w.Wait(ctx, "sleeper", engine.Waiting{Reason: "timer", WakeAt: t0 + 99000}))

	// waiter: a wait satisfied, one timed out, one waiting.
	set(1000)
	do(step("waiter", engine.Step{ID: "approve", Type: vocab.StepWait, EventName: "approval.decided"}))
	set(1500)
	must(t, w.AddInboundEvent(ctx, engine.InboundEvent{ID: "e1", RunID: "waiter", Name: "approval.decided", Payload: json.RawMessage(`null`)}))
	set(1600)
	must(t, w.SatisfyWait(ctx, "waiter", "approve", "e1"))
	set(2000)
	do(step("waiter", engine.Step{ID: "confirm", Type: vocab.StepWait, EventName: "confirm", TimeoutAt: t0 + 3000}))
	set(3000)
	must(t, w.TimeOutWait(ctx, "waiter", "confirm"))
	set(4000)
	do(step("waiter", engine.Step{ID: "pay", Type: vocab.StepWait, EventName: "order.paid", TimeoutAt: t0 + 50000}))
	must(t, w.AddInboundEvent(ctx, engine.InboundEvent{ID: "e2", RunID: "waiter", Name: "order.shipped"}))
	must(t, w.Wait(ctx, "waiter", engine.Waiting{Reason: "event", WakeAt: t0 + 50000}))

	// nested: steps inside a run step.
	set(1000)
	do(step("nested", engine.Step{ID: "outer", Type: vocab.StepRun}))
	do(start("nested", "outer", "a1"))
	set(1100)
	do(step("nested", engine.Step{ID: "outer.1", Type: vocab.StepRun, ParentStepID: "outer"}))
	do(start("nested", "outer.1", "a2"))
	set(1200)
	do(succeed("nested", "a2", json.RawMessage(`[1,2]`)))
	do(step("nested", engine.Step{ID: "outer.2", Type: vocab.StepRun, ParentStepID: "outer"}))
	do(start("nested", "outer.2", "a3"))

	// stopped: cancelled with a reason.
	set(1000)
	must(t, w.Cancel(ctx, "stopped"))
	must(t, w.AppendRunEvent(ctx, "stopped", vocab.EventCancelled, "operator asked"))

	// jfan-NNN.
	set(1000)
	do(func(tx *engine.Tx) error {
		for i := range journalRuns {
			run := fmt.Sprintf("jfan-%03d", i)
			for k, s := range []string{"load", "save"} {
				if err := tx.AddStep(ctx, run, engine.Step{ID: s, Type: vocab.StepRun, MaxAttempts: 3}); err != nil {
					return err
				}
				first, second := fmt.Sprintf("a%d", 2*k+1), fmt.Sprintf("a%d", 2*k+2)
				if err := tx.StartAttempt(ctx, run, s, first); err != nil {
					return err
				}
				if err := tx.FailAttempt(ctx, run, first, engine.AttemptError{Message: "flaky", NextAttemptAt: t0 + 1500}); err != nil {
					return err
				}
				if err := tx.StartAttempt(ctx, run, s, second); err != nil {
					return err
				}
			}
			if err := tx.AddStep(ctx, run, engine.Step{ID: "hear", Type: vocab.StepWait, EventName: "ping"}); err != nil {
				return err
			}
			if err := tx.AddInboundEvent(ctx, engine.InboundEvent{ID: "ping-1", RunID: run, Name: "ping", Payload: json.RawMessage(`{"n":1}`)}); err != nil {
				return err
			}
			if err := tx.SatisfyWait(ctx, run, "hear", "ping-1"); err != nil {
				return err
			}
		}
		return nil
	})

	if broken {
		writeBrokenJournal(t, db, w, set)
	}

	e := &env{t: t, db: db}
	reader := snapshot.NewReader(storetest.OpenReader(t, dsn))
	srv := httptest.NewServer(endpoint.NewHandler(reader, endpoint.Options{OnOperation: func(rd *snapshot.Read) {
		e.mu.Lock()
		e.stmts = append(e.stmts, rd.Statements())
		e.mu.Unlock()
	}}))
	t.Cleanup(srv.Close)
	e.url = srv.URL
	return e
}

// writeBrokenJournal writes run "broken", whose journal holds a step with
// a succeeded attempt without a result type (then one sound attempt), a
// wait step without an event name, a wait step whose claimed event has no
// claim time, and a log entry of the wrong shape, each between sound rows.
func writeBrokenJournal(t *testing.T, db *store.DB, w *engine.Writer, set func(int64)) {
	t.Helper()
	ctx := context.Background()
	l := snapshottest.Loosen(t, db)
	l.LoosenJournal(t)
	set(10_000)
	must(t, w.CreateRun(ctx, engine.NewRun{ID: "broken", FlowName: "journal"}))
	must(t, w.AppendRunEvent(ctx, "broken", vocab.EventCreated, ""))
	must(t, w.AddStep(ctx, "broken", engine.Step{ID: "work", Type: vocab.StepRun}))
	must(t, w.StartAttempt(ctx, "broken", "work", "bad"))
	l.Exec(t, `UPDATE flows_step_attempts SET state = 'succeeded', ended_at_ms = $1 WHERE run_id = 'broken' AND attempt_id = 'bad'`, t0+10_000)
	set(10_001)
	must(t, w.StartAttempt(ctx, "broken", "work", "good"))
	must(t, w.SucceedAttempt(ctx, "broken", "good", json.RawMessage(`"done"`)))
	set(10_002)
	must(t, w.AddStep(ctx, "broken", engine.Step{ID: "nameless", Type: vocab.StepWait, EventName: "x"}))
	l.Exec(t, `UPDATE flows_steps SET event_name = NULL WHERE run_id = 'broken' AND step_id = 'nameless'`)
	set(10_003)
	must(t, w.AddStep(ctx, "broken", engine.Step{ID: "claims", Type: vocab.StepWait, EventName: "y"}))
	must(t, w.AddInboundEvent(ctx, engine.InboundEvent{ID: "timeless", RunID: "broken", Name: "y"}))
	must(t, w.SatisfyWait(ctx, "broken", "claims", "timeless"))
	l.Exec(t, `UPDATE flows_inbound_events SET claimed_at_ms = NULL WHERE run_id = 'broken' AND event_id = 'timeless'`)
	set(10_004)
	must(t, w.AddInboundEvent(ctx, engine.InboundEvent{ID: "sound", RunID: "broken", Name: "z"}))
	l.Exec(t, `INSERT INTO flows_run_events (run_id, seq, recorded_at_ms, type, cancellation_reason) VALUES ('broken', 1, 1, 'started', 'no reason here')`)
	must(t, w.AppendRunEvent(ctx, "broken", vocab.EventPaused, ""))
}

const attemptFields = `fragment attemptFields on Attempt {
  id number state startedAt endedAt resultType result errorName errorMessage nextAttemptAt
}`

func TestJournalGraphQL(t *testing.T) {
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		e := journalEnv(t, d, false)

		t.Run("a failing run shows each attempt's error and when the next was due", func(t *testing.T) {
			r := e.ok(`{ run(id: "exhausted") { ... on Run { status currentStep { id }
				steps { nodes { __typename id type state createdAt resolvedAt
					... on RunStep { maxAttempts attemptCount nextAttemptAt attempts { ...attemptFields } } } } } } }`+attemptFields, nil)
			run := get(r.Data, "run")
			if get(run, "status") != "FAILED" || get(run, "currentStep") != nil {
				t.Fatalf("run = %v", run)
			}
			charge := get(run, "steps", "nodes", 0)
			want := map[string]any{"__typename": "RunStep", "id": "charge", "type": "RUN", "state": "FAILED", "createdAt": at(1000),
				"resolvedAt": at(3500), "maxAttempts": float64(3), "attemptCount": float64(3), "nextAttemptAt": nil}
			for k, v := range want {
				if get(charge, k) != v {
					t.Errorf("%s = %v, want %v", k, get(charge, k), v)
				}
			}
			for i, next := range []any{at(2000), at(3000), nil} {
				a := get(charge, "attempts", i)
				if get(a, "number") != float64(i+1) || get(a, "state") != "FAILED" || get(a, "errorName") != "PaymentError" ||
					get(a, "errorMessage") != "card declined" || get(a, "nextAttemptAt") != next || get(a, "startedAt") != at(1000*int64(i+1)) ||
					get(a, "endedAt") != at(1000*int64(i+1)+500) || get(a, "resultType") != nil {
					t.Errorf("attempt %d = %v", i+1, a)
				}
			}
		})

		t.Run("retries then success, and a returned null is not a return of nothing", func(t *testing.T) {
			r := e.ok(`{ run(id: "retry-ok") { ... on Run { steps { nodes { id state
				... on RunStep { attempts { ...attemptFields } } } } } } }`+attemptFields, nil)
			nodes := get(r.Data, "run", "steps", "nodes")
			fetch := get(nodes, 0, "attempts")
			if get(nodes, 0, "state") != "SUCCEEDED" || len(fetch.([]any)) != 3 {
				t.Fatalf("fetch = %v", get(nodes, 0))
			}
			if get(fetch, 0, "errorName") != "NetworkError" || get(fetch, 1, "errorName") != "HTTPError" || get(fetch, 1, "nextAttemptAt") != at(4000) {
				t.Errorf("failed attempts = %v", fetch)
			}
			if a3 := get(fetch, 2); get(a3, "state") != "SUCCEEDED" || get(a3, "resultType") != "JSON" || get(a3, "result", "ok") != true || get(a3, "errorMessage") != nil {
				t.Errorf("a3 = %v", a3)
			}
			null, none := get(nodes, 1, "attempts", 0), get(nodes, 2, "attempts", 0)
			if get(nodes, 1, "id") != "nil" || get(null, "resultType") != "JSON" || get(null, "result") != nil {
				t.Errorf("returned null = %v", null)
			}
			if get(nodes, 2, "id") != "void" || get(none, "resultType") != "NONE" || get(none, "result") != nil {
				t.Errorf("returned nothing = %v", none)
			}
		})

		t.Run("a retrying run is blocked on its step until the next attempt", func(t *testing.T) {
			r := e.ok(`{ run(id: "retrying") { ... on Run { currentStep { __typename id state
				... on RunStep { nextAttemptAt attempts(last: 1) { number errorName errorMessage nextAttemptAt } } } } } }`, nil)
			cur := get(r.Data, "run", "currentStep")
			if get(cur, "id") != "call" || get(cur, "state") != "RETRYING" || get(cur, "nextAttemptAt") != at(9000) ||
				get(cur, "attempts", 0, "errorMessage") != "rate limited" || get(cur, "attempts", 0, "nextAttemptAt") != at(9000) {
				t.Fatalf("currentStep = %v", cur)
			}
		})

		t.Run("a waiting run shows the step and the event it waits for", func(t *testing.T) {
			r := e.ok(`{ run(id: "waiter") { ... on Run { status
				currentStep { __typename id state ... on WaitStep { eventName timeoutAt claimedEvent { id } } }
				steps { nodes { id state resolvedAt ... on WaitStep { eventName timeoutAt
					claimedEvent { id eventName hasPayload payload createdAt claimedBy claimedAt } } } }
				inboundEvents { nodes { id eventName hasPayload payload createdAt claimedBy claimedAt } } } } }`, nil)
			run := get(r.Data, "run")
			cur := get(run, "currentStep")
			if get(run, "status") != "SUSPENDED" || get(cur, "__typename") != "WaitStep" || get(cur, "id") != "pay" || get(cur, "state") != "WAITING" ||
				get(cur, "eventName") != "order.paid" || get(cur, "timeoutAt") != at(50000) || get(cur, "claimedEvent") != nil {
				t.Fatalf("currentStep = %v", cur)
			}
			steps := get(run, "steps", "nodes")
			approve := get(steps, 0)
			if get(approve, "state") != "SATISFIED" || get(approve, "resolvedAt") != at(1600) ||
				get(approve, "claimedEvent", "id") != "e1" || get(approve, "claimedEvent", "hasPayload") != true ||
				get(approve, "claimedEvent", "claimedBy") != "approve" || get(approve, "claimedEvent", "claimedAt") != at(1600) {
				t.Errorf("approve = %v", approve)
			}
			if get(steps, 1, "state") != "TIMED_OUT" || get(steps, 1, "timeoutAt") != at(3000) || get(steps, 1, "claimedEvent") != nil {
				t.Errorf("confirm = %v", get(steps, 1))
			}
			events := get(run, "inboundEvents", "nodes")
			if get(events, 0, "id") != "e1" || get(events, 0, "hasPayload") != true || get(events, 0, "payload") != nil {
				t.Errorf("e1, whose payload is JSON null = %v", get(events, 0))
			}
			if get(events, 1, "id") != "e2" || get(events, 1, "hasPayload") != false || get(events, 1, "payload") != nil ||
				get(events, 1, "claimedBy") != nil || get(events, 1, "createdAt") != at(4000) {
				t.Errorf("e2, without a payload = %v", get(events, 1))
			}
		})

		t.Run("a sleeping run shows its sleeps and when it wakes", func(t *testing.T) {
			r := e.ok(`{ run(id: "sleeper") { ... on Run {
				currentStep { __typename id ... on SleepStep { wakeAt } }
				steps { nodes { id state resolvedAt ... on SleepStep { wakeAt } } } } } }`, nil)
			run := get(r.Data, "run")
			if get(run, "currentStep", "__typename") != "SleepStep" || get(run, "currentStep", "id") != "nap-2" || get(run, "currentStep", "wakeAt") != at(99000) {
				t.Fatalf("currentStep = %v", get(run, "currentStep"))
			}
			if nap := get(run, "steps", "nodes", 0); get(nap, "state") != "ELAPSED" || get(nap, "resolvedAt") != at(2000) || get(nap, "wakeAt") != at(2000) {
				t.Errorf("nap-1 = %v", nap)
			}
		})

		t.Run("nested steps name their enclosing step", func(t *testing.T) {
			r := e.ok(`{ run(id: "nested") { ... on Run {
				currentStep { id parentStepId parentStep { id state ... on RunStep { attempts { state } } } }
				steps { nodes { id state parentStepId parentStep { id parentStep { id } } } } } } }`, nil)
			run := get(r.Data, "run")
			cur := get(run, "currentStep")
			if get(cur, "id") != "outer.2" || get(cur, "parentStepId") != "outer" || get(cur, "parentStep", "id") != "outer" ||
				get(cur, "parentStep", "state") != "RUNNING" || get(cur, "parentStep", "attempts", 0, "state") != "STARTED" {
				t.Fatalf("currentStep = %v", cur)
			}
			steps := get(run, "steps", "nodes").([]any)
			if len(steps) != 3 || get(steps, 0, "parentStep") != nil || get(steps, 1, "parentStep", "id") != "outer" ||
				get(steps, 1, "parentStep", "parentStep") != nil || get(steps, 1, "state") != "SUCCEEDED" {
				t.Fatalf("steps = %v", steps)
			}
		})

		t.Run("the lifecycle log ends with the cancellation and its reason", func(t *testing.T) {
			r := e.ok(`{ run(id: "stopped") { ... on Run { status currentStep { id }
				events { edges { cursor node { seq type recordedAt cancellationReason } } pageInfo { hasNextPage } } } } }`, nil)
			run := get(r.Data, "run")
			edges := get(run, "events", "edges").([]any)
			if get(run, "status") != "CANCELLED" || get(run, "currentStep") != nil || len(edges) != 3 {
				t.Fatalf("run = %v", run)
			}
			last := get(edges, 2, "node")
			if get(last, "seq") != float64(2) || get(last, "type") != "CANCELLED" || get(last, "cancellationReason") != "operator asked" || get(last, "recordedAt") != at(1000) {
				t.Errorf("last entry = %v", last)
			}
			if get(edges, 0, "node", "type") != "CREATED" || get(edges, 0, "node", "cancellationReason") != nil {
				t.Errorf("first entry = %v", get(edges, 0))
			}
		})

		t.Run("steps page in order with cursors of their own kind", func(t *testing.T) {
			var ids []string
			var after any
			for {
				r := e.ok(`query($after: String) { run(id: "retry-ok") { ... on Run {
					steps(first: 1, after: $after) { edges { cursor node { id } } pageInfo { hasNextPage endCursor } } } } }`, map[string]any{"after": after})
				conn := get(r.Data, "run", "steps")
				for _, edge := range get(conn, "edges").([]any) {
					ids = append(ids, get(edge, "node", "id").(string))
				}
				if get(conn, "pageInfo", "hasNextPage") != true {
					break
				}
				after = get(conn, "pageInfo", "endCursor")
			}
			if strings.Join(ids, ",") != "fetch,nil,void" {
				t.Fatalf("steps = %v", ids)
			}
			end := get(e.ok(`{ run(id: "retry-ok") { ... on Run { steps(first: 1) { pageInfo { endCursor } } } } }`, nil).Data, "run", "steps", "pageInfo", "endCursor")
			logEnd := get(e.ok(`{ run(id: "retry-ok") { ... on Run { events(first: 1) { pageInfo { endCursor } } } } }`, nil).Data, "run", "events", "pageInfo", "endCursor")
			for _, c := range []struct {
				name, query string
				vars        map[string]any
				code        string
			}{
				{"a steps cursor used for inbound events", `query($c: String) { run(id: "retry-ok") { ... on Run { inboundEvents(after: $c) { nodes { id } } } } }`, map[string]any{"c": end}, "BAD_CURSOR"},
				{"a steps cursor used for the log", `query($c: String) { run(id: "retry-ok") { ... on Run { events(after: $c) { nodes { seq } } } } }`, map[string]any{"c": end}, "BAD_CURSOR"},
				{"a steps cursor used for children", `query($c: String) { run(id: "retry-ok") { ... on Run { children(after: $c) { nodes { __typename } } } } }`, map[string]any{"c": end}, "BAD_CURSOR"},
				{"a steps cursor of another run", `query($c: String) { run(id: "waiter") { ... on Run { steps(after: $c) { nodes { id } } } } }`, map[string]any{"c": end}, "BAD_CURSOR"},
				{"a log cursor used for steps", `query($c: String) { run(id: "retry-ok") { ... on Run { steps(after: $c) { nodes { id } } } } }`, map[string]any{"c": logEnd}, "BAD_CURSOR"},
				{"a page of 0 steps", `{ run(id: "retry-ok") { ... on Run { steps(first: 0) { nodes { id } } } } }`, nil, "BAD_USER_INPUT"},
				{"a page of 201 events", `{ run(id: "retry-ok") { ... on Run { events(first: 201) { nodes { seq } } } } }`, nil, "BAD_USER_INPUT"},
				{"the last 0 attempts", `{ run(id: "retry-ok") { ... on Run { steps { nodes { ... on RunStep { attempts(last: 0) { number } } } } } } }`, nil, "BAD_USER_INPUT"},
			} {
				t.Run(c.name, func(t *testing.T) {
					r := e.do(c.query, c.vars)
					if !r.hasCode(c.code) {
						t.Fatalf("codes = %v, want %s: %+v", r.codes(), c.code, r.Errors)
					}
				})
			}
		})

		t.Run("statements do not grow with the runs whose journals are read", func(t *testing.T) {
			count := func(query string, n int) int {
				ids := make([]string, n)
				for i := range ids {
					ids[i] = fmt.Sprintf("jfan-%03d", i)
				}
				r := e.ok(query, map[string]any{"ids": ids})
				last := get(r.Data, "runs", n-1)
				steps := get(last, "steps", "nodes")
				if steps == nil {
					var nodes []any
					for _, edge := range get(last, "steps", "edges").([]any) {
						nodes = append(nodes, get(edge, "node"))
					}
					steps = nodes
				}
				// Its steps share a creation time, so they list by id:
				// hear, load, save.
				if get(steps, 1, "attempts", 1, "number") != float64(2) || get(steps, 0, "claimedEvent", "id") != "ping-1" {
					t.Fatalf("the last run's journal = %v", last)
				}
				e.mu.Lock()
				defer e.mu.Unlock()
				return e.stmts[len(e.stmts)-1]
			}
			for _, c := range []struct {
				name, query string
				want        int
			}{
				// position, runs, step pages, attempts.
				{"steps with attempts and claimed events", `query($ids: [ID!]!) { runs(ids: $ids) { ... on Run {
					steps(first: 10) { nodes { ... on RunStep { attempts { number } } ... on WaitStep { claimedEvent { id } } } } } } }`, 4},
				// position, runs, step pages, attempts, current steps,
				// attempts of the current steps, inbound pages, log pages.
				{"the whole journal", `query($ids: [ID!]!) { runs(ids: $ids) { ... on Run {
					currentStep { id ... on RunStep { attempts(last: 1) { errorMessage } } }
					inboundEvents { nodes { id } } events { nodes { seq } }
					steps(first: 10) { edges { node { id parentStep { id } ... on RunStep { attempts { number } } ... on WaitStep { claimedEvent { id } } } } } } } }`, 8},
			} {
				few, many := count(c.query, 2), count(c.query, journalRuns)
				t.Logf("%s: %d statements for 2 runs, %d for %d", c.name, few, many, journalRuns)
				if few != many || many > c.want {
					t.Errorf("%s: %d statements for 2 runs, %d for %d; want at most %d for both", c.name, few, many, journalRuns, c.want)
				}
			}
		})
	})
}

func TestJournalBrokenRowsGraphQL(t *testing.T) {
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		e := journalEnv(t, d, true)
		r := e.do(`{ run(id: "broken") { ... on Run { id
			steps { edges { node { id } } nodes { id ... on RunStep { attempts { id resultType result } } ... on WaitStep { claimedEvent { id } } } }
			inboundEvents { nodes { id } }
			events { nodes { seq type } } } } }`, nil)
		run := get(r.Data, "run")
		if get(run, "id") != "broken" {
			t.Fatalf("the run itself must stand: %v %+v", r.Data, r.Errors)
		}
		nodes := get(run, "steps", "nodes").([]any)
		if len(nodes) != 3 || get(nodes, 0, "id") != "work" || nodes[1] != nil || get(nodes, 2, "id") != "claims" ||
			get(run, "steps", "edges", 1, "node") != nil || get(run, "steps", "edges", 2, "node", "id") != "claims" {
			t.Fatalf("steps = %v", get(run, "steps"))
		}
		if att := get(nodes, 0, "attempts").([]any); len(att) != 2 || att[0] != nil || get(att, 1, "id") != "good" || get(att, 1, "result") != "done" {
			t.Fatalf("attempts = %v", att)
		}
		if get(nodes, 2, "claimedEvent") != nil {
			t.Fatalf("claimedEvent = %v", get(nodes, 2, "claimedEvent"))
		}
		if events := get(run, "inboundEvents", "nodes").([]any); len(events) != 2 || events[0] != nil || get(events, 1, "id") != "sound" {
			t.Fatalf("inboundEvents = %v", events)
		}
		if log := get(run, "events", "nodes").([]any); len(log) != 3 || get(log, 0, "type") != "CREATED" || log[1] != nil || get(log, 2, "type") != "PAUSED" {
			t.Fatalf("events = %v", log)
		}
		want := map[string]string{
			"[run steps nodes 0 attempts 0]":   "without a result type",
			"[run steps nodes 1]":              "without an event name",
			"[run steps edges 1 node]":         "without an event name",
			"[run steps nodes 2 claimedEvent]": "no claim time",
			"[run inboundEvents nodes 0]":      "no claim time",
			"[run events nodes 1]":             "cancellation reason",
		}
		got := map[string]bool{}
		for _, er := range r.Errors {
			path := fmt.Sprint(er.Path)
			got[path] = true
			says, ok := want[path]
			if !ok || er.Extensions["code"] != "DECODE_FAILED" || er.Extensions["runId"] != "broken" || !strings.Contains(er.Message, says) {
				t.Errorf("error at %s: %s %v", path, er.Message, er.Extensions)
			}
		}
		for path := range want {
			if !got[path] {
				t.Errorf("no error at %s", path)
			}
		}
	})
}
