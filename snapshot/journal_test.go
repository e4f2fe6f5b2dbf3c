package snapshot_test

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/flowsnap/flowsnap/cursor"
	"github.com/flowsnap/flowsnap/engine"
	"github.com/flowsnap/flowsnap/fault"
	"github.com/flowsnap/flowsnap/snapshot"
	"github.com/flowsnap/flowsnap/snapshot/snapshottest"
	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/storetest"
	"github.com/flowsnap/flowsnap/store/vocab"
)

// journalT0 is the fixture's epoch: 2026-01-01T00:00:00Z.
const journalT0 = int64(1_767_225_600_000)

// journal is a store whose runs have journals the reference writer wrote,
// at times the test sets.
type journal struct {
	*fixture
	t   testing.TB
	now int64
	jw  *engine.Writer
}

func newJournal(t testing.TB, d store.Dialect) *journal {
	j := &journal{fixture: newFixture(t, d), t: t}
	j.jw = engine.NewWriter(j.db, func() int64 { return j.now })
	return j
}

// at makes the writer's clock read journalT0 + ms, and returns that time.
func (j *journal) at(ms int64) int64 {
	j.now = journalT0 + ms
	return j.now
}

// must fails the test when an engine action fails.
func (j *journal) must(err error) {
	j.t.Helper()
	if err != nil {
		j.t.Fatalf("engine write: %v", err)
	}
}

