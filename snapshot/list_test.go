package snapshot_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/flowsnap/flowsnap/cursor"
	"github.com/flowsnap/flowsnap/engine"
	"github.com/flowsnap/flowsnap/fault"
	"github.com/flowsnap/flowsnap/snapshot"
	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/storetest"
	"github.com/flowsnap/flowsnap/store/vocab"
)

// listFixture is a seeded store with a few runs created at one instant, so
// that lists must break ties by run id.
func listFixture(t *testing.T, d store.Dialect, runs int) *fixture {
	t.Helper()
	f := newFixture(t, d)
	if _, err := engine.Seed(context.Background(), f.db, engine.SeedOptions{Runs: runs, Seed: 21}); err != nil {
		t.Fatal(err)
	}
	var ties []engine.NewRun
	for _, id := range []string{"tie-b", "tie-a", "tie-c"} {
		ties = append(ties, engine.NewRun{ID: id, FlowName: "ties", CreatedAt: engine.DefaultSeedNow - 1})
	}
	f.create(t, ties...)
	return f
}

// allRuns reads every live run of the store, in one snapshot.
func (f *fixture) allRuns(t *testing.T) []*snapshot.Run {
	t.Helper()
	ctx := context.Background()
	rctx, rd := f.r.Begin(ctx)
	defer rd.End()
	ids := f.runIDs(t, `SELECT run_id FROM flows_runs`)
	res, err := f.r.Load(rctx, ids)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]*snapshot.Run, len(res))
	for i, r := range res {
		out[i] = mustRun(t, r)
	}
	return out
}

// runIDs reads the ids a query of the store selects, directly.
func (f *fixture) runIDs(t *testing.T, query string) []string {
	t.Helper()
	ctx := context.Background()
	tx, err := f.db.BeginRead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	rows, err := tx.Query(ctx, query)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return ids
}

// matches is the brute-force reading of a filter (docs/contract.md#listing).
func matches(f snapshot.RunFilter, r *snapshot.Run) bool {
	eq := func(want *string, got *string) bool { return want == nil || (got != nil && *got == *want) }
	var reason *string
	var kind vocab.WaitingKind
	if r.Waiting != nil {
		reason, kind = &r.Waiting.Reason, r.Waiting.Kind
	}
	pending := r.Cancellation.RequestedAt != nil && r.FinishedAt == nil
	return (f.Status == nil || slices.Contains(f.Status, r.Status)) &&
		(f.FlowName == nil || *f.FlowName == r.FlowName) &&
		eq(f.ParentRunID, r.ParentRunID) && eq(f.ExecutionParentID, r.ExecutionParentID) &&
		(f.LineageID == nil || *f.LineageID == r.LineageID) &&
		eq(f.WaitingReason, reason) &&
		(f.WaitingKind == nil || (r.Waiting != nil && slices.Contains(f.WaitingKind, kind))) &&
		(f.CreatedAfter == nil || r.CreatedAt >= *f.CreatedAfter) &&
		(f.CreatedBefore == nil || r.CreatedAt < *f.CreatedBefore) &&
		(f.RootsOnly == nil || !*f.RootsOnly || r.ExecutionParentID == nil) &&
		(f.CancelRequested == nil || *f.CancelRequested == pending) &&
		(f.HeartbeatBefore == nil || (r.Status == vocab.StatusRunning && r.HeartbeatAt != nil && *r.HeartbeatAt < *f.HeartbeatBefore)) &&
		(f.FinishedAfter == nil || (r.FinishedAt != nil && *r.FinishedAt >= *f.FinishedAfter)) &&
		(f.FinishedBefore == nil || (r.FinishedAt != nil && *r.FinishedAt < *f.FinishedBefore))
}

// ordinal is the run's key in a list of order o.
func ordinal(r *snapshot.Run, o snapshot.RunOrder) (snapshot.Millis, bool) {
	if o == snapshot.FinishedNewestFirst {
		if r.FinishedAt == nil {
			return 0, false
		}
		return *r.FinishedAt, true
	}
	return r.CreatedAt, true
}

