package snapshot_test

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/flowsnap/flowsnap/cursor"
	"github.com/flowsnap/flowsnap/engine"
	"github.com/flowsnap/flowsnap/fault"
	"github.com/flowsnap/flowsnap/snapshot"
	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/storetest"
)

// TestRunsAndParentsReadAsApart reads runs by id with their parents
// (Reader.RunsAndParents), alone and in a transaction, first and again
// once the run cache holds them and after a parent changed, and runs with
// pages and the parents of either (Reader.RunsPagesAndParents), and checks
// every result against the same read made apart: Load of the ids, then
// Load of each parent that is not one of the runs read.
func TestRunsAndParentsReadAsApart(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		f := newFixture(t, d)
		f.create(t,
			engine.NewRun{ID: "top", FlowName: "fan"},
			engine.NewRun{ID: "mid-a", FlowName: "mid", Parents: []engine.ParentEdge{{ParentID: "top", Seq: 0}}},
			engine.NewRun{ID: "mid-b", FlowName: "mid", Parents: []engine.ParentEdge{{ParentID: "top", Seq: 1}}},
			engine.NewRun{ID: "leaf-1", FlowName: "leaf", Parents: []engine.ParentEdge{{ParentID: "mid-a", Seq: 0}}},
			engine.NewRun{ID: "leaf-2", FlowName: "leaf", Parents: []engine.ParentEdge{{ParentID: "mid-a", Seq: 1}}},
			engine.NewRun{ID: "leaf-3", FlowName: "leaf", Parents: []engine.ParentEdge{{ParentID: "mid-b", Seq: 0}}},
			engine.NewRun{ID: "gone", FlowName: "leaf"},
		)
		f.do(t, func(tx *engine.Tx) error { return tx.Delete(context.Background(), "gone") })
		ctx := context.Background()
		// apart reads what is wanted, without a run cache of its own:
		// f.r's holds only what the reads checked put there.
		apart := snapshot.NewReader(f.ro)
		apart.SetRunCache(0)

		// wantParents are the parents of runs, read apart, leaving out
		// those among read.
		wantParents := func(t *testing.T, runs []snapshot.Snapshot, read []string) map[string]snapshot.Result[snapshot.Snapshot] {
			t.Helper()
			want := map[string]snapshot.Result[snapshot.Snapshot]{}
			for _, s := range runs {
				run, ok := s.(*snapshot.Run)
				if !ok || run.ExecutionParentID == nil || slices.Contains(read, *run.ExecutionParentID) {
					continue
				}
				res, err := apart.Load(ctx, []string{*run.ExecutionParentID})
				if err != nil {
					t.Fatal(err)
				}
				want[*run.ExecutionParentID] = res[0]
			}
			return want
		}
		sameParents := func(t *testing.T, what string, got, want map[string]snapshot.Result[snapshot.Snapshot]) {
			t.Helper()
			if len(got) != len(want) {
				t.Errorf("%s: %d parents, want %d: %v", what, len(got), len(want), keys(got))
			}
			for id, w := range want {
				g, ok := got[id]
				if !ok || fault.CodeOf(g.Err) != fault.CodeOf(w.Err) || !reflect.DeepEqual(g.Value, w.Value) {
					t.Errorf("%s: parent %q: %#v (%v), want %#v (%v)", what, id, g.Value, g.Err, w.Value, w.Err)
				}
			}
		}

		all := []string{"leaf-1", "", "never", "gone", "leaf-3", "leaf-1", "mid-a", "leaf-2"}
		check := func(t *testing.T, what string, ids []string, alone bool, statements int) {
			t.Helper()
			want, err := apart.Load(ctx, ids)
			if err != nil {
				t.Fatal(err)
			}
			rctx, rd := f.r.Begin(ctx)
			if alone {
				rd.Alone()
			}
			got, parents, err := f.r.RunsAndParents(rctx, ids)
			if err != nil {
				t.Fatal(err)
			}
			if rd.RanAlone() != alone || rd.Statements() != statements {
				t.Errorf("%s: ran alone %v in %d statements, want %v in %d", what, rd.RanAlone(), rd.Statements(), alone, statements)
			}
			rd.End()
			var runs []snapshot.Snapshot
			for i := range ids {
				if fault.CodeOf(got[i].Err) != fault.CodeOf(want[i].Err) || !reflect.DeepEqual(got[i].Value, want[i].Value) {
					t.Errorf("%s: run %d %q: %#v (%v), want %#v (%v)", what, i, ids[i], got[i].Value, got[i].Err, want[i].Value, want[i].Err)
				}
				runs = append(runs, got[i].Value)
			}
			// mid-a is read by id: only top and mid-b are parents.
			sameParents(t, what, parents, wantParents(t, runs, ids))
			if len(parents) != 2 && !slices.Contains(ids, "leaf-b00") {
				t.Errorf("%s: parents %v, want mid-b and top", what, keys(parents))
			}
		}
		if d == store.SQLite {
			// The first read is one statement alone (with the position);
			// then the cache holds the runs (and their parents): their
			// revisions, the parents', and the rows that changed, in a
			// transaction.
			f.r.SetRunCache(1 << 20)
			held := []string{"leaf-1", "leaf-3", "", "mid-a", "leaf-2", "leaf-1"}
			check(t, "first", held, true, 2)
			check(t, "from the cache", held, false, 2)
			f.do(t, func(tx *engine.Tx) error { return tx.RequestCancel(ctx, "top") })
			check(t, "a parent changed", held, false, 3)
			f.do(t, func(tx *engine.Tx) error { return tx.RequestCancel(ctx, "leaf-3") })
			check(t, "a run changed", held, false, 3)
			check(t, "a batch the cache mostly misses", all, true, 2)
			f.r.SetRunCache(0)
		}
		check(t, "without a cache", all, true, 2)
		check(t, "in a transaction", all, false, 2)
		// Many runs: their rows, then the parents they name, in a
		// transaction.
		var many []string
		var more []engine.NewRun
		for i := range 40 {
			id := fmt.Sprintf("leaf-b%02d", i)
			many = append(many, id)
			more = append(more, engine.NewRun{ID: id, FlowName: "leaf", Parents: []engine.ParentEdge{{ParentID: "mid-b", Seq: int64(i + 1)}}})
		}
		f.create(t, more...)
		all = append(many, all...)
		check(t, "many runs", all, false, 3)
		if runs, parents, err := f.r.RunsAndParents(ctx, []string{"", "top"}); err != nil || runs[1].Value.SnapshotID() != "top" || len(parents) != 0 {
			t.Errorf("a run without a parent: %+v %v %v", runs, parents, err)
		}

		// Runs and pages with the parents of either.
		reqs := []snapshot.RunPageRequest{
			{Kind: cursor.Children, PageRequest: snapshot.PageRequest{Anchor: "top"}},
			{Kind: cursor.Rounds, PageRequest: snapshot.PageRequest{Anchor: "leaf-2"}},
		}
		byID := []string{"leaf-1", "leaf-3", "never"}
		two := 2
		small := []snapshot.RunPageRequest{
			{Kind: cursor.Children, PageRequest: snapshot.PageRequest{Anchor: "top", First: &two}},
			{Kind: cursor.Rounds, PageRequest: snapshot.PageRequest{Anchor: "leaf-2", First: &two}},
		}
		for _, c := range []struct {
			which snapshot.Parents
			reqs  []snapshot.RunPageRequest
		}{{snapshot.Parents{OfRuns: true}, reqs}, {snapshot.Parents{OfPages: true}, reqs}, {snapshot.Parents{OfRuns: true, OfPages: true}, reqs},
			{snapshot.Parents{}, reqs}, {snapshot.Parents{OfRuns: true, OfPages: true}, small}} {
			which, reqs := c.which, c.reqs
			// Pages of a hundred: their runs' parents are read after
			// them; pages of two, in their statement.
			after := which.OfPages && reqs[0].First == nil
			wantRuns, wantPages, _, err := apart.RunsPagesAndParents(ctx, byID, reqs, snapshot.Parents{})
			if err != nil {
				t.Fatal(err)
			}
			rctx, rd := f.r.Begin(ctx)
			rd.Alone()
			runs, pages, parents, err := f.r.RunsPagesAndParents(rctx, byID, reqs, which)
			if err != nil {
				t.Fatal(err)
			}
			// The parents of a few runs are read in their statement,
			// alone; those of many after it, when any is missing (top),
			// in a transaction.
			if alone, n := !after, 2+btoi(after); rd.RanAlone() != alone || rd.Statements() != n {
				t.Errorf("%+v: ran alone %v in %d statements, want %v in %d", which, rd.RanAlone(), rd.Statements(), alone, n)
			}
			rd.End()
			if !reflect.DeepEqual(runs, wantRuns) || !reflect.DeepEqual(pages, wantPages) {
				t.Errorf("%+v: the runs and pages differ from those read without parents", which)
			}
			var read []string
			var snaps []snapshot.Snapshot
			read = append(read, byID...)
			for _, p := range pages {
				for _, e := range p.Value.Edges {
					read = append(read, e.RunID)
					if which.OfPages {
						snaps = append(snaps, e.Node.Value)
					}
				}
			}
			if which.OfRuns {
				for _, r := range runs {
					snaps = append(snaps, r.Value)
				}
			}
			sameParents(t, "pages", parents, wantParents(t, snaps, read))
			// mid-a and mid-b are on top's children page: the runs by id
			// have no parent to read, and the pages' runs top alone.
			if which.OfPages && len(parents) != 1 || !which.OfPages && len(parents) != 0 {
				t.Errorf("%+v: parents %v", which, keys(parents))
			}
		}
		noOpenReads(t, f.ro)
	})
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// TestParentsReadAfterAsTheOperationsLastRead reads runs by id, and a page
// of children, with parents too many for the one statement, as an
// operation's last read (Read.EndWithNext) in a transaction opened by a
// read before it: the parents' second statement is read, not refused.
func TestParentsReadAfterAsTheOperationsLastRead(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		f := newFixture(t, d)
		runs := []engine.NewRun{{ID: "hub", FlowName: "hub"}}
		var ids []string
		for i := range 40 {
			ids = append(ids, fmt.Sprintf("c%02d", i))
			runs = append(runs, engine.NewRun{ID: fmt.Sprintf("p%02d", i), FlowName: "p"},
				engine.NewRun{ID: ids[i], FlowName: "c", Parents: []engine.ParentEdge{{ParentID: fmt.Sprintf("p%02d", i)}}},
				engine.NewRun{ID: fmt.Sprintf("h%02d", i), FlowName: "h", Parents: []engine.ParentEdge{{ParentID: "hub", Seq: int64(i)}}})
		}
		f.create(t, runs...)
		f.r.SetRunCache(0)
		last := func(t *testing.T) context.Context {
			t.Helper()
			ctx, rd := f.r.Begin(context.Background())
			t.Cleanup(rd.End)
			// A read of two runs opens the transaction with its statement.
			if _, err := f.r.Runs(ctx, []string{"p00", "p01"}); err != nil {
				t.Fatal(err)
			}
			rd.EndWithNext()
			return ctx
		}
		t.Run("runs by id", func(t *testing.T) {
			_, parents, err := f.r.RunsAndParents(last(t), ids)
			if err != nil {
				t.Fatal(err)
			}
			if len(parents) != len(ids) {
				t.Fatalf("%d parents, want %d", len(parents), len(ids))
			}
		})
		t.Run("a page of children", func(t *testing.T) {
			req := snapshot.RunPageRequest{Kind: cursor.Children, PageRequest: snapshot.PageRequest{Anchor: "hub", First: ptr(40)}}
			_, pages, parents, err := f.r.RunsPagesAndParents(last(t), nil, []snapshot.RunPageRequest{req}, snapshot.Parents{OfPages: true})
			if err != nil {
				t.Fatal(err)
			}
			if n := len(pages[0].Value.Edges); n != 40 {
				t.Fatalf("%d edges, want 40", n)
			}
			if _, ok := parents["hub"]; !ok || len(parents) != 1 {
				t.Fatalf("parents %v, want the hub's", parents)
			}
		})
	})
}
