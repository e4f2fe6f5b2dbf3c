package snapshot_test

import (
	"context"
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

// oddFlows are flow names beside the seeded ones that sort and bound
// prefixes in ways plain ASCII names do not: a code point above the BMP, the
// last code point, names one a prefix of another; and longName, text no id
// could be (the engine's writer refuses it; another writer may not).
var oddFlows = []string{"billing", "billing-a", "billing-b", "billing\U0010FFFF", "billinh", "bíll", "bill\U0001F4B8",
	"\U0010FFFF", "\U0010FFFFz"}

var longName = strings.Repeat("long", 300)

func opsFixture(t *testing.T, d store.Dialect, runs int) *fixture {
	t.Helper()
	f := listFixture(t, d, runs)
	var extra []engine.NewRun
	for i, name := range oddFlows {
		// Two runs of each name: a name is listed once however many runs
		// it has.
		for j := range 2 {
			extra = append(extra, engine.NewRun{ID: fmt.Sprintf("odd-%d-%d", i, j), FlowName: name, CreatedAt: engine.DefaultSeedNow - 7})
		}
	}
	f.create(t, extra...)
	if err := f.db.Write(context.Background(), func(tx store.Tx) error {
		_, err := tx.Exec(context.Background(), `INSERT INTO flows_runs (run_id, status, created_at_ms, state_json) VALUES ('odd-long', 'pending', 5, $1)`,
			`{"flowName":"`+longName+`"}`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return f
}

// distinctFlows is the brute-force list of flows: every live run's flow
// name once, in code-point order (which Go's byte order of UTF-8 is).
func distinctFlows(all []*snapshot.Run, prefix string) []string {
	var names []string
	for _, r := range all {
		if strings.HasPrefix(r.FlowName, prefix) {
			names = append(names, r.FlowName)
		}
	}
	sort.Strings(names)
	return slices.Compact(names)
}

func (f *fixture) flows(t *testing.T, ctx context.Context, prefix *string, size int) []string {
	t.Helper()
	var names []string
	var after *string
	for pages := 0; ; pages++ {
		if pages > 10_000 {
			t.Fatal("the flows do not end")
		}
		p, err := f.r.Flows(ctx, snapshot.FlowsRequest{First: &size, After: after, Prefix: prefix})
		if err != nil {
			t.Fatalf("Flows: %v", err)
		}
		if len(p.Nodes) > size || (p.PageInfo.HasNextPage && len(p.Nodes) != size) {
			t.Fatalf("a page of %d names of %d, hasNextPage %v", len(p.Nodes), size, p.PageInfo.HasNextPage)
		}
		names = append(names, p.Nodes...)
		if !p.PageInfo.HasNextPage {
			return names
		}
		after = p.PageInfo.EndCursor
	}
}

// TestFlowsPagesEveryDistinctName pages the flows, whole and by prefix, at
// several page sizes, and compares them with every live run's flow name,
// each once, in code-point order.
func TestFlowsPagesEveryDistinctName(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		f := opsFixture(t, d, 300)
		all := f.allRuns(t)
		ctx := context.Background()
		for _, prefix := range []*string{nil, ptr(""), ptr("b"), ptr("billing"), ptr("billing-"), ptr("bí"), ptr("bill\U0001F4B8"),
			ptr("\U0010FFFF"), ptr("long"), ptr("no such flow")} {
			p := ""
			if prefix != nil {
				p = *prefix
			}
			want := distinctFlows(all, p)
			for _, size := range []int{1, 3, 200} {
				t.Run(fmt.Sprintf("prefix %q by %d", p, size), func(t *testing.T) {
					got := f.flows(t, ctx, prefix, size)
					if !slices.Equal(got, want) {
						t.Fatalf("flows %q,\nbrute force %q", got, want)
					}
				})
			}
		}
		if n := len(distinctFlows(all, "")); n < len(oddFlows)+3 {
			t.Fatalf("only %d distinct flows: the fixture is not what this test is about", n)
		}
		t.Run("an empty page has no cursors", func(t *testing.T) {
			p, err := f.r.Flows(ctx, snapshot.FlowsRequest{Prefix: ptr("no such flow")})
			if err != nil || len(p.Nodes) != 0 || p.PageInfo.HasNextPage || p.PageInfo.EndCursor != nil || p.Nodes == nil {
				t.Fatalf("%+v, %v", p, err)
			}
		})
	})
}

func TestFlowsRefusals(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		f := opsFixture(t, d, 40)
		ctx := context.Background()
		p, err := f.r.Flows(ctx, snapshot.FlowsRequest{First: ptr(1), Prefix: ptr("billing")})
		if err != nil || p.PageInfo.EndCursor == nil {
			t.Fatalf("first page: %+v, %v", p, err)
		}
		c := *p.PageInfo.EndCursor
		source := f.storePosition(t).Source
		list, err := f.r.ListRuns(ctx, snapshot.ListRequest{First: ptr(1)})
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			name string
			req  snapshot.FlowsRequest
			code fault.Code
			says string
		}{
			{"a cursor of another prefix", snapshot.FlowsRequest{Prefix: ptr("bill"), After: &c}, fault.BadCursor, "another prefix"},
			{"a cursor of no prefix", snapshot.FlowsRequest{After: &c}, fault.BadCursor, "another prefix"},
			{"a cursor of another store", snapshot.FlowsRequest{After: ptr(snapshot.FlowsCursor(strings.Repeat("0", 32), "", "x"))}, fault.BadCursor, "another store"},
			{"a list cursor", snapshot.FlowsRequest{After: list.PageInfo.EndCursor}, fault.BadCursor, "is for list, not flows"},
			{"a children cursor", snapshot.FlowsRequest{After: ptr(childrenCursor(source, "x", 0, "y"))}, fault.BadCursor, "is for children, not flows"},
			{"a flows cursor without a name", snapshot.FlowsRequest{After: ptr(cursor.Encode(cursor.Cursor{Source: source, Anchor: "a", Kind: cursor.Flows}))}, fault.BadCursor, "last name"},
			{"a malformed cursor", snapshot.FlowsRequest{After: ptr("%%%")}, fault.BadCursor, "base64url"},
			{"first 0", snapshot.FlowsRequest{First: ptr(0)}, fault.BadUserInput, "first"},
			{"first 201", snapshot.FlowsRequest{First: ptr(201)}, fault.BadUserInput, "first"},
			{"first -1", snapshot.FlowsRequest{First: ptr(-1)}, fault.BadUserInput, "first"},
			{"a prefix that is not UTF-8", snapshot.FlowsRequest{Prefix: ptr("bill\xff")}, fault.BadUserInput, "prefix"},
			{"a prefix with NUL", snapshot.FlowsRequest{Prefix: ptr("bill\x00")}, fault.BadUserInput, "prefix"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				_, err := f.r.Flows(ctx, tc.req)
				if fe := wantCode(t, err, tc.code); !strings.Contains(fe.Message, tc.says) && !strings.Contains(err.Error(), tc.says) {
					t.Fatalf("error %q does not say %q", err, tc.says)
				}
			})
		}
		t.Run("a flows cursor is refused by listRuns", func(t *testing.T) {
			_, err := f.r.ListRuns(ctx, snapshot.ListRequest{After: &c})
			wantCode(t, err, fault.BadCursor)
		})
		t.Run("a cursor continues its prefix", func(t *testing.T) {
			p, err := f.r.Flows(ctx, snapshot.FlowsRequest{Prefix: ptr("billing"), After: &c})
			if err != nil || len(p.Nodes) == 0 || p.Nodes[0] != "billing-a" {
				t.Fatalf("%+v, %v", p, err)
			}
		})
	})
}

