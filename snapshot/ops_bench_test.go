package snapshot_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flowsnap/flowsnap/engine"
	"github.com/flowsnap/flowsnap/snapshot"
	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/storetest"
	"github.com/flowsnap/flowsnap/store/vocab"
)

// benchOpsRuns is the size of the stores BenchmarkOps fills:
// FLOWSNAP_BENCH_OPS_RUNS, default 50,000; set it to 1000000 for the
// figures at a million runs.
func benchOpsRuns(b *testing.B) int {
	if s := os.Getenv("FLOWSNAP_BENCH_OPS_RUNS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1000 {
			b.Fatalf("FLOWSNAP_BENCH_OPS_RUNS=%q is not a number of runs ≥ 1000", s)
		}
		return n
	}
	return 50_000
}

// opsBenchSeed is how many runs the seeder writes before the store is
// filled up by copies of them.
const opsBenchSeed = 20_000

// fillByCopies grows a seeded store to n runs with copies of its runs,
// each copy k with its ids suffixed, its times k weeks earlier and its flow
// name, for one copy in two, suffixed with k mod 8 (so the store has a few
// hundred flows). A copy keeps its original's status, owner, waiting and
// cancellation, and its parent when the original has one by parent_run_id
// (a spawn edge's child loses its parent: copies have no edges). Seeding a
// million runs with the seeder takes far longer than reading them.
func fillByCopies(b *testing.B, db *store.DB, d store.Dialect, n int) {
	ctx := context.Background()
	flow := `json_set(state_json, '$.flowName', json_extract(state_json, '$.flowName') || '-' || $2)`
	if d == store.Postgres {
		flow = `jsonb_set(state_json::jsonb, '{flowName}', to_jsonb((state_json::json ->> 'flowName') || '-' || $2))::text`
	}
	const week = 7 * 24 * 3_600_000
	copyOnce := `INSERT INTO flows_runs (run_id, status, created_at_ms, started_at_ms, finished_at_ms,
  owner_host_id, owner_pid, owner_nonce, heartbeat_at_ms, claim_host_id, claim_pid, claim_nonce, claimed_at_ms,
  state_json, parent_run_id, execution_parent_id, lineage_id, round_ordinal,
  cancel_requested_at_ms, cancel_acknowledgement_json, waiting_reason, waiting_wake_at_ms, waiting_token, waiting_request)
SELECT run_id || $1, status, created_at_ms - $3, started_at_ms - $3, finished_at_ms - $3,
  owner_host_id, owner_pid, owner_nonce, heartbeat_at_ms - $3, claim_host_id, claim_pid, claim_nonce, claimed_at_ms - $3,
  CASE WHEN $4 = 1 THEN ` + flow + ` ELSE state_json END,
  parent_run_id || $1, CASE WHEN parent_run_id IS NULL THEN NULL ELSE parent_run_id || $1 END, lineage_id || $1, round_ordinal,
  cancel_requested_at_ms - $3, cancel_acknowledgement_json, waiting_reason, waiting_wake_at_ms - $3, waiting_token, waiting_request
FROM flows_runs WHERE run_id NOT LIKE '%~%'`
	count := func() int {
		var have int
		if err := db.Write(ctx, func(tx store.Tx) error {
			return tx.QueryRow(ctx, `SELECT count(*) FROM flows_runs`).Scan(&have)
		}); err != nil {
			b.Fatal(err)
		}
		return have
	}
	start := time.Now()
	for k := 1; count() < n; k++ {
		if err := db.Write(ctx, func(tx store.Tx) error {
			_, err := tx.Exec(ctx, copyOnce, fmt.Sprintf("~%d", k), strconv.Itoa(k%8), int64(k)*week, k%2)
			return err
		}); err != nil {
			b.Fatalf("copy %d: %v", k, err)
		}
	}
	b.Logf("%s: filled to %d runs by copies in %s", d, count(), time.Since(start).Round(time.Second))
}