// build writes the fixture's runs:
//
//	retry-ok   completed: "fetch" failed twice then succeeded; "nil" returned
//	           JSON null and "void" nothing, both at 5000 ms
//	exhausted  failed: "charge" failed its 3 attempts
//	retrying   running: "call" failed once, retried at 9000 ms
//	sleeper    suspended: "nap-1" elapsed, "nap-2" sleeping
//	waiter     suspended: "approve" satisfied by e1 (payload null),
//	           "confirm" timed out, "pay" waiting for order.paid;
//	           e2 has no payload, e3 an object
//	nested     running: "outer" runs "outer.1" (done), "outer.nap"
//	           (elapsed) and "outer.2" (running)
//	fresh      running: "first" not attempted yet
//	idle       pending, no journal
//	stopped    cancelled with a reason, its log complete
func (j *journal) build() {
	ctx := context.Background()
	w := j.jw
	j.at(0)
	for _, id := range []string{"retry-ok", "exhausted", "retrying", "sleeper", "waiter", "nested", "fresh", "idle", "stopped"} {
		j.must(w.CreateRun(ctx, engine.NewRun{ID: id, FlowName: "journal"}))
		j.must(w.AppendRunEvent(ctx, id, vocab.EventCreated, ""))
		if id != "idle" {
			j.must(w.Start(ctx, id, worker))
			j.must(w.AppendRunEvent(ctx, id, vocab.EventStarted, ""))
		}
	}

	// retry-ok
	j.at(1000)
	j.must(w.AddStep(ctx, "retry-ok", engine.Step{ID: "fetch", Type: vocab.StepRun, MaxAttempts: 5}))
	j.at(1100)
	j.must(w.StartAttempt(ctx, "retry-ok", "fetch", "a1"))
	j.at(1200)
	j.must(w.FailAttempt(ctx, "retry-ok", "a1", engine.AttemptError{Message: "connection reset", Name: "NetworkError", NextAttemptAt: journalT0 + 2000}))
	j.at(2000)
	j.must(w.StartAttempt(ctx, "retry-ok", "fetch", "a2"))
	j.at(2100)
	j.must(w.FailAttempt(ctx, "retry-ok", "a2", engine.AttemptError{Message: "502 Bad Gateway", NextAttemptAt: journalT0 + 4000}))
	j.at(4000)
	j.must(w.StartAttempt(ctx, "retry-ok", "fetch", "a3"))
	j.at(4100)
	j.must(w.SucceedAttempt(ctx, "retry-ok", "a3", json.RawMessage(`{"ok":true}`)))
	j.at(5000)
	j.must(w.AddStep(ctx, "retry-ok", engine.Step{ID: "void", Type: vocab.StepRun}))
	j.must(w.AddStep(ctx, "retry-ok", engine.Step{ID: "nil", Type: vocab.StepRun}))
	j.must(w.StartAttempt(ctx, "retry-ok", "void", "a4"))
	j.must(w.StartAttempt(ctx, "retry-ok", "nil", "a5"))
	j.at(5100)
	j.must(w.SucceedAttempt(ctx, "retry-ok", "a4", nil))
	j.must(w.SucceedAttempt(ctx, "retry-ok", "a5", json.RawMessage(`null`)))
	j.at(6000)
	j.must(w.Complete(ctx, "retry-ok", nil))
	j.must(w.AppendRunEvent(ctx, "retry-ok", vocab.EventCompleted, ""))

	// exhausted
	j.at(1000)
	j.must(w.AddStep(ctx, "exhausted", engine.Step{ID: "charge", Type: vocab.StepRun, MaxAttempts: 3}))
	for i, next := range []int64{2000, 3000, 0} {
		id := fmt.Sprintf("a%d", i+1)
		j.at(1000 * int64(i+1))
		j.must(w.StartAttempt(ctx, "exhausted", "charge", id))
		j.at(1000*int64(i+1) + 500)
		if next != 0 {
			next += journalT0
		}
		j.must(w.FailAttempt(ctx, "exhausted", id, engine.AttemptError{Message: "card declined", Name: "PaymentError", NextAttemptAt: next}))
	}
	j.must(w.Fail(ctx, "exhausted", engine.RunError{Name: "PaymentError", Message: "card declined"}))
	j.must(w.AppendRunEvent(ctx, "exhausted", vocab.EventFailed, ""))

	// retrying
	j.at(1000)
	j.must(w.AddStep(ctx, "retrying", engine.Step{ID: "call", Type: vocab.StepRun, MaxAttempts: 4}))
	j.must(w.StartAttempt(ctx, "retrying", "call", "a1"))
	j.at(1500)
	j.must(w.FailAttempt(ctx, "retrying", "a1", engine.AttemptError{Message: "rate limited", Name: "QuotaExceeded", NextAttemptAt: journalT0 + 9000}))

	// sleeper
	j.at(1000)
	j.must(w.AddStep(ctx, "sleeper", engine.Step{ID: "nap-1", Type: vocab.StepSleep, WakeAt: journalT0 + 2000}))
	j.at(2000)
	j.must(w.ElapseSleep(ctx, "sleeper", "nap-1"))
	j.at(3000)
	j.must(w.AddStep(ctx, "sleeper", engine.Step{ID: "nap-2", Type: vocab.StepSleep, WakeAt: journalT0 + 99000}))
	j.must(w.Wait(ctx, "sleeper", engine.Waiting{Reason: "timer", WakeAt: journalT0 + 99000}))
	j.must(w.AppendRunEvent(ctx, "sleeper", vocab.EventPaused, ""))

	// waiter
	j.at(1000)
	j.must(w.AddStep(ctx, "waiter", engine.Step{ID: "approve", Type: vocab.StepWait, EventName: "approval.decided"}))
	j.at(1500)
	j.must(w.AddInboundEvent(ctx, engine.InboundEvent{ID: "e1", RunID: "waiter", Name: "approval.decided", Payload: json.RawMessage(`null`)}))
	j.at(1600)
	j.must(w.SatisfyWait(ctx, "waiter", "approve", "e1"))
	j.at(2000)
	j.must(w.AddStep(ctx, "waiter", engine.Step{ID: "confirm", Type: vocab.StepWait, EventName: "confirm", TimeoutAt: journalT0 + 3000}))
	j.at(3000)
	j.must(w.TimeOutWait(ctx, "waiter", "confirm"))
	j.at(4000)
	j.must(w.AddStep(ctx, "waiter", engine.Step{ID: "pay", Type: vocab.StepWait, EventName: "order.paid", TimeoutAt: journalT0 + 50000}))
	j.must(w.AddInboundEvent(ctx, engine.InboundEvent{ID: "e2", RunID: "waiter", Name: "order.shipped"}))
	j.at(4500)
	j.must(w.AddInboundEvent(ctx, engine.InboundEvent{ID: "e3", RunID: "waiter", Name: "note", Payload: json.RawMessage(`{"a":1}`)}))
	j.must(w.Wait(ctx, "waiter", engine.Waiting{Reason: "event", WakeAt: journalT0 + 50000}))
	j.must(w.AppendRunEvent(ctx, "waiter", vocab.EventPaused, ""))

	// nested
	j.at(1000)
	j.must(w.AddStep(ctx, "nested", engine.Step{ID: "outer", Type: vocab.StepRun}))
	j.must(w.StartAttempt(ctx, "nested", "outer", "a1"))
	j.at(1100)
	j.must(w.AddStep(ctx, "nested", engine.Step{ID: "outer.1", Type: vocab.StepRun, ParentStepID: "outer"}))
	j.must(w.StartAttempt(ctx, "nested", "outer.1", "a2"))
	j.at(1200)
	j.must(w.SucceedAttempt(ctx, "nested", "a2", json.RawMessage(`[1,2]`)))
	j.must(w.AddStep(ctx, "nested", engine.Step{ID: "outer.nap", Type: vocab.StepSleep, WakeAt: journalT0 + 1300, ParentStepID: "outer"}))
	j.at(1300)
	j.must(w.ElapseSleep(ctx, "nested", "outer.nap"))
	j.must(w.AddStep(ctx, "nested", engine.Step{ID: "outer.2", Type: vocab.StepRun, ParentStepID: "outer"}))
	j.must(w.StartAttempt(ctx, "nested", "outer.2", "a3"))

	// fresh
	j.at(1000)
	j.must(w.AddStep(ctx, "fresh", engine.Step{ID: "first", Type: vocab.StepRun}))

	// stopped
	j.at(1000)
	j.must(w.Cancel(ctx, "stopped"))
	j.must(w.AppendRunEvent(ctx, "stopped", vocab.EventCancelled, "operator asked"))
}