func TestPrefixEnd(t *testing.T) {
	for _, tc := range []struct {
		p, end string
		ok     bool
	}{
		{"", "", false},
		{"abc", "abd", true},
		{"a\U0010FFFF", "b", true},
		{"\U0010FFFF\U0010FFFF", "", false},
		{"a\uD7FF", "a\uE000", true},
		{"bí", "bî", true},
	} {
		end, ok := snapshot.PrefixEnd(tc.p)
		if end != tc.end || ok != tc.ok {
			t.Errorf("prefixEnd(%q) = %q, %v; want %q, %v", tc.p, end, ok, tc.end, tc.ok)
		}
		// Every string beginning with p is below the end.
		for _, s := range []string{tc.p, tc.p + "\U0010FFFF", tc.p + "\x00", tc.p + "zz"} {
			if ok && !(s < end) {
				t.Errorf("%q begins with %q and is not below %q", s, tc.p, end)
			}
		}
	}
}

// TestRunStatsAgreesWithBruteForce counts every filter status by status,
// with bounds around each status's own count, and compares with a
// brute-force count: capped exactly when more runs match than the bound.
func TestRunStatsAgreesWithBruteForce(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		f := listFixture(t, d, 300)
		all := f.allRuns(t)
		ctx := context.Background()
		nonzero := 0
		for name, filter := range listFilters(t, all) {
			t.Run(name, func(t *testing.T) {
				n := map[vocab.Status]int64{}
				for _, r := range all {
					if matches(filter, r) {
						n[r.Status]++
					}
				}
				bounds := []int64{0, 1, snapshot.DefaultCountUpTo}
				for _, c := range n {
					bounds = append(bounds, c-1, c, c+1)
				}
				for _, upTo := range bounds {
					if upTo < 0 {
						continue
					}
					got, err := f.r.RunStats(ctx, filter, upTo)
					if err != nil {
						t.Fatal(err)
					}
					want := make([]snapshot.StatusCount, len(vocab.Statuses))
					for i, s := range vocab.Statuses {
						want[i] = snapshot.StatusCount{Status: s, Count: min(n[s], upTo), Capped: n[s] > upTo}
					}
					if !slices.Equal(got, want) {
						t.Fatalf("upTo %d: %+v,\nbrute force %+v", upTo, got, want)
					}
				}
				if len(n) > 1 {
					nonzero++
				}
			})
		}
		if nonzero == 0 {
			t.Fatal("no filter selected runs of two statuses")
		}
		t.Run("bad bounds and ids are refused", func(t *testing.T) {
			for _, upTo := range []int64{-1, snapshot.MaxCountUpTo + 1} {
				_, err := f.r.RunStats(ctx, snapshot.RunFilter{}, upTo)
				wantCode(t, err, fault.BadUserInput)
			}
			_, err := f.r.RunStats(ctx, snapshot.RunFilter{LineageID: ptr("")}, 10)
			wantCode(t, err, fault.BadUserInput)
		})
	})
}

