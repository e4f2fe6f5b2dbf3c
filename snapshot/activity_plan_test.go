package snapshot_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/flowsnap/flowsnap/engine"
	"github.com/flowsnap/flowsnap/snapshot"
	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/storetest"
)

// TestRunActivityPlansUseIndexes reads the plan of RunActivity's statement
// with and without a flow: every read of flows_runs must be a range of an
// index on creation or finish time (never a scan of the table or of an
// index whole); grouping sorts at most one row per bucket.
func TestRunActivityPlansUseIndexes(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		f := listFixture(t, d, 200)
		if d == store.Postgres {
			if _, err := f.db.Pool().Exec(context.Background(), `ANALYZE flows_runs`); err != nil {
				t.Fatal(err)
			}
		}
		since := snapshot.Millis(engine.DefaultSeedNow - 86_400_000)
		for _, flow := range []*string{nil, ptr("billing")} {
			t.Run(fmt.Sprintf("flow=%v", flow != nil), func(t *testing.T) {
				sql, args := snapshot.ActivitySQL(d, snapshot.ActivityRequest{Since: since, Until: since + 86_400_000, Bucket: 3_600_000, FlowName: flow})
				plan := explain(t, f, sql, args)
				if problem := activityPlanProblem(d, plan, flow != nil); problem != "" {
					t.Fatalf("%s\n%s\nplan:\n%s", problem, sql, plan)
				}
			})
		}
	})
}

// activityIndexes are the indexes RunActivity's four counts may range
// over: creation, then finish time by status (with a flow, its flow's).
// With a flow, PostgreSQL may read the creation count from the flow and
// status index with a range on its creation time under each status (a skip
// scan): still ranges, one per status.
func activityIndexes(withFlow bool) []string {
	if withFlow {
		return []string{"flows_runs_by_flow", "flows_runs_by_flow_status", "flows_runs_by_flow_status_finished"}
	}
	return []string{"flows_runs_created", "flows_runs_by_status_finished"}
}

func activityPlanProblem(d store.Dialect, plan string, withFlow bool) string {
	want := activityIndexes(withFlow)
	if d == store.SQLite {
		reads := 0
		for _, line := range strings.Split(plan, "\n") {
			if !strings.Contains(line, "flows_runs") {
				continue
			}
			reads++
			if !strings.Contains(line, "SEARCH flows_runs USING") {
				return "a read of flows_runs that is not a search: " + line
			}
			if !strings.Contains(line, "created_at_ms>?") && !strings.Contains(line, "finished_at_ms>?") {
				return "a search without a range on a time: " + line
			}
			if !slices.ContainsFunc(want, func(ix string) bool { return strings.Contains(line, "INDEX "+ix+" ") }) {
				return fmt.Sprintf("a search of another index than %v: %s", want, line)
			}
		}
		if reads != 4 {
			return fmt.Sprintf("%d reads of flows_runs, want 4 (created, completed, failed, cancelled)", reads)
		}
		return ""
	}
	return pgRangesOnly(plan, want, 4)
}

// pgRangesOnly checks a PostgreSQL plan (EXPLAIN FORMAT JSON): n reads of
// flows_runs, each an index scan of one of want with a condition on a time.
func pgRangesOnly(plan string, want []string, n int) string {
	var nodes []map[string]any
	if err := json.Unmarshal([]byte(plan), &nodes); err != nil {
		return "unreadable plan: " + err.Error()
	}
	reads := 0
	var walk func(p map[string]any) string
	walk = func(p map[string]any) string {
		if p["Relation Name"] == "flows_runs" {
			reads++
			typ, _ := p["Node Type"].(string)
			cond, _ := p["Index Cond"].(string)
			ix, _ := p["Index Name"].(string)
			switch {
			case typ != "Index Scan" && typ != "Index Only Scan":
				return fmt.Sprintf("a %s of flows_runs", typ)
			case !strings.Contains(cond, "created_at_ms") && !strings.Contains(cond, "finished_at_ms"):
				return fmt.Sprintf("an index scan of %s without a range on a time: %q", ix, cond)
			case !slices.Contains(want, ix):
				return fmt.Sprintf("a scan of %s, not of %v", ix, want)
			}
		}
		kids, _ := p["Plans"].([]any)
		for _, k := range kids {
			if problem := walk(k.(map[string]any)); problem != "" {
				return problem
			}
		}
		return ""
	}
	for _, node := range nodes {
		if problem := walk(node["Plan"].(map[string]any)); problem != "" {
			return problem
		}
	}
	if reads != n {
		return fmt.Sprintf("%d reads of flows_runs, want %d", reads, n)
	}
	return ""
}
