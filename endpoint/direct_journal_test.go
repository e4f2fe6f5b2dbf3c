package endpoint_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/flowsnap/flowsnap/engine"
	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/vocab"
)

// writeDirectJournal adds to a fixture's store runs whose journals hold
// every kind of step, attempt, inbound event and log entry, for the direct
// answer's tests, written by the reference writer:
//
//	j-all      suspended on the wait step "pay": "fetch" failed once
//	           (NetworkError, odd text) and returned JSON; "outer" runs,
//	           enclosing "outer.1", which returned nothing and encloses
//	           "outer.1.a", which returned JSON null; "nap" elapsed;
//	           "approve" was satisfied by e1 (odd payload); e2 has no
//	           payload, e3 a payload of JSON null; its log holds CREATED,
//	           STARTED and PAUSED
//	j-retrying running, blocked on the run step "call", retried at 9 s
//	j-sleeper  suspended on the sleep "nap-2"
//	j-stopped  cancelled, its log ending with a reason
//
// With broken set it also writes run "broken" (writeBrokenJournal), whose
// journal holds rows that do not decode.
func writeDirectJournal(t *testing.T, db *store.DB, broken bool) {
	t.Helper()
	ctx := context.Background()
	now := t0
	w := engine.NewWriter(db, func() int64 { return now })
	set := func(ms int64) { now = t0 + ms }
	owner := vocab.Owner{HostID: "host-j", PID: 7, Nonce: "nonce-j"}
	for _, id := range []string{"j-all", "j-retrying", "j-sleeper", "j-stopped"} {
		must(t, w.CreateRun(ctx, engine.NewRun{ID: id, FlowName: "journal"}))
		must(t, w.AppendRunEvent(ctx, id, vocab.EventCreated, ""))
		must(t, w.Start(ctx, id, owner))
		must(t, w.AppendRunEvent(ctx, id, vocab.EventStarted, ""))
	}
	step := func(run string, s engine.Step) { t.Helper(); must(t, w.AddStep(ctx, run, s)) }
	start := func(run, step, attempt string) { t.Helper(); must(t, w.StartAttempt(ctx, run, step, attempt)) }

	set(1000)
	step("j-all", engine.Step{ID: "fetch", Type: vocab.StepRun, MaxAttempts: 5})
	start("j-all", "fetch", "a1")
	set(1200)
	must(t, w.FailAttempt(ctx, "j-all", "a1", engine.AttemptError{Message: "reset \"by\" <peer> & \u2028 é", Name: "NetworkError", NextAttemptAt: t0 + 2000}))
	set(2000)
	start("j-all", "fetch", "a2")
	set(2100)
	must(t, w.SucceedAttempt(ctx, "j-all", "a2", json.RawMessage("{ \"ok\" : true,\n \"n\": [1, 2.50], \"html\": \"<b>&amp;</b>\" }")))
	set(3000)
	step("j-all", engine.Step{ID: "outer", Type: vocab.StepRun})
	start("j-all", "outer", "a3")
	set(3100)
	step("j-all", engine.Step{ID: "outer.1", Type: vocab.StepRun, ParentStepID: "outer", MaxAttempts: 2})
	start("j-all", "outer.1", "a4")
	set(3150)
	step("j-all", engine.Step{ID: "outer.1.a", Type: vocab.StepRun, ParentStepID: "outer.1"})
	start("j-all", "outer.1.a", "a5")
	must(t, w.SucceedAttempt(ctx, "j-all", "a5", json.RawMessage(`null`)))
	set(3200)
	must(t, w.SucceedAttempt(ctx, "j-all", "a4", nil))
	set(4000)
	step("j-all", engine.Step{ID: "nap", Type: vocab.StepSleep, WakeAt: t0 + 5000})
	set(5000)
	must(t, w.ElapseSleep(ctx, "j-all", "nap"))
	set(6000)
	step("j-all", engine.Step{ID: "approve", Type: vocab.StepWait, EventName: "approval.decided", TimeoutAt: t0 + 60_000})
	set(6500)
	must(t, w.AddInboundEvent(ctx, engine.InboundEvent{ID: "e1", RunID: "j-all", Name: "approval.decided",
		Payload: json.RawMessage("{ \"by\": \"<ops>\",\t\"ok\": true }")}))
	set(6600)
	must(t, w.SatisfyWait(ctx, "j-all", "approve", "e1"))
	set(7000)
	must(t, w.AddInboundEvent(ctx, engine.InboundEvent{ID: "e2", RunID: "j-all", Name: "order.shipped"}))
	must(t, w.AddInboundEvent(ctx, engine.InboundEvent{ID: "e3", RunID: "j-all", Name: "order.noted", Payload: json.RawMessage(`null`)}))
	set(8000)
	step("j-all", engine.Step{ID: "pay", Type: vocab.StepWait, EventName: "order.paid"})
	must(t, w.Wait(ctx, "j-all", engine.Waiting{Reason: "event"}))
	must(t, w.AppendRunEvent(ctx, "j-all", vocab.EventPaused, ""))

	set(1000)
	step("j-retrying", engine.Step{ID: "call", Type: vocab.StepRun, MaxAttempts: 4})
	start("j-retrying", "call", "a1")
	set(1500)
	must(t, w.FailAttempt(ctx, "j-retrying", "a1", engine.AttemptError{Message: "rate limited", NextAttemptAt: t0 + 9000}))

	set(1000)
	step("j-sleeper", engine.Step{ID: "nap-1", Type: vocab.StepSleep, WakeAt: t0 + 2000})
	set(2000)
	must(t, w.ElapseSleep(ctx, "j-sleeper", "nap-1"))
	set(3000)
	step("j-sleeper", engine.Step{ID: "nap-2", Type: vocab.StepSleep, WakeAt: t0 + 99_000})
	must(t, w.Wait(ctx, "j-sleeper", engine.Waiting{Reason: "timer", WakeAt: t0 + 99_000}))

	set(1000)
	must(t, w.Cancel(ctx, "j-stopped"))
	must(t, w.AppendRunEvent(ctx, "j-stopped", vocab.EventCancelled, "operator \"asked\" <&>"))

	if broken {
		writeBrokenJournal(t, db, w, set)
	}
}