// TestRunStatsIsOnePosition counts by status while the simulated engine
// writes, in one read with a CountRuns of each status: the two agree,
// being read at one position.
func TestRunStatsIsOnePosition(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		f := listFixture(t, d, 200)
		ctx := context.Background()
		simCtx, stop := context.WithCancel(ctx)
		simDone := make(chan error, 1)
		go func() { simDone <- engine.Simulate(simCtx, f.db, engine.SimOptions{Rate: 300, Seed: 5}) }()
		for range 10 {
			rctx, rd := f.r.Begin(ctx)
			stats, err := f.r.RunStats(rctx, snapshot.RunFilter{}, snapshot.MaxCountUpTo)
			if err != nil {
				t.Fatal(err)
			}
			time.Sleep(5 * time.Millisecond) // let the engine write within the read
			for _, s := range stats {
				c, err := f.r.CountRuns(rctx, snapshot.RunFilter{Status: []vocab.Status{s.Status}}, snapshot.MaxCountUpTo)
				if err != nil {
					t.Fatal(err)
				}
				if c.Count != s.Count {
					t.Fatalf("%s: runStats %d, countRuns in the same read %d", s.Status, s.Count, c.Count)
				}
			}
			rd.End()
		}
		stop()
		if err := <-simDone; err != nil {
			t.Fatal(err)
		}
	})
}

