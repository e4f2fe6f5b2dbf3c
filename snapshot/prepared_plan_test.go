package snapshot_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/flowsnap/flowsnap/cursor"
	"github.com/flowsnap/flowsnap/engine"
	"github.com/flowsnap/flowsnap/snapshot"
	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/storetest"
	"github.com/flowsnap/flowsnap/store/vocab"
)

// planStoreRuns is the size of the store TestPreparedPlans seeds: large
// enough that reading a whole table costs more than a page's index seeks,
// so that a plan that does is a wrong plan, not a right one on a small
// table.
const planStoreRuns = 6000

// TestPreparedPlans runs every list, count, stats, feed, flows and page
// statement as the server runs it on PostgreSQL: prepared once on a
// connection of a pool opened with the server's options, so planned
// generically (plan_cache_mode = force_generic_plan, see store.Open), on a
// seeded store with statistics, and reads the plan with EXPLAIN EXECUTE. A
// generic plan cannot see the bound values, so a statement whose good plan
// depends on one (a LIMIT above all) must spell it. The test fails on a
// sequential scan, a hash or merge join of the runs, or a sort of more
// rows than the statement's pages hold.
//
// FLOWSNAP_PLANS_POSTGRES names a seeded, analysed store to read the plans
// on instead (a store of 10^6 runs: see docs/benchmarks.md); without it the
// test seeds one of planStoreRuns runs.
func TestPreparedPlans(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var db *store.DB
	if dsn := os.Getenv("FLOWSNAP_PLANS_POSTGRES"); dsn != "" {
		db = storetest.OpenReader(t, dsn)
	} else {
		f := newFixture(t, store.Postgres)
		if _, err := engine.Seed(ctx, f.db, engine.SeedOptions{Runs: planStoreRuns, Seed: 5}); err != nil {
			t.Fatal(err)
		}
		// As autovacuum leaves a store the engine has written for a while:
		// statistics, and a visibility map that index-only scans rely on.
		if _, err := f.db.Pool().Exec(ctx, `VACUUM ANALYZE`); err != nil {
			t.Fatal(err)
		}
		db = f.ro
	}
	if db.Dialect() != store.Postgres {
		t.Fatalf("FLOWSNAP_PLANS_POSTGRES must name a PostgreSQL store")
	}
	conn, err := db.Pool().Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	var mode string
	if err := tx.QueryRow(ctx, `SELECT current_setting('plan_cache_mode')`).Scan(&mode); err != nil {
		t.Fatal(err)
	}
	if mode != "force_generic_plan" {
		t.Fatalf("the server's connections plan with plan_cache_mode = %s; this test reads the generic plans it expects them to get", mode)
	}
	for _, s := range preparedStatements(t, ctx, tx, os.Getenv("FLOWSNAP_PLANS_POSTGRES") != "") {
		t.Run(s.name, func(t *testing.T) {
			plan := explainPrepared(t, ctx, tx, s.sql, s.args)
			if problem := preparedPlanProblem(plan, s.rows); problem != "" {
				t.Errorf("%s\n%s\narguments: %v\nplan:\n%s", problem, s.sql, s.args, plan)
			}
		})
	}
}

// preparedStatement is a statement to plan, and the rows its pages hold
// (see preparedPlanProblem).
type preparedStatement struct {
	name string
	sql  string
	args []any
	rows float64
}