func (j *journal) stepPage(anchor string, first int, after *string) *snapshot.StepPage {
	j.t.Helper()
	res, err := j.r.StepPages(context.Background(), []snapshot.PageRequest{{Anchor: anchor, First: &first, After: after}})
	if err != nil {
		j.t.Fatal(err)
	}
	if res[0].Err != nil {
		j.t.Fatalf("steps of %s: %v", anchor, res[0].Err)
	}
	return res[0].Value
}

// allSteps pages through anchor's steps, first at a time.
func (j *journal) allSteps(anchor string, first int) []snapshot.Step {
	j.t.Helper()
	var out []snapshot.Step
	var after *string
	for {
		p := j.stepPage(anchor, first, after)
		for _, e := range p.Edges {
			if e.Err != nil {
				j.t.Fatalf("step of %s: %v", anchor, e.Err)
			}
			out = append(out, e.Step)
		}
		if !p.PageInfo.HasNextPage {
			return out
		}
		after = p.PageInfo.EndCursor
	}
}

func stepIDs(steps []snapshot.Step) string {
	ids := make([]string, len(steps))
	for i, s := range steps {
		ids[i] = s.Base().ID
	}
	return strings.Join(ids, ",")
}

func ms(v int64) *snapshot.Millis {
	m := snapshot.Millis(journalT0 + v)
	return &m
}

func eqMillis(a, b *snapshot.Millis) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}