// TestOpsPlansUseIndexes reads the plans of the flows' skip scan, of
// runStats and of the counts a chart of runs per hour makes (created or
// finished in a window, overall, by status, by flow): each an index range
// at every depth, never a scan of flows_runs or a sort.
func TestOpsPlansUseIndexes(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		f := opsFixture(t, d, 300)
		ctx := context.Background()
		if d == store.Postgres {
			if _, err := f.db.Pool().Exec(ctx, `ANALYZE flows_runs`); err != nil {
				t.Fatal(err)
			}
		}
		t.Run("flows", func(t *testing.T) {
			for _, tc := range []struct {
				prefix string
				after  *string
			}{{"", nil}, {"", ptr("billing")}, {"bill", nil}, {"bill", ptr("billing-a")}, {"\U0010FFFF", nil}} {
				sql, args := snapshot.FlowsSQL(d, tc.prefix, tc.after, 101)
				wantIndexRange(t, f, sql, args, "flows_runs_flow_names", false)
			}
		})
		hour := int64(engine.DefaultSeedNow - 3_600_000)
		window := func(after, before *snapshot.Millis) snapshot.RunFilter {
			return snapshot.RunFilter{FinishedAfter: after, FinishedBefore: before}
		}
		lo, hi := snapshot.Millis(hour), snapshot.Millis(hour+3_600_000)
		flow := "billing"
		for name, tc := range map[string]struct {
			filter snapshot.RunFilter
			index  string
		}{
			"finished in an hour":                {window(&lo, &hi), "flows_runs_finished"},
			"failed in an hour":                  {snapshot.RunFilter{FinishedAfter: &lo, FinishedBefore: &hi, Status: []vocab.Status{vocab.StatusFailed}}, "flows_runs_by_status_finished"},
			"finished in an hour of a flow":      {snapshot.RunFilter{FinishedAfter: &lo, FinishedBefore: &hi, FlowName: &flow}, "flows_runs_by_flow_finished"},
			"failed in an hour of a flow":        {snapshot.RunFilter{FinishedAfter: &lo, FinishedBefore: &hi, FlowName: &flow, Status: []vocab.Status{vocab.StatusFailed}}, "flows_runs_by_flow_status_finished"},
			"started in an hour":                 {snapshot.RunFilter{CreatedAfter: &lo, CreatedBefore: &hi}, "flows_runs_created"},
			"started in an hour of a flow":       {snapshot.RunFilter{CreatedAfter: &lo, CreatedBefore: &hi, FlowName: &flow}, "flows_runs_by_flow"},
			"finished since an instant":          {window(&lo, nil), "flows_runs_finished"},
			"finished since an instant, by flow": {snapshot.RunFilter{FinishedAfter: &lo, FlowName: &flow}, "flows_runs_by_flow_finished"},
		} {
			t.Run("count "+name, func(t *testing.T) {
				sql, args := snapshot.CountSQL(d, tc.filter, 10_000)
				wantIndexRange(t, f, sql, args, tc.index, false)
			})
			t.Run("runStats "+name, func(t *testing.T) {
				f2 := tc.filter
				f2.Status = nil
				sql, args := snapshot.StatsSQL(d, f2, 10_000)
				// Each status is counted in the index's twin with the status.
				byStatus := map[string]string{"flows_runs_finished": "flows_runs_by_status_finished", "flows_runs_by_flow_finished": "flows_runs_by_flow_status_finished",
					"flows_runs_created": "flows_runs_by_status", "flows_runs_by_flow": "flows_runs_by_flow_status"}[tc.index]
				if byStatus == "" {
					byStatus = tc.index
				}
				wantIndexRange(t, f, sql, args, byStatus, false)
			})
		}
		t.Run("runStats of every run", func(t *testing.T) {
			sql, args := snapshot.StatsSQL(d, snapshot.RunFilter{}, 10_000)
			plan := explain(t, f, sql, args)
			if strings.Count(plan, "flows_runs_by_status") < len(vocab.Statuses) {
				t.Fatalf("the plan does not count each status in flows_runs_by_status\n%s\nplan:\n%s", sql, plan)
			}
			if problem := badPlan(d, plan, false); problem != "" {
				t.Fatalf("%s\n%s\nplan:\n%s", problem, sql, plan)
			}
		})
	})
}