func expected(all []*snapshot.Run, f snapshot.RunFilter, order snapshot.RunOrder) []string {
	var sel []*snapshot.Run
	for _, r := range all {
		if _, listed := ordinal(r, order); listed && matches(f, r) {
			sel = append(sel, r)
		}
	}
	sort.Slice(sel, func(i, j int) bool {
		a, b := sel[i], sel[j]
		oa, _ := ordinal(a, order)
		ob, _ := ordinal(b, order)
		less := oa < ob || (oa == ob && a.ID < b.ID)
		if order != snapshot.OldestFirst {
			return !less
		}
		return less
	})
	ids := make([]string, len(sel))
	for i, r := range sel {
		ids[i] = r.ID
	}
	return ids
}

// listFilters are one filter of each field, and a few combinations, with
// values taken from the store so that each selects something.
func listFilters(t *testing.T, all []*snapshot.Run) map[string]snapshot.RunFilter {
	t.Helper()
	count := func(key func(*snapshot.Run) *string) string {
		n := map[string]int{}
		best := ""
		for _, r := range all {
			if k := key(r); k != nil {
				n[*k]++
				if n[*k] > n[best] {
					best = *k
				}
			}
		}
		if best == "" {
			t.Fatalf("the seeded store has no run for a filter")
		}
		return best
	}
	flow := count(func(r *snapshot.Run) *string { return &r.FlowName })
	parent := count(func(r *snapshot.Run) *string { return r.ParentRunID })
	execParent := count(func(r *snapshot.Run) *string { return r.ExecutionParentID })
	lineage := count(func(r *snapshot.Run) *string {
		if r.RoundOrdinal == 0 && len(all) > 0 {
			return nil
		}
		return &r.LineageID
	})
	reason := count(func(r *snapshot.Run) *string {
		if r.Waiting == nil {
			return nil
		}
		return &r.Waiting.Reason
	})
	var created, beats, finished []snapshot.Millis
	for _, r := range all {
		created = append(created, r.CreatedAt)
		if r.HeartbeatAt != nil {
			beats = append(beats, *r.HeartbeatAt)
		}
		if r.FinishedAt != nil {
			finished = append(finished, *r.FinishedAt)
		}
	}
	slices.Sort(created)
	slices.Sort(beats)
	slices.Sort(finished)
	if len(beats) < 2 || len(finished) < 4 {
		t.Fatalf("the seeded store has %d running runs and %d finished ones", len(beats), len(finished))
	}
	lo, hi := created[len(created)/4], created[3*len(created)/4]
	stale := beats[len(beats)/2]
	// Finished since a time some runs created before it finished after.
	since, until := finished[len(finished)/3], finished[3*len(finished)/4]
	filters := map[string]snapshot.RunFilter{
		"no filter":                                 {},
		"status FAILED":                             {Status: []vocab.Status{vocab.StatusFailed}},
		"status RUNNING or SUSPENDED":               {Status: []vocab.Status{vocab.StatusSuspended, vocab.StatusRunning, vocab.StatusSuspended}},
		"flowName":                                  {FlowName: &flow},
		"flowName and status":                       {FlowName: &flow, Status: []vocab.Status{vocab.StatusCompleted}},
		"parentRunId":                               {ParentRunID: &parent},
		"executionParentId":                         {ExecutionParentID: &execParent},
		"lineageId":                                 {LineageID: &lineage},
		"waitingReason":                             {WaitingReason: &reason},
		"waitingKind SIGNAL or OTHER":               {WaitingKind: []vocab.WaitingKind{vocab.WaitingSignal, vocab.WaitingOther}},
		"waitingKind TIMER":                         {WaitingKind: []vocab.WaitingKind{vocab.WaitingTimer}},
		"createdAfter":                              {CreatedAfter: &lo},
		"createdBefore":                             {CreatedBefore: &hi},
		"a created range":                           {CreatedAfter: &lo, CreatedBefore: &hi},
		"rootsOnly":                                 {RootsOnly: ptr(true)},
		"rootsOnly false":                           {RootsOnly: ptr(false)},
		"cancelRequested":                           {CancelRequested: ptr(true)},
		"cancelRequested false":                     {CancelRequested: ptr(false)},
		"heartbeatBefore":                           {HeartbeatBefore: &stale},
		"heartbeatBefore and flow":                  {HeartbeatBefore: &stale, FlowName: &flow},
		"an empty status list":                      {Status: []vocab.Status{}},
		"an unknown flow":                           {FlowName: ptr("no such flow")},
		"an empty created range":                    {CreatedAfter: &hi, CreatedBefore: &lo},
		"finishedAfter":                             {FinishedAfter: &since},
		"finishedBefore":                            {FinishedBefore: &until},
		"a finished range":                          {FinishedAfter: &since, FinishedBefore: &until},
		"finishedAfter and status FAILED":           {FinishedAfter: &since, Status: []vocab.Status{vocab.StatusFailed}},
		"finishedAfter, flowName and status FAILED": {FinishedAfter: &since, FlowName: &flow, Status: []vocab.Status{vocab.StatusFailed}},
		"finishedAfter and createdBefore":           {FinishedAfter: &since, CreatedBefore: &since},
		"an empty finished range":                   {FinishedAfter: &until, FinishedBefore: &since},
	}
	// The runs a filter on creation alone misses: created before the
	// window, finished in it.
	if len(expected(all, filters["finishedAfter and createdBefore"], snapshot.FinishedNewestFirst)) == 0 {
		t.Fatal("the seeded store has no run created before a finish window and finished in it")
	}
	return filters
}