func TestJournal(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		j := newJournal(t, d)
		j.build()
		ctx := context.Background()

		t.Run("steps list in creation order, ties by id, with their derived states", func(t *testing.T) {
			for _, c := range []struct {
				run, ids, states string
			}{
				{"retry-ok", "fetch,nil,void", "succeeded,succeeded,succeeded"},
				{"exhausted", "charge", "failed"},
				{"retrying", "call", "retrying"},
				{"sleeper", "nap-1,nap-2", "elapsed,waiting"},
				{"waiter", "approve,confirm,pay", "satisfied,timed_out,waiting"},
				{"nested", "outer,outer.1,outer.nap,outer.2", "running,succeeded,elapsed,running"},
				{"fresh", "first", "pending"},
				{"idle", "", ""},
			} {
				steps := j.allSteps(c.run, 1)
				states := make([]string, len(steps))
				for i, s := range steps {
					states[i] = string(s.Base().State)
				}
				if got := stepIDs(steps); got != c.ids || strings.Join(states, ",") != c.states {
					t.Errorf("%s: steps %s in states %v, want %s in %s", c.run, got, states, c.ids, c.states)
				}
			}
		})

		t.Run("each kind of step carries its own fields", func(t *testing.T) {
			steps := j.allSteps("retry-ok", 10)
			fetch := steps[0].(*snapshot.RunStep)
			if fetch.Type != vocab.StepRun || *fetch.MaxAttempts != 5 || fetch.AttemptCount != 3 ||
				!eqMillis(fetch.ResolvedAt, ms(4100)) || fetch.NextAttemptAt != nil || fetch.CreatedAt != *ms(1000) {
				t.Errorf("fetch = %+v", fetch)
			}
			call := j.allSteps("retrying", 10)[0].(*snapshot.RunStep)
			if !eqMillis(call.NextAttemptAt, ms(9000)) || call.ResolvedAt != nil || call.AttemptCount != 1 {
				t.Errorf("call = %+v", call)
			}
			charge := j.allSteps("exhausted", 10)[0].(*snapshot.RunStep)
			if !eqMillis(charge.ResolvedAt, ms(3500)) || charge.NextAttemptAt != nil {
				t.Errorf("charge = %+v", charge)
			}
			naps := j.allSteps("sleeper", 10)
			nap1, nap2 := naps[0].(*snapshot.SleepStep), naps[1].(*snapshot.SleepStep)
			if nap1.WakeAt != *ms(2000) || !eqMillis(nap1.ResolvedAt, ms(2000)) || nap2.WakeAt != *ms(99000) || nap2.ResolvedAt != nil {
				t.Errorf("naps = %+v %+v", nap1, nap2)
			}
			waits := j.allSteps("waiter", 10)
			approve, confirm, pay := waits[0].(*snapshot.WaitStep), waits[1].(*snapshot.WaitStep), waits[2].(*snapshot.WaitStep)
			ev, err := approve.ClaimedEvent()
			if err != nil || ev == nil || ev.ID != "e1" || !ev.HasPayload || string(ev.Payload) != "null" ||
				*ev.ClaimedBy != "approve" || !eqMillis(ev.ClaimedAt, ms(1600)) || approve.EventName != "approval.decided" ||
				!eqMillis(approve.ResolvedAt, ms(1600)) {
				t.Errorf("approve = %+v, claimed %+v, %v", approve, ev, err)
			}
			if !eqMillis(confirm.TimeoutAt, ms(3000)) || !eqMillis(confirm.ResolvedAt, ms(3000)) {
				t.Errorf("confirm = %+v", confirm)
			}
			if ev, err := pay.ClaimedEvent(); ev != nil || err != nil || pay.EventName != "order.paid" || !eqMillis(pay.TimeoutAt, ms(50000)) {
				t.Errorf("pay = %+v, claimed %+v", pay, ev)
			}
			nested := j.allSteps("nested", 10)
			for _, s := range nested[1:] {
				if p := s.Base().ParentStepID; p == nil || *p != "outer" {
					t.Errorf("%s has parent %v", s.Base().ID, p)
				}
			}
			if nested[0].Base().ParentStepID != nil {
				t.Errorf("outer has a parent")
			}
		})

		t.Run("attempts are numbered in start order and keep a returned null apart from nothing", func(t *testing.T) {
			res, err := j.r.Attempts(ctx, []snapshot.StepKey{
				{RunID: "retry-ok", StepID: "fetch"}, {RunID: "retry-ok", StepID: "nil"}, {RunID: "retry-ok", StepID: "void"},
				{RunID: "exhausted", StepID: "charge"}, {RunID: "fresh", StepID: "first"}, {RunID: "retry-ok", StepID: "fetch"},
			}, []*int{nil, nil, nil, ptr(2), nil, ptr(1)})
			if err != nil {
				t.Fatal(err)
			}
			for i, r := range res {
				if r.Err != nil {
					t.Fatalf("attempts %d: %v", i, r.Err)
				}
				for _, a := range r.Value {
					if a.Err != nil {
						t.Fatalf("attempt of %d: %v", i, a.Err)
					}
				}
			}
			fetch := res[0].Value
			if len(fetch) != 3 {
				t.Fatalf("fetch has %d attempts", len(fetch))
			}
			a1, a2, a3 := fetch[0].Value, fetch[1].Value, fetch[2].Value
			if a1.Number != 1 || a1.ID != "a1" || a1.State != vocab.AttemptFailed || *a1.ErrorName != "NetworkError" ||
				*a1.ErrorMessage != "connection reset" || !eqMillis(a1.NextAttemptAt, ms(2000)) || a1.StartedAt != *ms(1100) ||
				!eqMillis(a1.EndedAt, ms(1200)) || a1.ResultType != nil || a1.Result != nil {
				t.Errorf("a1 = %+v", a1)
			}
			if a2.Number != 2 || a2.ErrorName != nil || *a2.ErrorMessage != "502 Bad Gateway" {
				t.Errorf("a2 = %+v", a2)
			}
			if a3.Number != 3 || a3.State != vocab.AttemptSucceeded || *a3.ResultType != vocab.ResultJSON ||
				string(a3.Result) != `{"ok":true}` || a3.ErrorMessage != nil || a3.NextAttemptAt != nil {
				t.Errorf("a3 = %+v", a3)
			}
			if n := res[1].Value[0].Value; *n.ResultType != vocab.ResultJSON || string(n.Result) != "null" {
				t.Errorf("a step that returned null: %+v", n)
			}
			if v := res[2].Value[0].Value; *v.ResultType != vocab.ResultNone || v.Result != nil {
				t.Errorf("a step that returned nothing: %+v", v)
			}
			charge := res[3].Value
			if len(charge) != 2 || charge[0].Value.Number != 2 || charge[1].Value.Number != 3 || charge[1].Value.NextAttemptAt != nil {
				t.Errorf("the last 2 of charge: %+v", charge)
			}
			if len(res[4].Value) != 0 {
				t.Errorf("first has attempts: %+v", res[4].Value)
			}
			if len(res[5].Value) != 1 || res[5].Value[0].Value.Number != 3 {
				t.Errorf("the last 1 of fetch: %+v", res[5].Value)
			}
		})

		t.Run("a bad attempt limit fails only its own request", func(t *testing.T) {
			res, err := j.r.Attempts(ctx, []snapshot.StepKey{{RunID: "retry-ok", StepID: "fetch"}, {RunID: "retry-ok", StepID: "fetch"}, {RunID: "", StepID: "x"}},
				[]*int{ptr(0), ptr(3), nil})
			if err != nil {
				t.Fatal(err)
			}
			wantCode(t, res[0].Err, fault.BadUserInput)
			wantCode(t, res[2].Err, fault.BadUserInput)
			if res[1].Err != nil || len(res[1].Value) != 3 {
				t.Fatalf("the good request: %+v", res[1])
			}
		})

		t.Run("the current step is the latest unresolved one of an unfinished run", func(t *testing.T) {
			ids := []string{"retry-ok", "exhausted", "retrying", "sleeper", "waiter", "nested", "fresh", "idle", "stopped"}
			want := []string{"", "", "call", "nap-2", "pay", "outer.2", "first", "", ""}
			runs := make([]*snapshot.Run, len(ids))
			for i, id := range ids {
				runs[i] = j.observed(t, id)
			}
			// A run asked twice is answered twice.
			ids, runs, want = append(ids, ids[2]), append(runs, runs[2]), append(want, want[2])
			res, err := j.r.CurrentSteps(ctx, runs)
			if err != nil {
				t.Fatal(err)
			}
			for i, r := range res {
				got := ""
				if r.Err != nil {
					t.Fatalf("%s: %v", ids[i], r.Err)
				}
				if r.Value != nil {
					got = r.Value.Base().ID
					if r.Value.Base().State.Resolved() {
						t.Errorf("%s: the current step %s is resolved", ids[i], got)
					}
				}
				if got != want[i] {
					t.Errorf("%s: current step %q, want %q", ids[i], got, want[i])
				}
			}
		})

		t.Run("steps read by key, missing ones nil", func(t *testing.T) {
			res, err := j.r.Steps(ctx, []snapshot.StepKey{{RunID: "nested", StepID: "outer"}, {RunID: "nested", StepID: "nope"}, {RunID: "waiter", StepID: "approve"}})
			if err != nil {
				t.Fatal(err)
			}
			if res[0].Err != nil || res[0].Value.Base().ID != "outer" || res[1].Value != nil || res[1].Err != nil {
				t.Fatalf("steps = %+v", res)
			}
			if _, ok := res[2].Value.(*snapshot.WaitStep); !ok {
				t.Fatalf("approve = %#v", res[2].Value)
			}
		})

		t.Run("inbound events keep no payload apart from a null one", func(t *testing.T) {
			res, err := j.r.InboundEventPages(ctx, []snapshot.PageRequest{{Anchor: "waiter"}, {Anchor: "idle"}})
			if err != nil {
				t.Fatal(err)
			}
			p := res[0].Value
			if len(p.Edges) != 3 || p.PageInfo.HasNextPage || len(res[1].Value.Edges) != 0 || res[1].Value.PageInfo.EndCursor != nil {
				t.Fatalf("pages = %+v, %+v", p, res[1].Value)
			}
			e1, e2, e3 := p.Edges[0].Event, p.Edges[1].Event, p.Edges[2].Event
			if e1.ID != "e1" || !e1.HasPayload || string(e1.Payload) != "null" || e1.ClaimedBy == nil {
				t.Errorf("e1 = %+v", e1)
			}
			if e2.ID != "e2" || e2.HasPayload || e2.Payload != nil || e2.ClaimedBy != nil || e2.ClaimedAt != nil || e2.EventName != "order.shipped" {
				t.Errorf("e2 = %+v", e2)
			}
			if e3.ID != "e3" || string(e3.Payload) != `{"a":1}` || e3.CreatedAt != *ms(4500) {
				t.Errorf("e3 = %+v", e3)
			}
		})

		t.Run("the lifecycle log pages by seq", func(t *testing.T) {
			var types []string
			var after *string
			for {
				res, err := j.r.RunEventPages(ctx, []snapshot.PageRequest{{Anchor: "stopped", First: ptr(1), After: after}})
				if err != nil || res[0].Err != nil {
					t.Fatal(err, res[0].Err)
				}
				for _, e := range res[0].Value.Edges {
					types = append(types, fmt.Sprintf("%d:%s", e.Event.Seq, e.Event.Type))
					if e.Event.Type == vocab.EventCancelled && (e.Event.CancellationReason == nil || *e.Event.CancellationReason != "operator asked") {
						t.Errorf("cancelled = %+v", e.Event)
					}
				}
				if !res[0].Value.PageInfo.HasNextPage {
					break
				}
				after = res[0].Value.PageInfo.EndCursor
			}
			if got := strings.Join(types, ","); got != "0:created,1:started,2:cancelled" {
				t.Fatalf("log = %s", got)
			}
		})

		t.Run("journal cursors are bound to their run and kind", func(t *testing.T) {
			end := j.stepPage("retry-ok", 1, nil).PageInfo.EndCursor
			c, err := cursor.Decode(*end)
			if err != nil || c.Kind != cursor.Steps || c.Anchor != "retry-ok" || c.Ordinal != journalT0+1000 || c.Last != "fetch" {
				t.Fatalf("cursor = %+v, %v", c, err)
			}
			children := childrenCursor(j.storePosition(t).Source, "retry-ok", 0, "x")
			steps, err := j.r.StepPages(ctx, []snapshot.PageRequest{{Anchor: "retrying", After: end}, {Anchor: "retry-ok", After: &children}, {Anchor: "retry-ok", After: end}})
			if err != nil {
				t.Fatal(err)
			}
			wantCode(t, steps[0].Err, fault.BadCursor)
			wantCode(t, steps[1].Err, fault.BadCursor)
			if steps[2].Err != nil || stepIDs([]snapshot.Step{steps[2].Value.Edges[0].Step}) != "nil" {
				t.Fatalf("continuing: %+v", steps[2])
			}
			events, err := j.r.InboundEventPages(ctx, []snapshot.PageRequest{{Anchor: "retry-ok", After: end}})
			if err != nil {
				t.Fatal(err)
			}
			if fe := wantCode(t, events[0].Err, fault.BadCursor); !strings.Contains(fe.Message, "steps") {
				t.Fatalf("message %q", fe.Message)
			}
			log, err := j.r.RunEventPages(ctx, []snapshot.PageRequest{{Anchor: "retry-ok", After: end}, {Anchor: "retry-ok", First: ptr(201)}})
			if err != nil {
				t.Fatal(err)
			}
			wantCode(t, log[0].Err, fault.BadCursor)
			wantCode(t, log[1].Err, fault.BadUserInput)
		})
	})
}

