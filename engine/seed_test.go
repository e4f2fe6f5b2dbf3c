package engine

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/flowsnap/flowsnap/fault"
	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/storetest"
)

func seed(t testing.TB, db *store.DB, opts SeedOptions) SeedStats {
	t.Helper()
	stats, err := Seed(context.Background(), db, opts)
	if err != nil {
		t.Fatalf("seeding: %v", err)
	}
	return stats
}

// TestSeedIsDeterministic checks that a seed names one history: the same
// rows and revisions in two stores, and another history for another seed.
func TestSeedIsDeterministic(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		// Small batches, so that batch boundaries are crossed many times.
		opts := SeedOptions{Runs: 1500, Seed: 7, BatchRuns: 97}
		if d == store.Postgres {
			opts.Runs, opts.BatchRuns = 600, 37 // PostgreSQL's triggers are slower
		}
		a, b, c := storetest.Open(t, d), storetest.Open(t, d), storetest.Open(t, d)
		seed(t, a, opts)
		seed(t, b, opts)
		opts.Seed = 8
		seed(t, c, opts)
		da, db, dc := digest(t, a), digest(t, b), digest(t, c)
		if da != db {
			t.Errorf("the same seed gave two histories")
		}
		if da == dc {
			t.Errorf("two seeds gave the same history")
		}
		// The batch size orders the writes, and so the revisions, but
		// changes nothing else.
		e := storetest.Open(t, d)
		opts.Seed, opts.BatchRuns = 7, 0
		seed(t, e, opts)
		if digestOf(t, e, false) != digestOf(t, a, false) {
			t.Errorf("the batch size changed the history")
		}
	})
}

// TestSeedRefusesAStoreThatHeldRuns keeps a seed from mixing with history.
func TestSeedRefusesAStoreThatHeldRuns(t *testing.T) {
	t.Parallel()
	db := storetest.Open(t, store.SQLite)
	seed(t, db, SeedOptions{Runs: 10})
	_, err := Seed(context.Background(), db, SeedOptions{Runs: 10})
	wantCode(t, err, fault.BadUserInput)
	_, err = Seed(context.Background(), db, SeedOptions{Runs: -1})
	wantCode(t, err, fault.BadUserInput)
}

// TestSeedMakesARealisticHistory checks the seeded store against what the
// demo, the reader's tests and the benchmarks rely on: at 20,000 runs a
// parent with 1,000 children and a lineage of 100 rounds, every status and
// waiting kind, tombstones, journals of every shape, and revisions kept by
// the store for every run.
func TestSeedMakesARealisticHistory(t *testing.T) {
	t.Parallel()
	sizes := map[store.Dialect]int{store.SQLite: 20000, store.Postgres: 5000}
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		n := sizes[d]
		db := storetest.Open(t, d)
		stats := seed(t, db, SeedOptions{Runs: n, Seed: 1})
		checkHistory(t, db, n, stats)
	})
}

