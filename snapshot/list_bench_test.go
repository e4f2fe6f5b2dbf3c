package snapshot_test

import (
	"context"
	"os"
	"strconv"
	"testing"

	"github.com/flowsnap/flowsnap/engine"
	"github.com/flowsnap/flowsnap/snapshot"
	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/storetest"
	"github.com/flowsnap/flowsnap/store/vocab"
)

// benchListRuns is the size of the store BenchmarkListRuns seeds:
// FLOWSNAP_BENCH_LIST_RUNS, default 50,000 (a few seconds to seed); set it
// to 1100000 for pages at depth 10^6.
func benchListRuns(b *testing.B) int {
	if s := os.Getenv("FLOWSNAP_BENCH_LIST_RUNS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1000 {
			b.Fatalf("FLOWSNAP_BENCH_LIST_RUNS=%q is not a number of runs ≥ 1000", s)
		}
		return n
	}
	return 50_000
}

// BenchmarkListRuns reads a listRuns page of 100, newest first, for each
// single filter on a seeded SQLite store, at depth 0 and at depth D (after
// the D newest runs of the store, D = 10^6 or, on a smaller store, all but
// its oldest 1,000), each in a read of its own; their ratio is what depth
// costs. It then counts runs with upTo 10,000.
func BenchmarkListRuns(b *testing.B) {
	f := newFixture(b, store.SQLite)
	ctx := context.Background()
	runs := benchListRuns(b)
	if _, err := engine.Seed(ctx, f.db, engine.SeedOptions{Runs: runs, Seed: 1}); err != nil {
		b.Fatal(err)
	}
	one := func(query string) (string, int64) {
		tx, err := f.db.BeginRead(ctx)
		if err != nil {
			b.Fatal(err)
		}
		defer tx.Rollback(ctx)
		var s string
		var n int64
		if err := tx.QueryRow(ctx, query).Scan(&s, &n); err != nil {
			b.Fatal(err)
		}
		return s, n
	}
	_, live := one(`SELECT '', count(*) FROM flows_runs`)
	depth := min(1_000_000, live-1000)
	last, created := one(`SELECT run_id, created_at_ms FROM flows_runs ORDER BY created_at_ms DESC, run_id DESC LIMIT 1 OFFSET ` + strconv.FormatInt(depth, 10))
	parent, _ := one(`SELECT parent_run_id, count(*) FROM flows_runs WHERE parent_run_id IS NOT NULL GROUP BY 1 ORDER BY 2 DESC LIMIT 1`)
	execParent, _ := one(`SELECT execution_parent_id, count(*) FROM flows_runs WHERE execution_parent_id IS NOT NULL GROUP BY 1 ORDER BY 2 DESC LIMIT 1`)
	lineage, _ := one(`SELECT lineage_id, count(*) FROM flows_runs WHERE lineage_id IS NOT NULL GROUP BY 1 ORDER BY 2 DESC LIMIT 1`)
	flow, _ := one(`SELECT json_extract(state_json, '$.flowName'), count(*) FROM flows_runs GROUP BY 1 ORDER BY 2 DESC LIMIT 1`)
	after := snapshot.Millis(created - 86_400_000)
	stale := snapshot.Millis(engine.DefaultSeedNow - 120_000)
	filters := []struct {
		name   string
		filter snapshot.RunFilter
	}{
		{"none", snapshot.RunFilter{}},
		{"status", snapshot.RunFilter{Status: []vocab.Status{vocab.StatusCompleted}}},
		{"flowName", snapshot.RunFilter{FlowName: &flow}},
		{"statusAndFlowName", snapshot.RunFilter{FlowName: &flow, Status: []vocab.Status{vocab.StatusCompleted}}},
		{"parentRunId", snapshot.RunFilter{ParentRunID: &parent}},
		{"executionParentId", snapshot.RunFilter{ExecutionParentID: &execParent}},
		{"lineageId", snapshot.RunFilter{LineageID: &lineage}},
		{"waitingReason", snapshot.RunFilter{WaitingReason: ptr("approval")}},
		{"waitingKind", snapshot.RunFilter{WaitingKind: []vocab.WaitingKind{vocab.WaitingTimer}}},
		{"createdAfter", snapshot.RunFilter{CreatedAfter: &after}},
		{"rootsOnly", snapshot.RunFilter{RootsOnly: ptr(true)}},
		{"cancelRequested", snapshot.RunFilter{CancelRequested: ptr(true)}},
		{"heartbeatBefore", snapshot.RunFilter{HeartbeatBefore: &stale}},
	}
	b.Logf("%d live runs, depth %d", live, depth)
	for _, fl := range filters {
		for _, deep := range []bool{false, true} {
			name := "listRuns/" + fl.name + "/depth=0"
			req := snapshot.ListRequest{Filter: fl.filter, First: ptr(100)}
			if deep {
				name = "listRuns/" + fl.name + "/depth=" + strconv.FormatInt(depth, 10)
				pos, err := f.r.Position(ctx)
				if err != nil {
					b.Fatal(err)
				}
				req.After = ptr(snapshot.ListCursor(pos.Source, req, created, last))
			}
			b.Run(name, func(b *testing.B) {
				edges := 0
				for b.Loop() {
					p, err := f.r.ListRuns(ctx, req)
					if err != nil {
						b.Fatal(err)
					}
					edges = len(p.Edges)
				}
				// A filter with fewer runs beyond the depth reads a shorter page.
				b.ReportMetric(float64(edges), "runs/page")
			})
		}
	}
	for _, fl := range filters[:3] {
		b.Run("countRuns/"+fl.name+"/upTo=10000", func(b *testing.B) {
			for b.Loop() {
				if _, err := f.r.CountRuns(ctx, fl.filter, 10_000); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkChanges reads changes(first: 1000) from the middle of a seeded
// store's history, each time in a read of its own: .../flowsnap through
// Reader.Changes, .../rawSQL the same rows by a bare SELECT in the same kind
// of transaction.
func BenchmarkChanges(b *testing.B) {
	for _, d := range storetest.Dialects {
		b.Run(string(d), func(b *testing.B) {
			f := newFixture(b, d)
			ctx := context.Background()
			if _, err := engine.Seed(ctx, f.db, engine.SeedOptions{Runs: 3000, Seed: 11}); err != nil {
				b.Fatal(err)
			}
			since := f.storePosition(b).Revision / 2
			b.Run("flowsnap", func(b *testing.B) {
				for b.Loop() {
					feed, err := f.r.Changes(ctx, snapshot.ChangesRequest{Since: since, First: ptr(1000)})
					if err != nil || len(feed.Changes) != 1000 {
						b.Fatalf("%v, %v", feed, err)
					}
				}
			})
			b.Run("rawSQL", func(b *testing.B) {
				for b.Loop() {
					tx, err := f.ro.BeginRead(ctx)
					if err != nil {
						b.Fatal(err)
					}
					rows, err := tx.Query(ctx, `SELECT run_id, revision, deleted FROM flows_run_changes WHERE revision > $1 AND revision <= $2 ORDER BY revision LIMIT $3`, since, vocab.MaxSafe, 1001)
					if err != nil {
						b.Fatal(err)
					}
					n := 0
					for rows.Next() {
						var id string
						var rev, del int64
						if err := rows.Scan(&id, &rev, &del); err != nil {
							b.Fatal(err)
						}
						n++
					}
					rows.Close()
					_ = tx.Rollback(ctx)
					if n != 1001 {
						b.Fatalf("read %d changes", n)
					}
				}
			})
		})
	}
}