// TestJournalPaging pages a long journal with ties in creation time, in
// pages of every size, while the engine keeps adding steps after the
// pages read so far: every step that existed comes once, in order.
func TestJournalPaging(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		j := newJournal(t, d)
		ctx := context.Background()
		j.at(0)
		j.must(j.jw.CreateRun(ctx, engine.NewRun{ID: "long", FlowName: "journal"}))
		type key struct {
			at int64
			id string
		}
		var want []key
		j.must(j.jw.Do(ctx, func(tx *engine.Tx) error {
			for i := range 250 {
				id := fmt.Sprintf("s-%03d", 999-i) // ids fall while time rises: ties sort by id
				at := j.at(int64(1000 + i/3))
				want = append(want, key{at, id})
				if err := tx.AddStep(ctx, "long", engine.Step{ID: id, Type: vocab.StepRun}); err != nil {
					return err
				}
			}
			return nil
		}))
		slices.SortFunc(want, func(a, b key) int { return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.id, b.id)) })
		var ids []string
		for _, k := range want {
			ids = append(ids, k.id)
		}
		late := int64(900_000)
		for _, first := range []int{1, 7, 100, 200} {
			var got []snapshot.Step
			var after *string
			for n := 0; ; n++ {
				p := j.stepPage("long", first, after)
				got = append(got, j.stepsOf(p)...)
				if !p.PageInfo.HasNextPage {
					break
				}
				after = p.PageInfo.EndCursor
				if n < 5 {
					// A step created later is listed after every page read.
					j.at(late)
					late++
					j.must(j.jw.AddStep(ctx, "long", engine.Step{ID: fmt.Sprintf("late-%d-%04d", first, n), Type: vocab.StepRun}))
				}
			}
			gotIDs := strings.Split(stepIDs(got), ",")
			if !slices.Equal(gotIDs[:len(ids)], ids) {
				t.Fatalf("first %d: steps out of order or missing", first)
			}
			ids = gotIDs // the late steps are part of the next walk
		}
	})
}

