package endpoint_test

import (
	"context"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flowsnap/flowsnap/store"
)

// loadListShapes are the shapes of BenchmarkLoad that find runs without
// knowing their ids: a listRuns page of 100, newest first, per filter of
// RunFilter (list-<filter>), and a page of 100 of the change feed with each
// change's run (changes), each beside bare SQL reading the same rows, and
// each again with every field of its pages and runs selected
// (flowsnapEveryField, x-fields). The
// values filtered on are the store's own: its most common flow name,
// parent, execution parent and lineage, a month before its newest run, its
// median finish and 90th-percentile heartbeat. By default only list-status
// and changes run, so that the benchmark's default run stays short;
// FLOWSNAP_BENCH_LOAD_FILTERS=all adds every filter, or a comma list names
// the filters to add.
func loadListShapes(b *testing.B, d store.Dialect, db *store.DB, runCols string) []loadShape {
	ctx := context.Background()
	tx, err := db.BeginRead(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	one := func(sql string, dest ...any) {
		b.Helper()
		if err := tx.QueryRow(ctx, sql).Scan(dest...); err != nil {
			b.Fatalf("%s: %v", sql, err)
		}
	}
	mostOf := func(col string) string {
		var v string
		var n int64
		one(`SELECT `+col+` AS v, count(*) AS n FROM flows_runs WHERE `+col+` IS NOT NULL GROUP BY v ORDER BY n DESC, v LIMIT 1`, &v, &n)
		return v
	}
	quantile := func(col string, percent int) int64 {
		var v int64
		one(`SELECT `+col+` FROM flows_runs WHERE `+col+` IS NOT NULL ORDER BY `+col+` LIMIT 1
			OFFSET (SELECT count(`+col+`) * `+strconv.Itoa(percent)+` / 100 FROM flows_runs)`, &v)
		return v
	}
	var newest, since int64
	one(`SELECT max(created_at_ms) FROM flows_runs`, &newest)
	one(`SELECT revision FROM flows_run_changes ORDER BY revision DESC LIMIT 1 OFFSET 500`, &since)
	flow := mostOf(d.FlowNameExpr())
	parent, execParent, lineage := mostOf("parent_run_id"), mostOf("execution_parent_id"), mostOf("lineage_id")
	after, finished, beat := newest-30*86_400_000, quantile("finished_at_ms", 50), quantile("heartbeat_at_ms", 90)
	at := func(ms int64) string { return time.UnixMilli(ms).UTC().Format(time.RFC3339Nano) }
	lit := func(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
	num := func(n int64) string { return strconv.FormatInt(n, 10) }

	// Each filter as a client sends it, and its terms as one writes them
	// by hand.
	filters := []struct {
		name   string
		filter map[string]any
		terms  string
	}{
		{"status", map[string]any{"status": []string{"FAILED"}}, "status = 'failed'"},
		{"none", nil, "1 = 1"},
		{"flowName", map[string]any{"flowName": flow}, d.FlowNameExpr() + " = " + lit(flow)},
		{"statusAndFlowName", map[string]any{"flowName": flow, "status": []string{"COMPLETED"}},
			d.FlowNameExpr() + " = " + lit(flow) + " AND status = 'completed'"},
		{"parentRunId", map[string]any{"parentRunId": parent}, "parent_run_id = " + lit(parent)},
		{"executionParentId", map[string]any{"executionParentId": execParent}, "execution_parent_id = " + lit(execParent)},
		{"lineageId", map[string]any{"lineageId": lineage}, "COALESCE(lineage_id, run_id) = " + lit(lineage)},
		{"waitingReason", map[string]any{"waitingReason": "approval"}, "waiting_reason = 'approval'"},
		{"waitingKind", map[string]any{"waitingKind": []string{"TIMER"}}, "waiting_reason IS NOT NULL AND " + store.WaitingKindExpr + " = 'timer'"},
		{"createdAfter", map[string]any{"createdAfter": at(after)}, "created_at_ms >= " + num(after)},
		{"createdBefore", map[string]any{"createdBefore": at(after)}, "created_at_ms < " + num(after)},
		{"rootsOnly", map[string]any{"rootsOnly": true}, "execution_parent_id IS NULL"},
		{"cancelRequested", map[string]any{"cancelRequested": true}, store.CancelPendingCond},
		{"heartbeatBefore", map[string]any{"heartbeatBefore": at(beat)}, "status = 'running' AND heartbeat_at_ms < " + num(beat)},
		// A finish window is listed by finish time, which its index serves.
		{"finishedAfter", map[string]any{"finishedAfter": at(finished)}, "finished_at_ms >= " + num(finished)},
		{"finishedBefore", map[string]any{"finishedBefore": at(finished)}, "finished_at_ms < " + num(finished)},
	}
	want := []string{"status"}
	switch s := os.Getenv("FLOWSNAP_BENCH_LOAD_FILTERS"); s {
	case "":
	case "all":
		want = nil
		for _, f := range filters {
			want = append(want, f.name)
		}
	default:
		want = append(want, strings.Split(s, ",")...)
	}
	const listQuery = `query($f: RunFilter, $o: RunOrder) { listRuns(filter: $f, order: $o, first: 100) {
		edges { cursor node { ... on Run { id status flowName createdAt } } } pageInfo { hasNextPage endCursor } } }`
	var shapes []loadShape
	for _, f := range filters {
		if !slices.Contains(want, f.name) {
			continue
		}
		order, col := "NEWEST_FIRST", "created_at_ms"
		if strings.HasPrefix(f.name, "finished") {
			order, col = "FINISHED_NEWEST_FIRST", "finished_at_ms"
		}
		vars := map[string]any{"o": order}
		if f.filter != nil {
			vars["f"] = f.filter
		}
		raw := `SELECT ` + runCols + ` FROM flows_runs r WHERE ` + f.terms + ` ORDER BY r.` + col + ` DESC, r.run_id DESC LIMIT 101`
		shapes = append(shapes, loadShape{name: "list-" + f.name, query: listQuery,
			vars:  func(string) map[string]any { return vars },
			raw:   func(tx store.Tx, _ string) error { return rawRows(tx, raw) },
			every: `query($f: RunFilter, $o: RunOrder) { listRuns(filter: $f, order: $o, first: 100) ` + everyPageField + ` }`})
	}
	// The change feed as a projection reads it: each change with its run.
	// Bare SQL bounds the page by the position, as the feed does.
	rawChanges := `SELECT c.run_id, c.revision, c.deleted, r.status, r.state_json, r.created_at_ms FROM flows_run_changes c LEFT JOIN flows_runs r ON r.run_id = c.run_id
		WHERE c.revision > ` + d.Bound(1) + ` AND c.revision <= ` + d.Bound(2) + ` ORDER BY c.revision LIMIT 101`
	shapes = append(shapes, loadShape{name: "changes",
		query: `query($s: SafeInt!) { changes(since: $s, first: 100) { changes { runId revision deleted
			run { ... on Run { id status flowName createdAt } ... on MissingRun { id deleted } } } nextRevision hasMore } }`,
		every: `query($s: SafeInt!) { changes(since: $s, first: 100) { __typename changes { __typename runId revision deleted
			run { __typename ` + everyRunField + ` } } nextRevision hasMore } }`,
		vars: func(string) map[string]any { return map[string]any{"s": since} },
		raw: func(tx store.Tx, _ string) error {
			var rev int64
			if err := tx.QueryRow(context.Background(), `SELECT revision FROM flows_run_source WHERE singleton = 1`).Scan(&rev); err != nil {
				return err
			}
			return rawRows(tx, rawChanges, since, rev)
		}})
	return shapes
}