// preparedStatements are the statements of every list filter in each
// order its indexes serve (first page and a deep one), every count and
// stats filter, the change feed, the flows page, runs by id, and every
// kind of page, with arguments read from the store in tx.
func preparedStatements(t *testing.T, ctx context.Context, tx pgx.Tx, large bool) []preparedStatement {
	t.Helper()
	one := func(sql string, dest ...any) {
		t.Helper()
		if err := tx.QueryRow(ctx, sql).Scan(dest...); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	mostOf := func(col string) string {
		var v string
		var n int64
		one(`SELECT `+col+`, count(*) FROM flows_runs WHERE `+col+` IS NOT NULL GROUP BY 1 ORDER BY 2 DESC LIMIT 1`, &v, &n)
		return v
	}
	var source, lastID string
	var revision, created, finished, beat int64
	one(`SELECT source, revision FROM flows_run_source`, &source, &revision)
	one(`SELECT run_id, created_at_ms FROM flows_runs ORDER BY created_at_ms, run_id OFFSET (SELECT count(*) / 2 FROM flows_runs) LIMIT 1`, &lastID, &created)
	one(`SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY finished_at_ms) FROM flows_runs`, &finished)
	one(`SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY heartbeat_at_ms) FROM flows_runs`, &beat)
	flow := mostOf(`(state_json::json ->> 'flowName')`)
	parent, execParent, lineage, reason := mostOf("parent_run_id"), mostOf("execution_parent_id"), mostOf("lineage_id"), mostOf("waiting_reason")
	var stepRun, eventRun string
	one(`SELECT run_id FROM flows_steps GROUP BY 1 ORDER BY count(*) DESC LIMIT 1`, &stepRun)
	one(`SELECT run_id FROM flows_run_events GROUP BY 1 ORDER BY count(*) DESC LIMIT 1`, &eventRun)
	lo, hi := snapshot.Millis(created-86_400_000), snapshot.Millis(created)
	fin, stale := snapshot.Millis(finished), snapshot.Millis(beat)
	yes, no := true, false
	filters := []struct {
		name string
		f    snapshot.RunFilter
	}{
		{"none", snapshot.RunFilter{}},
		{"status", snapshot.RunFilter{Status: []vocab.Status{vocab.StatusFailed}}},
		{"statuses", snapshot.RunFilter{Status: []vocab.Status{vocab.StatusFailed, vocab.StatusRunning}}},
		{"flowName", snapshot.RunFilter{FlowName: &flow}},
		{"flowName+status", snapshot.RunFilter{FlowName: &flow, Status: []vocab.Status{vocab.StatusCompleted}}},
		{"parentRunId", snapshot.RunFilter{ParentRunID: &parent}},
		{"executionParentId", snapshot.RunFilter{ExecutionParentID: &execParent}},
		{"lineageId", snapshot.RunFilter{LineageID: &lineage}},
		{"waitingReason", snapshot.RunFilter{WaitingReason: &reason}},
		{"waitingKind", snapshot.RunFilter{WaitingKind: []vocab.WaitingKind{vocab.WaitingTimer}}},
		{"waitingKinds", snapshot.RunFilter{WaitingKind: []vocab.WaitingKind{vocab.WaitingTimer, vocab.WaitingSignal}}},
		{"createdAfter", snapshot.RunFilter{CreatedAfter: &lo}},
		{"createdBefore", snapshot.RunFilter{CreatedBefore: &hi}},
		{"createdRange", snapshot.RunFilter{CreatedAfter: &lo, CreatedBefore: &hi}},
		{"rootsOnly", snapshot.RunFilter{RootsOnly: &yes}},
		{"cancelRequested", snapshot.RunFilter{CancelRequested: &yes}},
		{"cancelRequested=false", snapshot.RunFilter{CancelRequested: &no}},
		{"heartbeatBefore", snapshot.RunFilter{HeartbeatBefore: &stale}},
		{"finishedAfter", snapshot.RunFilter{FinishedAfter: &fin}},
		{"finishedBefore", snapshot.RunFilter{FinishedBefore: &fin}},
		{"finishedAfter+status", snapshot.RunFilter{FinishedAfter: &fin, Status: []vocab.Status{vocab.StatusFailed}}},
	}
	// The dashboard's page. On a small store, joining a page of
	// DefaultPageSize runs or more by hash rightly costs less than seeking
	// each: those are planned on a large one.
	sizes := []int{25}
	if large {
		sizes = append(sizes, snapshot.DefaultPageSize, snapshot.MaxPageSize)
	}
	var out []preparedStatement
	add := func(name, sql string, args []any, rows int) {
		out = append(out, preparedStatement{name: name, sql: sql, args: args, rows: float64(rows)})
	}
	for _, fl := range filters {
		branches := snapshot.ScanOf(fl.f, "", false).Branches
		for _, order := range snapshot.RunOrders {
			if !snapshot.ScanOf(fl.f, order, false).Served {
				continue // costed as a scan (docs/contract.md#listing)
			}
			for _, first := range sizes {
				for _, deep := range []bool{false, true} {
					var after *cursor.Cursor
					if deep {
						after = &cursor.Cursor{Ordinal: created, Last: lastID}
						if order == snapshot.FinishedNewestFirst {
							after.Ordinal = finished
						}
					}
					sql, args := snapshot.ListSQL(store.Postgres, snapshot.ListRequest{Filter: fl.f, Order: order, First: &first}, after)
					add(fmt.Sprintf("list/%s/%s/first=%d/deep=%v", fl.name, order, first, deep), sql, args, (first+1)*branches)
				}
			}
		}
		if snapshot.ScanOf(fl.f, "", true).Served {
			for _, upTo := range []int{100, snapshot.DefaultCountUpTo} {
				sql, args := snapshot.CountSQL(store.Postgres, fl.f, upTo)
				add(fmt.Sprintf("count/%s/upTo=%d", fl.name, upTo), sql, args, (upTo+1)*branches)
			}
			sql, args := snapshot.StatsSQL(store.Postgres, fl.f, snapshot.DefaultCountUpTo)
			add("stats/"+fl.name, sql, args, (snapshot.DefaultCountUpTo+1)*branches)
		}
	}
	sql, args := snapshot.PageSQL(store.Postgres, "", "", revision/2)
	args[2] = 1001
	add("changes", sql, args, 0)
	sql, args = snapshot.FlowsSQL(store.Postgres, "", &flow, snapshot.DefaultPageSize+1)
	add("flows", sql, args, 0)
	sql, args = snapshot.RunsSQL(store.Postgres, []string{lastID, parent, lineage})
	add("runs", sql, args, 0)
	sql, args = snapshot.RunsAndParentsSQL(store.Postgres, []string{lastID, parent, lineage})
	// Three runs and at most as many parents.
	add("runs-and-parents", sql, args, 6)
	// A run with its children, its rounds and the parents of them all:
	// the dashboard's statement, two pages of 11 rows and the run.
	sql, args = snapshot.DashboardSQL(store.Postgres, parent)
	add("dashboard", sql, args, 23)
	for kind, key := range map[cursor.Kind]string{cursor.Children: parent, cursor.Rounds: lineage,
		"rounds-of-anchor": lineage, cursor.Steps: stepRun, cursor.InboundEvents: stepRun, cursor.Events: eventRun} {
		// PageSQL reads pages of 10.
		sql, args := snapshot.PageSQL(store.Postgres, kind, key, -1)
		add("page/"+string(kind), sql, args, 11)
	}
	_ = source
	return out
}

// preparedNames are the names of the statements explainPrepared made.
var preparedNames = map[string]bool{}

// explainPrepared prepares sql on tx's connection, as pgx does for the
// server, and returns the plan EXPLAIN EXECUTE reads of it with args.
func explainPrepared(t *testing.T, ctx context.Context, tx pgx.Tx, sql string, args []any) string {
	t.Helper()
	name := fmt.Sprintf("plan_%d", len(preparedNames))
	preparedNames[name] = true
	if _, err := tx.Conn().Prepare(ctx, name, sql); err != nil {
		t.Fatalf("preparing: %v\n%s", err, sql)
	}
	defer tx.Conn().Deallocate(ctx, name)
	lits := make([]string, len(args))
	for i, a := range args {
		switch v := a.(type) {
		case string:
			lits[i] = "'" + strings.ReplaceAll(v, "'", "''") + "'"
		case int:
			lits[i] = strconv.Itoa(v)
		case int64:
			lits[i] = strconv.FormatInt(v, 10)
		case snapshot.Millis:
			lits[i] = strconv.FormatInt(int64(v), 10)
		default:
			// A list of ids (store.Dialect.TextListArg).
			l := reflect.ValueOf(a)
			if l.Kind() != reflect.Slice || l.Type().Elem().Kind() != reflect.String {
				t.Fatalf("argument %d is a %T", i+1, a)
			}
			var ids []string
			for j := range l.Len() {
				ids = append(ids, "'"+strings.ReplaceAll(l.Index(j).String(), "'", "''")+"'")
			}
			lits[i] = "ARRAY[" + strings.Join(ids, ", ") + "]::text[]"
		}
	}
	call := name
	if len(lits) > 0 {
		call += "(" + strings.Join(lits, ", ") + ")"
	}
	var plan string
	if err := tx.QueryRow(ctx, "EXPLAIN (FORMAT JSON) EXECUTE "+call).Scan(&plan); err != nil {
		t.Fatalf("EXPLAIN EXECUTE %s: %v", call, err)
	}
	return plan
}

// reads reports whether plan node n or a node below it reads table.
func reads(n map[string]any, table string) bool {
	if n["Relation Name"] == table {
		return true
	}
	subs, _ := n["Plans"].([]any)
	for _, s := range subs {
		if m, ok := s.(map[string]any); ok && reads(m, table) {
			return true
		}
	}
	return false
}

// preparedPlanProblem says what is wrong with a plan: a sequential scan of
// any table but the one-row source, a hash or merge join of the runs or
// their changes, a sort of more than twice rows rows (the planner may read
// every match and sort them when it expects about a page of them: that
// costs what reading the page in order does).
func preparedPlanProblem(plan string, rows float64) string {
	var nodes []map[string]any
	if err := json.Unmarshal([]byte(plan), &nodes); err != nil {
		return "unreadable plan: " + err.Error()
	}
	var walk func(n map[string]any) string
	walk = func(n map[string]any) string {
		switch typ, _ := n["Node Type"].(string); typ {
		case "Seq Scan":
			if n["Relation Name"] != "flows_run_source" {
				return fmt.Sprintf("the plan scans %v", n["Relation Name"])
			}
		case "Hash Join", "Merge Join":
			if reads(n, "flows_runs") || reads(n, "flows_run_changes") {
				return "the plan has a " + typ + " of the runs"
			}
		case "Sort", "Incremental Sort":
			if r, _ := n["Plan Rows"].(float64); r > 2*rows {
				return fmt.Sprintf("the plan sorts %v rows", r)
			}
		}
		subs, _ := n["Plans"].([]any)
		if p, ok := n["Plan"].(map[string]any); ok {
			subs = append(subs, p)
		}
		for _, s := range subs {
			if m, ok := s.(map[string]any); ok {
				if s := walk(m); s != "" {
					return s
				}
			}
		}
		return ""
	}
	for _, n := range nodes {
		if s := walk(n); s != "" {
			return s
		}
	}
	return ""
}
