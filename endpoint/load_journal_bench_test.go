package endpoint_test

import (
	"context"
	"testing"

	"github.com/flowsnap/flowsnap/store"
)

// journalSelection selects every field of a run's journal: a page of 20
// steps with every field of each kind (a run step's last 5 attempts, a wait
// step's claimed event), the current step, and pages of 20 inbound events
// and 20 entries of the lifecycle log.
const journalSelection = `steps(first: 20) { edges { cursor node { __typename id type state createdAt resolvedAt parentStepId parentStep { id }
		... on RunStep { maxAttempts attemptCount nextAttemptAt
			attempts(last: 5) { id number state startedAt endedAt resultType result errorName errorMessage nextAttemptAt } }
		... on SleepStep { wakeAt }
		... on WaitStep { eventName timeoutAt claimedEvent { id eventName hasPayload payload createdAt claimedBy claimedAt } } } }
		pageInfo { hasNextPage endCursor } }
	currentStep { __typename id type state createdAt }
	inboundEvents(first: 20) { edges { cursor node { id eventName hasPayload payload createdAt claimedBy claimedAt } } pageInfo { hasNextPage endCursor } }
	events(first: 20) { edges { cursor node { seq type recordedAt cancellationReason } } pageInfo { hasNextPage endCursor } }`

// The same rows by bare SQL: the run, a page of its steps, their
// attempts, its latest step, a page of its inbound events and one of its
// log.
const (
	rawJournalRun      = `SELECT r.run_id, r.status, r.created_at_ms, r.finished_at_ms FROM flows_runs r WHERE r.run_id = $1`
	rawJournalSteps    = `SELECT step_id, type, created_at_ms, state, max_attempts, target_wake_at_ms, event_name, timeout_at_ms, resolved_at_ms, parent_step_id FROM flows_steps WHERE run_id = $1 ORDER BY created_at_ms, step_id LIMIT 21`
	rawJournalAttempts = `SELECT attempt_id, step_id, started_at_ms, state, ended_at_ms, result_type, result_json, error_message, error_name, next_attempt_at_ms FROM flows_step_attempts WHERE run_id = $1 ORDER BY step_id, started_at_ms, attempt_id`
	rawJournalLatest   = `SELECT step_id, type, state, created_at_ms FROM flows_steps WHERE run_id = $1 ORDER BY created_at_ms DESC, step_id DESC LIMIT 1`
	rawJournalInbound  = `SELECT event_id, event_name, payload, created_at_ms, claimed_by, claimed_at_ms FROM flows_inbound_events WHERE run_id = $1 ORDER BY created_at_ms, event_id LIMIT 21`
	rawJournalLog      = `SELECT seq, recorded_at_ms, type, cancellation_reason FROM flows_run_events WHERE run_id = $1 ORDER BY seq LIMIT 21`
)

// loadJournalShape is the shape of BenchmarkLoad that reads a run's
// journal (journal): journalSelection on one run, each of the store's
// runs with the most steps among those with inbound events standing for
// one of the benchmark's anchors, beside bare SQL reading the same rows
// and beside the same request answered by gqlgen's executor
// (flowsnapNoDirect), which is what every journal field cost before the
// direct answer wrote them.
func loadJournalShape(b *testing.B, db *store.DB, anchors []string) loadShape {
	ctx := context.Background()
	tx, err := db.BeginRead(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	rows, err := tx.Query(ctx, `SELECT s.run_id FROM flows_steps s
		WHERE EXISTS (SELECT 1 FROM flows_inbound_events e WHERE e.run_id = s.run_id)
		GROUP BY s.run_id ORDER BY count(*) DESC, s.run_id LIMIT $1`, len(anchors))
	if err != nil {
		b.Fatal(err)
	}
	var runs []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			b.Fatal(err)
		}
		runs = append(runs, id)
	}
	rows.Close()
	if len(runs) == 0 {
		b.Fatal("the seeded store has no run with steps and inbound events")
	}
	runOf := make(map[string]string, len(anchors))
	for i, a := range anchors {
		runOf[a] = runs[i%len(runs)]
	}
	return loadShape{name: "journal",
		query: `query($id: ID!) { run(id: $id) { ... on Run { id status ` + journalSelection + ` } } }`,
		vars:  func(id string) map[string]any { return map[string]any{"id": runOf[id]} },
		raw: func(tx store.Tx, id string) error {
			for _, q := range []string{rawJournalRun, rawJournalSteps, rawJournalAttempts, rawJournalLatest, rawJournalInbound, rawJournalLog} {
				if err := rawRows(tx, q, runOf[id]); err != nil {
					return err
				}
			}
			return nil
		},
		every:    `query($id: ID!) { run(id: $id) { ` + everyRunFieldAnd(journalSelection) + ` } }`,
		noDirect: true,
	}
}