// TestListRunsAgreesWithBruteForce pages every filter to its end in both
// orders and compares the ids with a brute-force filter of every run.
func TestListRunsAgreesWithBruteForce(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		f := listFixture(t, d, 400)
		all := f.allRuns(t)
		ctx := context.Background()
		selected := 0
		for name, filter := range listFilters(t, all) {
			for _, order := range snapshot.RunOrders {
				t.Run(name+" "+string(order), func(t *testing.T) {
					want := expected(all, filter, order)
					size := 7
					if len(want) > 100 {
						size = 37
					}
					got := edgeIDs(walk(t, size, func(after *string) *snapshot.Page {
						p, err := f.r.ListRuns(ctx, snapshot.ListRequest{Filter: filter, Order: order, First: &size, After: after})
						if err != nil {
							t.Fatalf("ListRuns: %v", err)
						}
						for _, e := range p.Edges {
							run := mustRun(t, e.Node)
							if ord, _ := ordinal(run, order); run.ID != e.RunID || e.Ordinal != int64(ord) {
								t.Fatalf("edge %+v does not match its run", e)
							}
						}
						return p
					}))
					if !slices.Equal(got, want) {
						t.Fatalf("listed %d runs %v,\nbrute force %d %v", len(got), head(got), len(want), head(want))
					}
					selected += len(want)
				})
			}
		}
		if selected == 0 {
			t.Fatal("no filter selected anything")
		}
	})
}

func head(ids []string) []string { return ids[:min(len(ids), 12)] }