// BenchmarkOps reads what the ops commands ask of a store of
// FLOWSNAP_BENCH_OPS_RUNS runs, in each dialect, each time in a read of its
// own, beside the bare SQL that answers the same: .../flowsnap through the
// reader, .../rawSQL a hand-written statement in the same kind of
// transaction.
//
//   - flows: a page of 100 distinct flow names, by the reader's skip scan,
//     and by SELECT DISTINCT (what one writes by hand: a scan of the whole
//     flow-name index).
//   - runStats: the six bounded counts by status, up to 10,000 and up to
//     1,000,000, and the same bounded counts by hand; and a GROUP BY status,
//     unbounded, for reference.
//   - runStats of the failed runs finished in the last day, and the same by
//     hand.
func BenchmarkOps(b *testing.B) {
	runs := benchOpsRuns(b)
	for _, d := range storetest.Dialects {
		b.Run(string(d), func(b *testing.B) {
			f := newFixture(b, d)
			ctx := context.Background()
			if _, err := engine.Seed(ctx, f.db, engine.SeedOptions{Runs: min(runs, opsBenchSeed), Seed: 1}); err != nil {
				b.Fatal(err)
			}
			fillByCopies(b, f.db, d, runs)
			if d == store.Postgres {
				if _, err := f.db.Pool().Exec(ctx, `VACUUM ANALYZE flows_runs`); err != nil {
					b.Fatal(err)
				}
			}
			raw := func(b *testing.B, sql string, args ...any) int {
				tx, err := f.ro.BeginRead(ctx)
				if err != nil {
					b.Fatal(err)
				}
				defer tx.Rollback(ctx)
				rows, err := tx.Query(ctx, sql, args...)
				if err != nil {
					b.Fatal(err)
				}
				defer rows.Close()
				n := 0
				for rows.Next() {
					n++
				}
				if err := rows.Err(); err != nil {
					b.Fatal(err)
				}
				return n
			}
			expr := d.FlowNameKeyExpr()
			var names int
			b.Run("flows/first=100/flowsnap", func(b *testing.B) {
				for b.Loop() {
					p, err := f.r.Flows(ctx, snapshot.FlowsRequest{First: ptr(100)})
					if err != nil {
						b.Fatal(err)
					}
					names = len(p.Nodes)
				}
				b.ReportMetric(float64(names), "names")
			})
			b.Run("flows/first=100/rawSQL-distinct", func(b *testing.B) {
				for b.Loop() {
					names = raw(b, `SELECT DISTINCT `+expr+` AS name FROM flows_runs ORDER BY name LIMIT 101`)
				}
				b.ReportMetric(float64(names), "names")
			})
			bounded := func(where string, upTo int) string {
				cols := make([]string, len(vocab.Statuses))
				for i, s := range vocab.Statuses {
					cols[i] = fmt.Sprintf("(SELECT count(*) FROM (SELECT 1 FROM flows_runs WHERE status = '%s'%s LIMIT %d) AS k)", s, where, upTo+1)
				}
				return "SELECT " + strings.Join(cols, ", ")
			}
			for _, upTo := range []int64{10_000, 1_000_000} {
				b.Run(fmt.Sprintf("runStats/upTo=%d/flowsnap", upTo), func(b *testing.B) {
					for b.Loop() {
						if _, err := f.r.RunStats(ctx, snapshot.RunFilter{}, upTo); err != nil {
							b.Fatal(err)
						}
					}
				})
				b.Run(fmt.Sprintf("runStats/upTo=%d/rawSQL", upTo), func(b *testing.B) {
					for b.Loop() {
						raw(b, bounded("", int(upTo)))
					}
				})
			}
			b.Run("runStats/rawSQL-groupBy-unbounded", func(b *testing.B) {
				for b.Loop() {
					raw(b, `SELECT status, count(*) FROM flows_runs GROUP BY status`)
				}
			})
			day := snapshot.Millis(engine.DefaultSeedNow - 86_400_000)
			b.Run("runStats/finishedAfter=1d/flowsnap", func(b *testing.B) {
				for b.Loop() {
					if _, err := f.r.RunStats(ctx, snapshot.RunFilter{FinishedAfter: &day}, 10_000); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("runStats/finishedAfter=1d/rawSQL", func(b *testing.B) {
				for b.Loop() {
					raw(b, bounded(fmt.Sprintf(" AND finished_at_ms >= %d", day), 10_000))
				}
			})
			// The reader's own statement and arguments, run bare: what the
			// statement costs apart from the read around it.
			b.Run("runStats/finishedAfter=1d/rawSQL-sameStatement", func(b *testing.B) {
				sql, args := snapshot.StatsSQL(d, snapshot.RunFilter{FinishedAfter: &day}, 10_000)
				for b.Loop() {
					raw(b, sql, args...)
				}
			})
		})
	}
}
