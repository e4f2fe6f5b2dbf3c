package stats_test

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/flowsnap/flowsnap/engine"
	"github.com/flowsnap/flowsnap/snapshot"
	"github.com/flowsnap/flowsnap/stats"
	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/storetest"
)

// benchRuns is the size of the store BenchmarkRefresh seeds:
// FLOWSNAP_BENCH_STATS_RUNS, default 20,000; set it to 1000000 for the
// figure at a million runs (seeding takes minutes per dialect).
func benchRuns(b *testing.B) int {
	if s := os.Getenv("FLOWSNAP_BENCH_STATS_RUNS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			b.Fatalf("FLOWSNAP_BENCH_STATS_RUNS=%q is not a number of runs", s)
		}
		return n
	}
	return 20_000
}

// BenchmarkRefresh times one refresh of the workflow metrics (one read of
// the whole store) on a seeded store in each dialect. PostgreSQL's
// statistics are gathered after seeding, as autovacuum would soon after
// such a load; SQLite's store is left as seeded.
//
// Seeding a million runs takes many minutes (most of all on PostgreSQL):
// FLOWSNAP_BENCH_STATS_DB names a store seeded beforehand instead
// (`flowsnap seed --runs 1000000 --db DSN`), which is then the only one
// read.
func BenchmarkRefresh(b *testing.B) {
	if dsn := os.Getenv("FLOWSNAP_BENCH_STATS_DB"); dsn != "" {
		b.Run("existing", func(b *testing.B) { benchRefresh(b, dsn) })
		return
	}
	runs := benchRuns(b)
	for _, d := range storetest.Dialects {
		b.Run(string(d), func(b *testing.B) {
			ctx := context.Background()
			dsn := storetest.DSN(b, d)
			db := storetest.OpenDSN(b, dsn, true)
			start := time.Now()
			if _, err := engine.Seed(ctx, db, engine.SeedOptions{Runs: runs, Seed: 1}); err != nil {
				b.Fatal(err)
			}
			b.Logf("seeded %d runs in %s", runs, time.Since(start).Round(time.Second))
			if d == store.Postgres {
				if err := db.Write(ctx, func(tx store.Tx) error {
					_, err := tx.Exec(ctx, "ANALYZE")
					return err
				}); err != nil {
					b.Fatal(err)
				}
			}
			benchRefresh(b, dsn)
		})
	}
}

func benchRefresh(b *testing.B, dsn string) {
	ctx := context.Background()
	ro := storetest.OpenReader(b, dsn)
	c := stats.New(snapshot.NewReader(ro), stats.Options{Timeout: 10 * time.Minute})
	b.ResetTimer()
	for b.Loop() {
		if err := c.Refresh(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/refresh")
	tx, err := ro.BeginRead(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer tx.Rollback(ctx)
	var live int64
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM flows_runs`).Scan(&live); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(live), "live-runs")
}