func TestListRunsRefusals(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		f := listFixture(t, d, 60)
		ctx := context.Background()
		failed := snapshot.RunFilter{Status: []vocab.Status{vocab.StatusFailed, vocab.StatusCompleted}}
		p, err := f.r.ListRuns(ctx, snapshot.ListRequest{Filter: failed, First: ptr(2)})
		if err != nil || p.PageInfo.EndCursor == nil {
			t.Fatalf("first page: %+v, %v", p, err)
		}
		c := *p.PageInfo.EndCursor
		other := strings.Repeat("0", 32)
		for _, tc := range []struct {
			name string
			req  snapshot.ListRequest
			code fault.Code
			says string
		}{
			{"a cursor of another filter", snapshot.ListRequest{Filter: snapshot.RunFilter{Status: []vocab.Status{vocab.StatusFailed}}, After: &c}, fault.BadCursor, "another filter or order"},
			{"a cursor of the other order", snapshot.ListRequest{Filter: failed, Order: snapshot.OldestFirst, After: &c}, fault.BadCursor, "another filter or order"},
			{"a cursor of another store", snapshot.ListRequest{Filter: failed, After: ptr(cursor.Encode(cursor.Cursor{Source: other, Anchor: snapshot.ListDigest(snapshot.ListRequest{Filter: failed}), Kind: cursor.List, Ordinal: 1, Last: "x"}))}, fault.BadCursor, "another store"},
			{"a children cursor", snapshot.ListRequest{After: ptr(childrenCursor(f.storePosition(t).Source, "x", 0, "y"))}, fault.BadCursor, "not list"},
			{"a malformed cursor", snapshot.ListRequest{After: ptr("%%%")}, fault.BadCursor, "base64url"},
			{"first 0", snapshot.ListRequest{First: ptr(0)}, fault.BadUserInput, "first"},
			{"first 201", snapshot.ListRequest{First: ptr(201)}, fault.BadUserInput, "first"},
			{"a malformed parent id", snapshot.ListRequest{Filter: snapshot.RunFilter{ParentRunID: ptr("")}}, fault.BadUserInput, "parentRunId"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				_, err := f.r.ListRuns(ctx, tc.req)
				if fe := wantCode(t, err, tc.code); !strings.Contains(fe.Message, tc.says) && !strings.Contains(err.Error(), tc.says) {
					t.Fatalf("error %q does not say %q", err, tc.says)
				}
			})
		}
		t.Run("the same filter spelled another way continues the list", func(t *testing.T) {
			same := snapshot.RunFilter{Status: []vocab.Status{vocab.StatusCompleted, vocab.StatusFailed, vocab.StatusFailed}, RootsOnly: ptr(false)}
			if _, err := f.r.ListRuns(ctx, snapshot.ListRequest{Filter: same, After: &c}); err != nil {
				t.Fatal(err)
			}
		})
		t.Run("countRuns refuses a bound beyond its limit", func(t *testing.T) {
			_, err := f.r.CountRuns(ctx, snapshot.RunFilter{}, snapshot.MaxCountUpTo+1)
			wantCode(t, err, fault.BadUserInput)
			_, err = f.r.CountRuns(ctx, snapshot.RunFilter{}, -1)
			wantCode(t, err, fault.BadUserInput)
		})
	})
}

func TestCountRuns(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		f := listFixture(t, d, 200)
		all := f.allRuns(t)
		ctx := context.Background()
		for name, filter := range listFilters(t, all) {
			t.Run(name, func(t *testing.T) {
				n := int64(len(expected(all, filter, snapshot.OldestFirst)))
				for _, upTo := range []int64{0, 1, n - 1, n, n + 1, snapshot.DefaultCountUpTo} {
					if upTo < 0 {
						continue
					}
					got, err := f.r.CountRuns(ctx, filter, upTo)
					if err != nil {
						t.Fatal(err)
					}
					if want := (snapshot.RunCount{Count: min(n, upTo), Capped: n > upTo}); got != want {
						t.Fatalf("upTo %d: %+v, want %+v", upTo, got, want)
					}
				}
			})
		}
	})
}

// TestListRunsWhileTheEngineWrites pages a list while the simulated engine
// writes: no run appears twice, and every run that was created before the
// first page and never changed since is listed.
func TestListRunsWhileTheEngineWrites(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		f := listFixture(t, d, 300)
		ctx := context.Background()
		before := f.allRuns(t)
		simCtx, stop := context.WithCancel(ctx)
		simDone := make(chan error, 1)
		go func() { simDone <- engine.Simulate(simCtx, f.db, engine.SimOptions{Rate: 300, Seed: 8}) }()
		for _, order := range []snapshot.RunOrder{snapshot.NewestFirst, snapshot.OldestFirst} {
			seen := map[string]bool{}
			size := 9
			var after *string
			for pages := 0; ; pages++ {
				p, err := f.r.ListRuns(ctx, snapshot.ListRequest{Order: order, First: &size, After: after})
				if err != nil {
					t.Fatal(err)
				}
				for _, e := range p.Edges {
					if seen[e.RunID] {
						t.Fatalf("%s: run %q listed twice", order, e.RunID)
					}
					seen[e.RunID] = true
				}
				if !p.PageInfo.HasNextPage {
					break
				}
				after = p.PageInfo.EndCursor
				time.Sleep(time.Millisecond) // let the engine write between pages
			}
			// A run can leave the list only by being deleted; created_at_ms
			// never changes, so every other run present before stays.
			for _, r := range before {
				if !seen[r.ID] {
					if res := f.runs(t, r.ID)[0]; res.Value != nil {
						if _, gone := res.Value.(*snapshot.Missing); !gone {
							t.Fatalf("%s: run %q, live before the first page and still live, was skipped", order, r.ID)
						}
					}
				}
			}
		}
		stop()
		if err := <-simDone; err != nil {
			t.Fatal(err)
		}
	})
}