// TestListCursorDigests pins the digest list cursors are bound to: a list
// without the finish filters keeps the digest it had before they existed,
// so its cursors stay valid, and each finish filter and order is a list of
// its own.
func TestListCursorDigests(t *testing.T) {
	for _, tc := range []struct {
		req  snapshot.ListRequest
		want string
	}{
		{snapshot.ListRequest{}, "f9b01fae1fae568128383a736bdf43cb"},
		{snapshot.ListRequest{Filter: snapshot.RunFilter{Status: []vocab.Status{vocab.StatusFailed}}, Order: snapshot.OldestFirst}, "92c8a0c6322cf30ce39543424a7e0cfd"},
	} {
		if got := snapshot.ListDigest(tc.req); got != tc.want {
			t.Errorf("digest of %+v: %s, want %s (the list's cursors would stop working)", tc.req, got, tc.want)
		}
	}
	a, b := snapshot.Millis(1), snapshot.Millis(2)
	seen := map[string]string{}
	for name, req := range map[string]snapshot.ListRequest{
		"no filter":             {},
		"finishedAfter 1":       {Filter: snapshot.RunFilter{FinishedAfter: &a}},
		"finishedAfter 2":       {Filter: snapshot.RunFilter{FinishedAfter: &b}},
		"finishedBefore 1":      {Filter: snapshot.RunFilter{FinishedBefore: &a}},
		"createdAfter 1":        {Filter: snapshot.RunFilter{CreatedAfter: &a}},
		"finished newest first": {Order: snapshot.FinishedNewestFirst},
		"oldest first":          {Order: snapshot.OldestFirst},
	} {
		dg := snapshot.ListDigest(req)
		if other, ok := seen[dg]; ok {
			t.Errorf("%s and %s share digest %s", name, other, dg)
		}
		seen[dg] = name
	}
}

func TestFinishedListRefusals(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		f := listFixture(t, d, 60)
		ctx := context.Background()
		since := snapshot.Millis(0)
		req := snapshot.ListRequest{Filter: snapshot.RunFilter{FinishedAfter: &since}, Order: snapshot.FinishedNewestFirst, First: ptr(1)}
		p, err := f.r.ListRuns(ctx, req)
		if err != nil || p.PageInfo.EndCursor == nil {
			t.Fatalf("first page: %+v, %v", p, err)
		}
		c := p.PageInfo.EndCursor
		later := snapshot.Millis(1)
		for name, other := range map[string]snapshot.ListRequest{
			"another finished range": {Filter: snapshot.RunFilter{FinishedAfter: &later}, Order: snapshot.FinishedNewestFirst, After: c},
			"the creation order":     {Filter: req.Filter, Order: snapshot.NewestFirst, After: c},
			"no finished filter":     {Order: snapshot.FinishedNewestFirst, After: c},
		} {
			t.Run(name, func(t *testing.T) {
				_, err := f.r.ListRuns(ctx, other)
				wantCode(t, err, fault.BadCursor)
			})
		}
		t.Run("an unknown order", func(t *testing.T) {
			_, err := f.r.ListRuns(ctx, snapshot.ListRequest{Order: "SIDEWAYS"})
			wantCode(t, err, fault.BadUserInput)
		})
		t.Run("the cursor continues its list", func(t *testing.T) {
			req.After = c
			if _, err := f.r.ListRuns(ctx, req); err != nil {
				t.Fatal(err)
			}
		})
	})
}