func (j *journal) stepsOf(p *snapshot.StepPage) []snapshot.Step {
	j.t.Helper()
	out := make([]snapshot.Step, len(p.Edges))
	for i, e := range p.Edges {
		if e.Err != nil {
			j.t.Fatal(e.Err)
		}
		out[i] = e.Step
	}
	return out
}

// TestJournalStatements: a batch of pages, their attempts and the current
// steps of a batch of runs each cost one statement, however many runs.
func TestJournalStatements(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		j := newJournal(t, d)
		j.build()
		ids := []string{"retrying", "retry-ok", "exhausted", "sleeper", "waiter", "nested", "fresh", "idle", "stopped"}
		for _, n := range []int{1, len(ids)} {
			ctx, rd := j.r.Begin(context.Background())
			reqs := make([]snapshot.PageRequest, n)
			runs := make([]*snapshot.Run, n)
			for i := range n {
				reqs[i] = snapshot.PageRequest{Anchor: ids[i]}
			}
			res, err := j.r.Runs(ctx, ids[:n])
			if err != nil {
				t.Fatal(err)
			}
			for i, r := range res {
				runs[i] = r.Value.(*snapshot.Run)
			}
			pages, err := j.r.StepPages(ctx, reqs)
			if err != nil {
				t.Fatal(err)
			}
			var keys []snapshot.StepKey
			for _, p := range pages {
				for _, e := range p.Value.Edges {
					keys = append(keys, e.Step.Base().Key())
				}
			}
			if _, err := j.r.Attempts(ctx, keys, make([]*int, len(keys))); err != nil {
				t.Fatal(err)
			}
			if _, err := j.r.Steps(ctx, keys); err != nil {
				t.Fatal(err)
			}
			if _, err := j.r.CurrentSteps(ctx, runs); err != nil {
				t.Fatal(err)
			}
			if _, err := j.r.InboundEventPages(ctx, reqs); err != nil {
				t.Fatal(err)
			}
			if _, err := j.r.RunEventPages(ctx, reqs); err != nil {
				t.Fatal(err)
			}
			// position, runs, step pages, attempts, steps, current steps,
			// inbound pages, run event pages.
			if got := rd.Statements(); got != 8 {
				t.Errorf("%d runs: %d statements, want 8", n, got)
			}
			rd.End()
		}
	})
}