// directJournalCases are the journal's operations for
// TestDirectAnswersAsTheExecutor; after is the cursor after the second of
// j-all's steps, brokenAfter the one after the second of broken's.
func directJournalCases(after, brokenAfter string) []directCase {
	attempt := `{ __typename id number state startedAt endedAt resultType result errorName errorMessage nextAttemptAt }`
	event := `{ __typename id eventName hasPayload payload createdAt claimedBy claimedAt }`
	step := `{ __typename id type state createdAt resolvedAt parentStepId
		parentStep { __typename id type ... on RunStep { attemptCount parentStep { id } } }
		... on RunStep { maxAttempts attemptCount nextAttemptAt attempts ` + attempt + ` }
		... on SleepStep { wakeAt }
		... on WaitStep { eventName timeoutAt claimedEvent ` + event + ` } }`
	info := `pageInfo { __typename hasNextPage hasPreviousPage startCursor endCursor }`
	journal := `steps { __typename edges { __typename cursor node ` + step + ` } nodes ` + step + ` ` + info + ` }
		currentStep ` + step + `
		inboundEvents { __typename edges { __typename cursor node ` + event + ` } nodes ` + event + ` ` + info + ` }
		events { __typename edges { __typename cursor node { __typename seq type recordedAt cancellationReason } }
			nodes { seq type recordedAt cancellationReason } ` + info + ` }`
	// A batch's pages are small, to stay within the complexity limit.
	small := `steps(first: 10) { edges { cursor node { id type state parentStep { id }
			... on RunStep { attempts(last: 3) { number state errorName result } } ... on WaitStep { claimedEvent { id payload } } } } ` + info + ` }
		currentStep ` + step + `
		inboundEvents(first: 5) { nodes ` + event + ` }
		events(first: 5) { edges { cursor node { seq type recordedAt cancellationReason } } ` + info + ` }`
	runs := []any{"j-all", "j-retrying", "j-sleeper", "j-stopped", "runner", "gone", "j-all"}
	return []directCase{
		{name: "every field of a journal", cached: true, direct: true,
			query: `query($id: ID!) { run(id: $id) { ... on Run { id ` + journal + ` } } }`,
			vars:  map[string]any{"id": "j-all"}},
		{name: "the journals of a batch, currentStep of each kind and none", cached: true, direct: true,
			query: `query($ids: [ID!]!) { runs(ids: $ids) { __typename ... on Run { id status ` + small + ` } ... on MissingRun { id } } }`,
			vars:  map[string]any{"ids": runs}},
		{name: "pages with first and after", cached: true, direct: true,
			query: `query($after: String) { run(id: "j-all") { ... on Run {
				a: steps(first: 2) { edges { cursor node { id } } pageInfo { hasNextPage endCursor } }
				b: steps(first: 2, after: $after) { nodes { id ... on RunStep { attempts(last: 1) { number state } } } pageInfo { hasNextPage startCursor endCursor } }
				c: steps(after: "") { nodes { id } }
				inboundEvents(first: 1) { edges { cursor node { id } } pageInfo { hasNextPage } }
				events(first: 2) { nodes { seq type } pageInfo { hasNextPage endCursor } } } } }`,
			vars: map[string]any{"after": after}},
		{name: "attempts with last, and a null last", cached: true, direct: true,
			query: `query($last: Int) { run(id: "j-all") { ... on Run { steps { nodes { id ... on RunStep {
				one: attempts(last: 1) { number id } all: attempts(last: $last) { number id } dflt: attempts { number } } } } } } }`,
			vars: map[string]any{"last": nil}},
		{name: "parentStep of parentStep, through the interface and each kind", cached: true, direct: true,
			query: `{ run(id: "j-all") { ... on Run { currentStep { id parentStep { id } }
				steps { nodes { id parentStepId parentStep { __typename id parentStepId parentStep { id state ... on RunStep { attempts { id } } } } } } } } }`},
		{name: "currentStep of each kind", cached: true, direct: true,
			query: `{ a: run(id: "j-all") { ... on Run { currentStep { __typename id state ... on WaitStep { eventName claimedEvent { id } } } } }
				r: run(id: "j-retrying") { ... on Run { currentStep { __typename id state ... on RunStep { nextAttemptAt attempts(last: 1) { errorMessage nextAttemptAt } } } } }
				s: run(id: "j-sleeper") { ... on Run { currentStep { __typename id ... on SleepStep { wakeAt } } } }
				x: run(id: "j-stopped") { ... on Run { status currentStep { id } events { nodes { type cancellationReason } } } } }`},
		{name: "the journal below a children page and a parent", cached: true, direct: true,
			query: `{ run(id: "parent") { ... on Run { children(first: 2) { nodes { ... on Run { id currentStep { id } steps { nodes { id } } } } } } }
				c: run(id: "child-001") { ... on Run { parent { ... on Run { id events { nodes { seq } } inboundEvents { nodes { id } } } } } } }`},
		{name: "a journal field selected twice, with and without fragments", cached: true, direct: true,
			query: `{ run(id: "j-all") { ... on Run { steps { nodes { id ...S } } ...J } } }
				fragment S on Step { state ... on WaitStep { eventName } }
				fragment J on Run { steps { nodes { type } } currentStep { ... on Step { id } } }`},
		// What the journal leaves to the executor.
		{name: "a step row that does not decode", code: "DECODE_FAILED",
			query: `{ run(id: "broken") { ... on Run { steps { nodes { id } } } } }`},
		{name: "a step's edge whose row does not decode", code: "DECODE_FAILED",
			query: `{ run(id: "broken") { ... on Run { steps { edges { cursor node { id } } } } } }`},
		{name: "an attempt row that does not decode", code: "DECODE_FAILED",
			query: `{ run(id: "broken") { ... on Run { steps(first: 1) { nodes { id ... on RunStep { attempts { id state } } } } } } }`},
		{name: "a claimed event whose row does not decode", code: "DECODE_FAILED",
			query: `query($after: String) { run(id: "broken") { ... on Run { steps(first: 1, after: $after) { nodes { id ... on WaitStep { claimedEvent { id } } } } } } }`,
			vars:  map[string]any{"after": brokenAfter}},
		{name: "a log entry that does not decode", code: "DECODE_FAILED",
			query: `{ run(id: "broken") { ... on Run { events { nodes { seq type } } } } }`},
		{name: "a bad journal cursor", code: "BAD_CURSOR", query: `{ run(id: "j-all") { ... on Run { steps(after: "nope") { nodes { id } } } } }`},
		{name: "a journal page too large", code: "BAD_USER_INPUT", query: `{ run(id: "j-all") { ... on Run { events(first: 201) { nodes { seq } } } } }`},
		{name: "attempts out of range", code: "BAD_USER_INPUT", query: `{ run(id: "j-all") { ... on Run { steps { nodes { ... on RunStep { attempts(last: 0) { id } } } } } } }`},
	}
}