func checkHistory(t *testing.T, db *store.DB, n int, stats SeedStats) {
	t.Helper()
	wantChildren, wantRounds := int64(min(10000, n/20)), int64(min(1000, n/200))
	source := position(t, db)
	checks := []struct {
		name  string
		query string
		ok    func(int64) bool
		args  []any
	}{
		{"every run id ever created has a change row", `SELECT COUNT(*) FROM flows_run_changes`,
			func(v int64) bool { return v == int64(n) }, nil},
		{"live runs are the runs created less the collected", `SELECT COUNT(*) FROM flows_runs`,
			func(v int64) bool { return v == int64(n-stats.Deleted) }, nil},
		{"every live run has a live change row within the position",
			`SELECT COUNT(*) FROM flows_runs r JOIN flows_run_changes c ON c.run_id = r.run_id
			 WHERE c.deleted = 0 AND c.revision BETWEEN 1 AND $1`,
			func(v int64) bool { return v == int64(n-stats.Deleted) }, []any{source}},
		{"the newest change is the position", `SELECT MAX(revision) FROM flows_run_changes`,
			func(v int64) bool { return v == source }, nil},
		{"collected runs are tombstones", `SELECT COUNT(*) FROM flows_run_changes c
			 WHERE c.deleted = 1 AND NOT EXISTS (SELECT 1 FROM flows_runs r WHERE r.run_id = c.run_id)`,
			func(v int64) bool { return v == int64(stats.Deleted) && v > 0 }, nil},
		{"a parent has the largest fan-out",
			`SELECT MAX(n) FROM (SELECT COUNT(*) AS n FROM flows_run_parents GROUP BY parent_id) x`,
			func(v int64) bool { return v >= wantChildren }, nil},
		{"a lineage has the most rounds",
			`SELECT MAX(n) FROM (SELECT COUNT(*) AS n FROM flows_runs GROUP BY COALESCE(lineage_id, run_id)) x`,
			func(v int64) bool { return v >= wantRounds }, nil},
		{"rounds follow one another", `SELECT COUNT(*) FROM flows_runs r JOIN flows_runs p ON p.run_id = r.parent_run_id
			 WHERE r.lineage_id IS NOT NULL AND COALESCE(p.round_ordinal, 0) <> r.round_ordinal - 1`,
			func(v int64) bool { return v == 0 }, nil},
		{"joins have two parents and no parent_run_id",
			`SELECT COUNT(*) FROM flows_runs r WHERE r.parent_run_id IS NULL
			 AND (SELECT COUNT(*) FROM flows_run_parents e WHERE e.child_id = r.run_id) = 2`,
			func(v int64) bool { return v > 0 }, nil},
		{"the effective parent is parent_run_id or the earliest edge",
			`SELECT COUNT(*) FROM flows_runs r WHERE COALESCE(r.execution_parent_id, '') <> COALESCE(r.parent_run_id,
			   (SELECT e.parent_id FROM flows_run_parents e WHERE e.child_id = r.run_id ORDER BY e.seq, e.parent_id LIMIT 1), '')`,
			func(v int64) bool { return v == 0 }, nil},
		{"owners are set exactly on running runs", `SELECT COUNT(*) FROM flows_runs
			 WHERE (status = 'running') <> (owner_host_id IS NOT NULL AND heartbeat_at_ms IS NOT NULL)`,
			func(v int64) bool { return v == 0 }, nil},
		{"some heartbeats are stale", `SELECT COUNT(*) FROM flows_runs WHERE status = 'running' AND heartbeat_at_ms < $1`,
			func(v int64) bool { return v > 0 }, []any{DefaultSeedNow - 2*minute}},
		{"some pending runs are claimed", `SELECT COUNT(*) FROM flows_runs WHERE status = 'pending' AND claim_nonce IS NOT NULL`,
			func(v int64) bool { return v > 0 }, nil},
		{"waiting runs carry tokens", `SELECT COUNT(*) FROM flows_runs WHERE status = 'suspended' AND waiting_token IS NOT NULL`,
			func(v int64) bool { return v > 0 }, nil},
		{"only suspended runs wait", `SELECT COUNT(*) FROM flows_runs WHERE (status = 'suspended') <> (waiting_reason IS NOT NULL)`,
			func(v int64) bool { return v == 0 }, nil},
		{"cancellations are requested only", `SELECT COUNT(*) FROM flows_runs WHERE cancel_requested_at_ms IS NOT NULL AND cancel_acknowledgement_json IS NULL AND status <> 'cancelled'`,
			func(v int64) bool { return v > 0 }, nil},
		{"and acknowledged", `SELECT COUNT(*) FROM flows_runs WHERE cancel_acknowledgement_json IS NOT NULL`,
			func(v int64) bool { return v > 0 }, nil},
		{"every started run has a journal", `SELECT COUNT(*) FROM flows_runs r WHERE r.started_at_ms IS NOT NULL
			 AND NOT EXISTS (SELECT 1 FROM flows_steps s WHERE s.run_id = r.run_id)`,
			func(v int64) bool { return v == 0 }, nil},
		{"every run has a lifecycle log", `SELECT COUNT(*) FROM flows_runs r
			 WHERE NOT EXISTS (SELECT 1 FROM flows_run_events e WHERE e.run_id = r.run_id AND e.type = 'created')`,
			func(v int64) bool { return v == 0 }, nil},
		{"retries ran out", `SELECT COUNT(*) FROM flows_steps s WHERE s.max_attempts = 3 AND 3 = (SELECT COUNT(*)
			 FROM flows_step_attempts a WHERE a.run_id = s.run_id AND a.step_id = s.step_id AND a.state = 'failed')`,
			func(v int64) bool { return v > 0 }, nil},
		{"retries succeeded", `SELECT COUNT(*) FROM flows_steps s WHERE s.max_attempts = 5
			 AND EXISTS (SELECT 1 FROM flows_step_attempts a WHERE a.run_id = s.run_id AND a.step_id = s.step_id AND a.state = 'failed')
			 AND EXISTS (SELECT 1 FROM flows_step_attempts a WHERE a.run_id = s.run_id AND a.step_id = s.step_id AND a.state = 'succeeded')`,
			func(v int64) bool { return v > 0 }, nil},
		{"steps returned JSON null", `SELECT COUNT(*) FROM flows_step_attempts WHERE result_type = 'json' AND CAST(result_json AS TEXT) = 'null'`,
			func(v int64) bool { return v > 0 }, nil},
		{"steps returned nothing", `SELECT COUNT(*) FROM flows_step_attempts WHERE result_type = 'none' AND result_json IS NULL`,
			func(v int64) bool { return v > 0 }, nil},
		{"attempts are in flight", `SELECT COUNT(*) FROM flows_step_attempts WHERE state = 'started'`,
			func(v int64) bool { return v > 0 }, nil},
		{"steps are nested", `SELECT COUNT(*) FROM flows_steps WHERE parent_step_id IS NOT NULL`,
			func(v int64) bool { return v > 0 }, nil},
		{"sleeps elapsed", `SELECT COUNT(*) FROM flows_steps WHERE type = 'sleep' AND state = 'elapsed'`,
			func(v int64) bool { return v > 0 }, nil},
		{"sleeps wait", `SELECT COUNT(*) FROM flows_steps WHERE type = 'sleep' AND state = 'waiting'`,
			func(v int64) bool { return v > 0 }, nil},
		{"waits were satisfied by claimed events", `SELECT COUNT(*) FROM flows_steps s JOIN flows_inbound_events e
			 ON e.run_id = s.run_id AND e.claimed_by = s.step_id WHERE s.type = 'wait' AND s.state = 'satisfied'`,
			func(v int64) bool { return v > 0 }, nil},
		{"every satisfied wait claimed an event", `SELECT COUNT(*) FROM flows_steps s WHERE s.type = 'wait' AND s.state = 'satisfied'
			 AND NOT EXISTS (SELECT 1 FROM flows_inbound_events e WHERE e.run_id = s.run_id AND e.claimed_by = s.step_id)`,
			func(v int64) bool { return v == 0 }, nil},
		{"waits timed out", `SELECT COUNT(*) FROM flows_steps WHERE type = 'wait' AND state = 'timed_out'`,
			func(v int64) bool { return v > 0 }, nil},
		{"waits wait", `SELECT COUNT(*) FROM flows_steps WHERE type = 'wait' AND state = 'waiting'`,
			func(v int64) bool { return v > 0 }, nil},
		{"events came without payload", `SELECT COUNT(*) FROM flows_inbound_events WHERE payload IS NULL`,
			func(v int64) bool { return v > 0 }, nil},
		{"events came with a JSON null payload", `SELECT COUNT(*) FROM flows_inbound_events WHERE CAST(payload AS TEXT) = 'null'`,
			func(v int64) bool { return v > 0 }, nil},
		{"events wait to be claimed", `SELECT COUNT(*) FROM flows_inbound_events WHERE claimed_by IS NULL`,
			func(v int64) bool { return v > 0 }, nil},
		{"cancellations have reasons", `SELECT COUNT(*) FROM flows_run_events WHERE type = 'cancelled' AND cancellation_reason IS NOT NULL`,
			func(v int64) bool { return v > 0 }, nil},
		{"runs paused and resumed", `SELECT COUNT(*) FROM flows_run_events WHERE type = 'resumed'`,
			func(v int64) bool { return v > 0 }, nil},
	}
	for _, c := range checks {
		if v := count(t, db, c.query, c.args...); !c.ok(v) {
			t.Errorf("%s: got %d", c.name, v)
		}
	}
	statuses := column(t, db, `SELECT DISTINCT status FROM flows_runs ORDER BY status`)
	if len(statuses) != 6 {
		t.Errorf("statuses %v, want all six", statuses)
	}
	reasons := map[string]bool{}
	for _, r := range column(t, db, `SELECT DISTINCT waiting_reason FROM flows_runs WHERE waiting_reason IS NOT NULL`) {
		reasons[r] = true
	}
	for _, want := range []string{"timer", "approval", "quota", "human", "event", "signal"} {
		if !reasons[want] {
			t.Errorf("no run waits on %s", want)
		}
	}
	if len(reasons) < 7 {
		t.Errorf("no run waits for a reason of kind other: %v", reasons)
	}
	for _, typ := range []string{"created", "started", "paused", "resumed", "completed", "failed", "cancelled"} {
		if count(t, db, `SELECT COUNT(*) FROM flows_run_events WHERE type = $1`, typ) == 0 {
			t.Errorf("no %s run event", typ)
		}
	}
}

// TestSeedAMillionRuns times the demo's largest seed. It takes a while, so
// it runs only when FLOWSNAP_SEED_MILLION is set (to the number of runs, or
// to 1 for a million).
func TestSeedAMillionRuns(t *testing.T) {
	v := os.Getenv("FLOWSNAP_SEED_MILLION")
	if v == "" {
		t.Skip("set FLOWSNAP_SEED_MILLION to seed a million runs")
	}
	n, _ := strconv.Atoi(v)
	if n <= 1 {
		n = 1_000_000
	}
	db := storetest.Open(t, store.SQLite)
	start := time.Now()
	stats := seed(t, db, SeedOptions{Runs: n, Seed: 1, Progress: testWriter{t}})
	el := time.Since(start)
	t.Logf("seeded %d runs in %.1fs (%.0f runs/s): %d steps, %d attempts, %d inbound events, %d run events, %d edges, %d tombstones, %d transactions",
		n, el.Seconds(), float64(n)/el.Seconds(), stats.Steps, stats.Attempts, stats.InboundEvents, stats.RunEvents, stats.Edges, stats.Deleted, stats.Transactions)
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p[:len(p)-1]))
	return len(p), nil
}