// TestJournalBrokenRows writes journal rows that break their shapes and
// reads them: each fails its own element with DECODE_FAILED, naming the
// run, and the rest of the read stands.
func TestJournalBrokenRows(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		j := newJournal(t, d)
		j.build()
		l := snapshottest.Loosen(t, j.db)
		l.LoosenJournal(t)
		ctx := context.Background()
		w := j.jw

		j.at(10_000)
		j.must(w.CreateRun(ctx, engine.NewRun{ID: "broken", FlowName: "journal"}))
		j.must(w.AddStep(ctx, "broken", engine.Step{ID: "ok-before", Type: vocab.StepRun}))
		j.must(w.StartAttempt(ctx, "broken", "ok-before", "good"))
		j.must(w.SucceedAttempt(ctx, "broken", "good", json.RawMessage(`1`)))
		j.at(10_001)
		j.must(w.StartAttempt(ctx, "broken", "ok-before", "bad"))
		// A succeeded attempt without a result type.
		l.Exec(t, `UPDATE flows_step_attempts SET state = 'succeeded', ended_at_ms = 5 WHERE run_id = 'broken' AND attempt_id = 'bad'`)
		j.must(w.AddStep(ctx, "broken", engine.Step{ID: "no-event", Type: vocab.StepWait, EventName: "x"}))
		// A wait step without an event name.
		l.Exec(t, `UPDATE flows_steps SET event_name = NULL WHERE run_id = 'broken' AND step_id = 'no-event'`)
		j.at(10_002)
		j.must(w.AddStep(ctx, "broken", engine.Step{ID: "claims", Type: vocab.StepWait, EventName: "y"}))
		j.must(w.AddInboundEvent(ctx, engine.InboundEvent{ID: "timeless", RunID: "broken", Name: "y"}))
		j.must(w.SatisfyWait(ctx, "broken", "claims", "timeless"))
		// A claim without a time.
		l.Exec(t, `UPDATE flows_inbound_events SET claimed_at_ms = NULL WHERE run_id = 'broken' AND event_id = 'timeless'`)
		j.at(10_003)
		j.must(w.AddStep(ctx, "broken", engine.Step{ID: "ok-after", Type: vocab.StepSleep, WakeAt: 1}))
		j.must(w.ElapseSleep(ctx, "broken", "ok-after"))
		j.must(w.AppendRunEvent(ctx, "broken", vocab.EventCreated, ""))
		l.Exec(t, `INSERT INTO flows_run_events (run_id, seq, recorded_at_ms, type, cancellation_reason) VALUES ('broken', 1, 1, 'started', 'why')`)

		p := j.stepPage("broken", 10, nil)
		if len(p.Edges) != 4 {
			t.Fatalf("%d edges", len(p.Edges))
		}
		if p.Edges[0].Err != nil || p.Edges[3].Err != nil || p.Edges[2].Err != nil {
			t.Fatalf("sound steps failed: %v %v %v", p.Edges[0].Err, p.Edges[2].Err, p.Edges[3].Err)
		}
		if fe := wantCode(t, p.Edges[1].Err, fault.DecodeFailed); fe.RunID != "broken" ||
			!strings.Contains(fe.Message, "without an event name") || !strings.Contains(fe.Message, `"no-event"`) || p.Edges[1].Step != nil {
			t.Fatalf("no-event: %v", fe)
		}
		ev, err := p.Edges[2].Step.(*snapshot.WaitStep).ClaimedEvent()
		if fe := wantCode(t, err, fault.DecodeFailed); ev != nil || !strings.Contains(fe.Message, "no claim time") {
			t.Fatalf("claimed event: %v", err)
		}
		inbound, err := j.r.InboundEventPages(ctx, []snapshot.PageRequest{{Anchor: "broken"}})
		if err != nil {
			t.Fatal(err)
		}
		wantCode(t, inbound[0].Value.Edges[0].Err, fault.DecodeFailed)

		att, err := j.r.Attempts(ctx, []snapshot.StepKey{{RunID: "broken", StepID: "ok-before"}}, []*int{nil})
		if err != nil {
			t.Fatal(err)
		}
		list := att[0].Value
		if len(list) != 2 || list[0].Err != nil || list[0].Value.ID != "good" {
			t.Fatalf("attempts = %+v", list)
		}
		if fe := wantCode(t, list[1].Err, fault.DecodeFailed); !strings.Contains(fe.Message, "without a result type") || fe.RunID != "broken" {
			t.Fatalf("bad attempt: %v", fe)
		}

		log, err := j.r.RunEventPages(ctx, []snapshot.PageRequest{{Anchor: "broken"}})
		if err != nil {
			t.Fatal(err)
		}
		if edges := log[0].Value.Edges; len(edges) != 2 || edges[0].Err != nil {
			t.Fatalf("log = %+v", edges)
		}
		wantCode(t, log[0].Value.Edges[1].Err, fault.DecodeFailed)

		// The run is blocked on the wait step it cannot decode.
		run := j.observed(t, "broken")
		cur, err := j.r.CurrentSteps(ctx, []*snapshot.Run{run})
		if err != nil {
			t.Fatal(err)
		}
		if cur[0].Value != nil {
			t.Fatalf("current = %+v", cur[0].Value.Base())
		}
		wantCode(t, cur[0].Err, fault.DecodeFailed)
	})
}
