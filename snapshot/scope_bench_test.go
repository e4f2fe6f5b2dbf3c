package snapshot_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/flowsnap/flowsnap/access"
	"github.com/flowsnap/flowsnap/engine"
	"github.com/flowsnap/flowsnap/snapshot"
	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/storetest"
)

// BenchmarkScopedListRuns is what a principal's scope costs a listRuns
// page of 100, newest first, on a seeded store of FLOWSNAP_BENCH_LIST_RUNS
// runs (default 50,000; 1100000 for the figure in docs/benchmarks.md), in
// both dialects: every run (no scope), one flow name, two names, and a
// prefix the store holds three flow names under, each beside the same list
// by the same names as a filter where there is one (else beside every
// run's list), the two alternating. Before timing, it
// checks the plan of each scoped statement, as the planner makes it on the
// analysed store: an index range per name, no sort, no scan of the table
// (it fails otherwise).
func BenchmarkScopedListRuns(b *testing.B) {
	for _, d := range storetest.Dialects {
		b.Run(string(d), func(b *testing.B) {
			f := newFixture(b, d)
			ctx := context.Background()
			runs := benchListRuns(b)
			if _, err := engine.Seed(ctx, f.db, engine.SeedOptions{Runs: runs, Seed: 1}); err != nil {
				b.Fatal(err)
			}
			if err := f.db.Write(ctx, func(tx store.Tx) error { _, err := tx.Exec(ctx, "ANALYZE"); return err }); err != nil {
				b.Fatal(err)
			}
			flow := "order-fulfillment"
			scopes := []struct {
				name   string
				flows  []string
				expand []string // the names the prefix expands to
				filter *string  // the same list as a filter, where one is
			}{
				{name: "everyRun", flows: []string{"*"}},
				{name: "oneName", flows: []string{flow}, filter: &flow},
				{name: "twoNames", flows: []string{flow, "invoice-sync"}},
				{name: "prefix", flows: []string{"i*"}, expand: []string{"import-record", "invoice-sync", "inventory-poller"}},
			}
			// One page of each first, so that no list is timed with a
			// cold cache the one before it warmed.
			for _, s := range scopes {
				pctx := access.NewContext(ctx, &access.Principal{Name: s.name, Flows: s.flows})
				if _, err := f.r.ListRuns(pctx, snapshot.ListRequest{First: ptr(100)}); err != nil {
					b.Fatal(err)
				}
			}
			for _, s := range scopes {
				p := &access.Principal{Name: s.name, Flows: s.flows}
				scope := p.Scope()
				if s.expand != nil {
					scope = (&access.Principal{Flows: s.expand}).Scope()
				}
				sql, args := snapshot.ScopedListSQL(d, snapshot.ListRequest{First: ptr(100)}, scope)
				plan := plannerChoice(b, f, sql, args)
				if problem := scopedPlanProblem(d, plan, s.name == "everyRun"); problem != "" {
					b.Fatalf("%s: %s\n%s\nplan:\n%s", s.name, problem, sql, plan)
				}
				if d == store.SQLite {
					b.Logf("%s plan:\n%s", s.name, plan)
				} else {
					b.Logf("%s plan: %s", s.name, pgPlanSummary(plan))
				}
				pctx := access.NewContext(ctx, p)
				// The same list without a scope: every run's, or the
				// name's by a filter. The two alternate, so that the load
				// of a shared machine weighs on both alike.
				base := snapshot.ListRequest{First: ptr(100)}
				if s.filter != nil {
					base.Filter.FlowName = s.filter
				}
				b.Run("listRuns/scope="+s.name, func(b *testing.B) {
					var scoped, unscoped time.Duration
					edges := 0
					for b.Loop() {
						t0 := time.Now()
						if _, err := f.r.ListRuns(ctx, base); err != nil {
							b.Fatal(err)
						}
						t1 := time.Now()
						page, err := f.r.ListRuns(pctx, snapshot.ListRequest{First: ptr(100)})
						if err != nil {
							b.Fatal(err)
						}
						scoped += time.Since(t1)
						unscoped += t1.Sub(t0)
						edges = len(page.Edges)
					}
					b.ReportMetric(float64(edges), "runs/page")
					b.ReportMetric(float64(scoped.Nanoseconds())/float64(b.N), "scoped-ns/page")
					b.ReportMetric(float64(unscoped.Nanoseconds())/float64(b.N), "unscoped-ns/page")
					b.ReportMetric(float64(scoped)/float64(unscoped), "scoped/unscoped")
				})
			}
		})
	}
}

// scopedPlanProblem is badPlan, but for SQLite's merge of several
// branches: each branch's page (at most its LIMIT rows) is sorted for the
// merge (USE TEMP B-TREE under the MERGE's LEFT or RIGHT), which is no
// sort of the table; every read of flows_runs must still be a SEARCH.
func scopedPlanProblem(d store.Dialect, plan string, whole bool) string {
	if d != store.SQLite {
		return badPlan(d, plan, whole)
	}
	detail := map[string]string{}
	for _, line := range strings.Split(plan, "\n") {
		if f := strings.SplitN(line, " ", 3); len(f) == 3 {
			detail[f[0]] = f[2]
		}
	}
	for _, line := range strings.Split(plan, "\n") {
		f := strings.SplitN(line, " ", 3)
		if len(f) < 3 {
			continue
		}
		switch {
		case strings.Contains(f[2], "TEMP B-TREE") && detail[f[1]] != "LEFT" && detail[f[1]] != "RIGHT":
			return "the plan sorts: " + line
		case strings.Contains(f[2], "SCAN flows_runs") && !(whole && strings.Contains(f[2], "INDEX")):
			return "the plan scans: " + line
		}
	}
	return ""
}

// plannerChoice is the plan the planner makes of sql, with nothing priced
// out (explain prices out what a small table would rightly prefer).
func plannerChoice(b *testing.B, f *fixture, sql string, args []any) string {
	b.Helper()
	if f.d == store.SQLite {
		return explain(b, f, sql, args)
	}
	var plan string
	if err := f.db.Pool().QueryRow(context.Background(), "EXPLAIN (FORMAT JSON) "+sql, args...).Scan(&plan); err != nil {
		b.Fatal(err)
	}
	return plan
}

// pgPlanSummary is the node types and indexes of a PostgreSQL plan, in
// order, for the log.
func pgPlanSummary(plan string) string {
	var out []string
	for _, part := range strings.Split(plan, `"Node Type": "`)[1:] {
		node := part[:strings.Index(part, `"`)]
		if i := strings.Index(part, `"Index Name": "`); i >= 0 && !strings.Contains(part[:i], `"Node Type"`) {
			rest := part[i+len(`"Index Name": "`):]
			node += " " + rest[:strings.Index(rest, `"`)]
		}
		out = append(out, node)
	}
	return strings.Join(out, " > ")
}
