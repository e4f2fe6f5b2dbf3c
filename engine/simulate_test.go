package engine

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/storetest"
)

// TestSimulateKeepsWriting runs the simulated engine for two seconds at a
// high rate, on a seeded store and on an empty one, and checks that it
// committed many transactions, reported its rate, and left the store
// consistent.
func TestSimulateKeepsWriting(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		for _, seeded := range []bool{true, false} {
			name := "an empty store"
			if seeded {
				name = "a seeded store"
			}
			t.Run(name, func(t *testing.T) {
				db := storetest.Open(t, d)
				if seeded {
					runs := 2000
					if d == store.Postgres {
						runs = 500
					}
					seed(t, db, SeedOptions{Runs: runs, Seed: 3})
				}
				before := position(t, db)
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				var out bytes.Buffer
				const want = 200
				stats, err := simulate(ctx, db, SimOptions{Rate: 400, Seed: 5, Out: &out, ReportEvery: 100 * time.Millisecond, stopAfter: want})
				if err != nil {
					t.Fatalf("simulate: %v", err)
				}
				t.Logf("%+v", stats)
				// The count of transactions, not the time they take: a loaded
				// machine or the race detector slows the store down a lot.
				if stats.Transactions != want {
					t.Errorf("%d transactions within a minute, want %d", stats.Transactions, want)
				}
				if stats.Conflicts > stats.Transactions/10 {
					t.Errorf("%d conflicts in %d transactions: the simulator loses track of its runs", stats.Conflicts, stats.Transactions)
				}
				if !strings.Contains(out.String(), "tx/s") {
					t.Errorf("no rate reported: %q", out.String())
				}
				if after := position(t, db); after <= before {
					t.Errorf("position %d→%d, want it advanced", before, after)
				}
				if n := count(t, db, `SELECT COUNT(*) FROM flows_runs r LEFT JOIN flows_run_changes c ON c.run_id = r.run_id
					WHERE c.deleted IS NULL OR c.deleted <> 0`); n != 0 {
					t.Errorf("%d live runs without a live change row", n)
				}
				if n := count(t, db, `SELECT COUNT(*) FROM flows_steps s JOIN flows_runs r ON r.run_id = s.run_id
					WHERE r.status = 'running' AND s.state = 'waiting'`); n != 0 {
					t.Errorf("%d running runs still wait in a step", n)
				}
				if stats.Transactions < 300 {
					return // too few to expect every kind of action
				}
				if n := count(t, db, `SELECT COUNT(*) FROM flows_runs WHERE lineage_id IS NOT NULL AND run_id LIKE 'sim-%'`); n == 0 {
					t.Errorf("no lineage was continued")
				}
				if n := count(t, db, `SELECT COUNT(*) FROM flows_run_parents WHERE child_id LIKE 'sim-%'`); n == 0 {
					t.Errorf("no child was spawned")
				}
				if seeded && stats.Deleted == 0 {
					t.Errorf("no finished run was collected")
				}
			})
		}
	})
}

// TestSimulateCanBeRestartedOnItsOwnStore runs the simulated engine three
// times, with the same seed, on one store: each run picks up the runs the
// one before left open and must not reuse the ids of their journal rows.
func TestSimulateCanBeRestartedOnItsOwnStore(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		db := storetest.Open(t, d)
		seed(t, db, SeedOptions{Runs: 300, Seed: 3})
		for i := range 3 {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			stats, err := simulate(ctx, db, SimOptions{Rate: 400, Seed: 1})
			cancel()
			if err != nil {
				t.Fatalf("simulate, round %d: %v", i+1, err)
			}
			if stats.Transactions == 0 {
				t.Fatalf("simulate, round %d: no transaction", i+1)
			}
		}
	})
}