// TestListPlansUseIndexes reads the plan of each single filter, and of
// status with flowName, in both orders, first page and deep page, and
// fails on a full scan of flows_runs or a sort.
func TestListPlansUseIndexes(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		f := listFixture(t, d, 300)
		all := f.allRuns(t)
		ctx := context.Background()
		filters := listFilters(t, all)
		if d == store.Postgres {
			if _, err := f.db.Pool().Exec(ctx, `ANALYZE flows_runs`); err != nil {
				t.Fatal(err)
			}
		}
		// The index each list reads: the planner must find it, which an
		// expression spelled differently from the index's would prevent.
		created := []snapshot.RunOrder{snapshot.NewestFirst, snapshot.OldestFirst}
		finished := []snapshot.RunOrder{snapshot.FinishedNewestFirst}
		const byFinish = " " + string(snapshot.FinishedNewestFirst)
		for name, index := range map[string]string{
			"no filter": "flows_runs_created", "status FAILED": "flows_runs_by_status", "flowName": "flows_runs_by_flow",
			"flowName and status": "flows_runs_by_flow_status", "parentRunId": "flows_runs_by_parent",
			"executionParentId": "flows_runs_by_execution_parent", "lineageId": "flows_runs_by_lineage",
			"waitingReason": "flows_runs_by_waiting_reason", "waitingKind TIMER": "flows_runs_by_waiting_kind",
			"createdAfter": "flows_runs_created", "createdBefore": "flows_runs_created", "rootsOnly": "flows_runs_roots",
			"cancelRequested": "flows_runs_cancel_pending", "heartbeatBefore": "flows_runs_by_status",
			// The finished runs by finish time: each filter the finish
			// indexes lead with, and the finish window itself.
			"no filter" + byFinish: "flows_runs_finished", "status FAILED" + byFinish: "flows_runs_by_status_finished",
			"flowName" + byFinish: "flows_runs_by_flow_finished", "flowName and status" + byFinish: "flows_runs_by_flow_status_finished",
			"finishedAfter" + byFinish: "flows_runs_finished", "finishedBefore" + byFinish: "flows_runs_finished",
			"a finished range" + byFinish: "flows_runs_finished", "finishedAfter and status FAILED" + byFinish: "flows_runs_by_status_finished",
			"finishedAfter, flowName and status FAILED" + byFinish: "flows_runs_by_flow_status_finished",
		} {
			orders := created
			if n, ok := strings.CutSuffix(name, byFinish); ok {
				name, orders = n, finished
			}
			for _, order := range orders {
				for _, deep := range []bool{false, true} {
					var after *cursor.Cursor
					if deep {
						after = &cursor.Cursor{Ordinal: int64(engine.DefaultSeedNow - 3_600_000), Last: "m"}
					}
					t.Run(fmt.Sprintf("%s %s deep=%v", name, order, deep), func(t *testing.T) {
						sql, args := snapshot.ListSQL(d, snapshot.ListRequest{Filter: filters[name], Order: order}, after)
						// Filters whose index holds only matching rows may read
						// it from its end: every entry read is on the page.
						// So does the finish index, of the finished runs only.
						whole := slices.Contains([]string{"no filter", "createdBefore", "rootsOnly", "cancelRequested"}, name) &&
							(order != snapshot.FinishedNewestFirst || name == "no filter")
						wantIndexRange(t, f, sql, args, index, whole)
					})
				}
			}
		}
	})
}

// wantIndexRange fails unless the plan of sql reads index, and reads
// flows_runs only by index ranges (or, when whole, a whole index in order),
// without a sort.
func wantIndexRange(t *testing.T, f *fixture, sql string, args []any, index string, whole bool) {
	t.Helper()
	plan := explain(t, f, sql, args)
	if !strings.Contains(plan, index) {
		t.Fatalf("the plan does not read %s\n%s\nplan:\n%s", index, sql, plan)
	}
	if problem := badPlan(f.d, plan, whole); problem != "" {
		t.Fatalf("%s\n%s\nplan:\n%s", problem, sql, plan)
	}
}

// explain returns the plan of sql: EXPLAIN QUERY PLAN lines on SQLite,
// EXPLAIN (FORMAT JSON) on PostgreSQL, where sequential scans, sorts and
// the joins that read a whole table are
// priced out so that the plan shows whether an index can serve the list at
// all (on a small table the planner rightly prefers a scan).
func explain(t testing.TB, f *fixture, sql string, args []any) string {
	t.Helper()
	ctx := context.Background()
	if f.d == store.SQLite {
		tx, err := f.db.BeginRead(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx)
		rows, err := tx.Query(ctx, "EXPLAIN QUERY PLAN "+sql, args...)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var b strings.Builder
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, "%d %d %s\n", id, parent, detail)
		}
		return b.String()
	}
	conn, err := f.db.Pool().Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	for _, s := range []string{"SET LOCAL enable_seqscan = off", "SET LOCAL enable_sort = off", "SET LOCAL enable_bitmapscan = off",
		"SET LOCAL enable_hashjoin = off", "SET LOCAL enable_mergejoin = off"} {
		if _, err := tx.Exec(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	var plan string
	if err := tx.QueryRow(ctx, "EXPLAIN (FORMAT JSON) "+sql, args...).Scan(&plan); err != nil {
		t.Fatal(err)
	}
	return plan
}

// badPlan says what is wrong with a list's plan: a scan of flows_runs
// that is not an index range (a scan of a whole index in its order is
// allowed when whole, since every entry it reads then matches), or a sort
// (a list is read in index order).
func badPlan(d store.Dialect, plan string, whole bool) string {
	if d == store.SQLite {
		for _, line := range strings.Split(plan, "\n") {
			switch {
			case strings.Contains(line, "TEMP B-TREE"):
				return "the plan sorts: " + line
			case strings.Contains(line, "SCAN flows_runs") && !(whole && strings.Contains(line, "INDEX")):
				return "the plan scans: " + line
			}
		}
		return ""
	}
	var nodes []map[string]any
	if err := json.Unmarshal([]byte(plan), &nodes); err != nil {
		return "unreadable plan: " + err.Error()
	}
	var walk func(n map[string]any) string
	walk = func(n map[string]any) string {
		switch typ, _ := n["Node Type"].(string); typ {
		case "Seq Scan", "Sort", "Incremental Sort", "Bitmap Heap Scan":
			return fmt.Sprintf("the plan has a %s on %v", typ, n["Relation Name"])
		case "Index Scan", "Index Only Scan":
			// An index read whole and filtered is a scan in disguise; the
			// running runs' heartbeats are the one filter left to check
			// row by row, among the running runs of the status index.
			_, cond := n["Index Cond"]
			filter, _ := n["Filter"].(string)
			if n["Relation Name"] == "flows_runs" && !whole && (!cond || (filter != "" && !strings.Contains(filter, "heartbeat_at_ms"))) {
				return fmt.Sprintf("the plan reads index %v without a range on the filter (cond %v, filter %q)", n["Index Name"], n["Index Cond"], filter)
			}
		}
		if p, ok := n["Plan"].(map[string]any); ok {
			if s := walk(p); s != "" {
				return s
			}
		}
		subs, _ := n["Plans"].([]any)
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
