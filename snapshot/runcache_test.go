package snapshot_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	"github.com/flowsnap/flowsnap/engine"
	"github.com/flowsnap/flowsnap/fault"
	"github.com/flowsnap/flowsnap/snapshot"
	"github.com/flowsnap/flowsnap/snapshot/snapshottest"
	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/storetest"
)

// TestRunCache reads a batch again and again while its runs change, are
// deleted and are broken, through a reader with the run cache (on in both
// dialects here), and checks each answer against a reader without it.
func TestRunCache(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		f, ids, uncached := cachedFixture(t, d, "cached")
		ctx := context.Background()
		asked := append(append([]string{}, ids...), "never", ids[0])

		// read reads asked through f.r, checks it against uncached and
		// returns how many statements it ran and how many runs the cache
		// answered.
		read := func(t *testing.T) (statements int, hits uint64) {
			t.Helper()
			before, _, _ := f.r.RunCacheStats()
			rctx, rd := f.r.Begin(ctx)
			got, err := f.r.Runs(rctx, asked)
			statements = rd.Statements()
			rd.End()
			if err != nil {
				t.Fatal(err)
			}
			want, err := uncached.Runs(ctx, asked)
			if err != nil {
				t.Fatal(err)
			}
			for i := range asked {
				if fault.CodeOf(got[i].Err) != fault.CodeOf(want[i].Err) || !reflect.DeepEqual(got[i].Value, want[i].Value) {
					t.Errorf("%s: %#v (%v), want %#v (%v)", asked[i], got[i].Value, got[i].Err, want[i].Value, want[i].Err)
				}
			}
			after, _, _ := f.r.RunCacheStats()
			return statements, after - before
		}

		t.Run("a first read reads the rows", func(t *testing.T) {
			if n, hits := read(t); n != 2 || hits != 0 {
				t.Fatalf("%d statements and %d runs from the cache, want 2 (the position and the runs) and 0", n, hits)
			}
		})
		t.Run("unchanged runs are read by their revisions", func(t *testing.T) {
			if n, hits := read(t); n != 2 || hits != uint64(len(ids)) {
				t.Fatalf("%d statements and %d runs from the cache, want 2 (the position and the revisions) and %d", n, hits, len(ids))
			}
		})
		t.Run("a changed run is read again", func(t *testing.T) {
			f.do(t, func(tx *engine.Tx) error { return tx.Start(ctx, ids[1], worker) })
			n, hits := read(t)
			if n != 3 || hits != uint64(len(ids)-1) {
				t.Fatalf("%d statements and %d runs from the cache, want 3 (the position, the revisions and the changed run) and %d", n, hits, len(ids)-1)
			}
			if r := f.observed(t, ids[1]); r.Owner == nil {
				t.Fatalf("the started run has no owner: %+v", r)
			}
		})
		t.Run("a new spawn edge is read", func(t *testing.T) {
			f.do(t, func(tx *engine.Tx) error { return tx.AddChild(ctx, ids[2], ids[3], 0) })
			read(t)
		})
		t.Run("a deleted run is a tombstone", func(t *testing.T) {
			f.do(t, func(tx *engine.Tx) error { return tx.Delete(ctx, ids[4]) })
			read(t)
		})
		t.Run("a run broken since it was cached fails its element", func(t *testing.T) {
			read(t)
			snapshottest.Loosen(t, f.db).Exec(t, `UPDATE flows_runs SET execution_parent_id = 'r0' WHERE run_id = 'r5'`)
			if _, hits := read(t); hits != uint64(len(ids)-2) {
				t.Fatalf("%d runs from the cache, want %d", hits, len(ids)-2)
			}
			res := f.runs(t, ids[5])
			if fault.CodeOf(res[0].Err) != fault.DecodeFailed {
				t.Fatalf("the broken run: %v, %v", res[0].Value, res[0].Err)
			}
		})
		t.Run("a batch the cache mostly misses is read at once", func(t *testing.T) {
			var fresh []engine.NewRun
			for i := range 8 {
				fresh = append(fresh, engine.NewRun{ID: fmt.Sprintf("new%d", i), FlowName: "cached"})
			}
			f.create(t, fresh...)
			rctx, rd := f.r.Begin(ctx)
			defer rd.End()
			if _, err := f.r.Runs(rctx, []string{ids[0], ids[6], "new0", "new1", "new2", "new3", "new4", "new5"}); err != nil {
				t.Fatal(err)
			}
			if n := rd.Statements(); n != 2 {
				t.Fatalf("%d statements, want 2", n)
			}
		})
		noOpenReads(t, f.ro)
	})
}

// TestRunCacheStaysWithinItsBytes fills a small cache with more runs than
// it holds.
func TestRunCacheStaysWithinItsBytes(t *testing.T) {
	t.Parallel()
	f := newFixture(t, store.SQLite)
	const limit = 16 << 10
	f.r.SetRunCache(limit)
	ctx := context.Background()
	var runs []engine.NewRun
	var ids []string
	for i := range 200 {
		ids = append(ids, fmt.Sprintf("run-%03d", i))
		runs = append(runs, engine.NewRun{ID: ids[i], FlowName: "bulk"})
	}
	f.create(t, runs...)
	for range 2 {
		for lo := 0; lo < len(ids); lo += 50 {
			if _, err := f.r.Runs(ctx, ids[lo:lo+50]); err != nil {
				t.Fatal(err)
			}
			if _, _, bytes := f.r.RunCacheStats(); bytes > limit {
				t.Fatalf("the cache holds %d bytes, more than its %d", bytes, limit)
			}
		}
	}
	if _, _, bytes := f.r.RunCacheStats(); bytes == 0 {
		t.Fatal("the cache holds nothing")
	}
	f.r.SetRunCache(0)
	if _, err := f.r.Runs(ctx, ids[:50]); err != nil {
		t.Fatal(err)
	}
	if hits, misses, bytes := f.r.RunCacheStats(); hits != 0 || misses != 0 || bytes != 0 {
		t.Fatalf("without a cache: %d hits, %d misses, %d bytes", hits, misses, bytes)
	}
}

// TestRunCacheAnswersOneRunAlone reads one run alone (Read.Alone) again and
// again while it changes, is deleted and is broken, through a reader with
// the run cache (on in both dialects here), and checks each answer against
// a reader without it: a run the cache holds at its revision is read by
// its change row alone; one that changed is read as before, alone, in a
// snapshot of its own after that change row; a run the cache does not hold
// costs nothing more.
func TestRunCacheAnswersOneRunAlone(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		f := newFixture(t, d)
		ctx := context.Background()
		f.create(t, engine.NewRun{ID: "one", FlowName: "cached"}, engine.NewRun{ID: "other", FlowName: "cached"})
		f.r.SetRunCache(snapshot.DefaultRunCacheBytes)
		uncached := snapshot.NewReader(f.ro)
		uncached.SetRunCache(0)

		// read reads id alone through f.r, checks it against uncached and
		// returns how many statements it ran and how many runs the cache
		// answered.
		read := func(t *testing.T, id string) (statements int, hits uint64) {
			t.Helper()
			before, _, _ := f.r.RunCacheStats()
			rctx, rd := f.r.Begin(ctx)
			rd.Alone()
			got, err := f.r.Runs(rctx, []string{id, id})
			statements = rd.Statements()
			pos, ok := rd.Position()
			alone := rd.RanAlone()
			rd.End()
			if err != nil {
				t.Fatal(err)
			}
			if !alone || !ok {
				t.Fatalf("ran alone: %v, position known: %v", alone, ok)
			}
			want, err := uncached.Runs(ctx, []string{id, id})
			if err != nil {
				t.Fatal(err)
			}
			wantPos, err := uncached.Position(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if pos != wantPos {
				t.Errorf("position %+v, want %+v", pos, wantPos)
			}
			for i := range want {
				if fault.CodeOf(got[i].Err) != fault.CodeOf(want[i].Err) || !reflect.DeepEqual(got[i].Value, want[i].Value) {
					t.Errorf("%s: %#v (%v), want %#v (%v)", id, got[i].Value, got[i].Err, want[i].Value, want[i].Err)
				}
			}
			after, _, _ := f.r.RunCacheStats()
			return statements, after - before
		}
		expect := func(t *testing.T, id string, statements int, hits uint64) {
			t.Helper()
			if n, h := read(t, id); n != statements || h != hits {
				t.Fatalf("%d statements and %d runs from the cache, want %d and %d", n, h, statements, hits)
			}
		}

		t.Run("a run the cache does not hold is read by its row", func(t *testing.T) { expect(t, "one", 2, 0) })
		t.Run("an unchanged run is read by its change row", func(t *testing.T) { expect(t, "one", 2, 1) })
		t.Run("a changed run is read by its row after its change row", func(t *testing.T) {
			f.do(t, func(tx *engine.Tx) error { return tx.Start(ctx, "one", worker) })
			expect(t, "one", 3, 0)
			expect(t, "one", 2, 1)
		})
		t.Run("an id never seen is read by its row", func(t *testing.T) { expect(t, "never", 2, 0) })
		t.Run("a deleted run is a tombstone from its change row", func(t *testing.T) {
			expect(t, "other", 2, 0)
			f.do(t, func(tx *engine.Tx) error { return tx.Delete(ctx, "other") })
			expect(t, "other", 2, 0)
		})
		t.Run("a run broken since it was cached fails", func(t *testing.T) {
			expect(t, "one", 2, 1)
			snapshottest.Loosen(t, f.db).Exec(t, `UPDATE flows_runs SET execution_parent_id = 'other' WHERE run_id = 'one'`)
			expect(t, "one", 3, 0)
			res := f.runs(t, "one")
			if fault.CodeOf(res[0].Err) != fault.DecodeFailed {
				t.Fatalf("the broken run: %v, %v", res[0].Value, res[0].Err)
			}
		})
		noOpenReads(t, f.ro)
	})
}

// TestRunCacheAnswersARunAndItsParentAlone reads a run with its parent, in
// a read run alone, again and again while they change and the parent is
// deleted, through a reader with the run cache, and checks each answer
// against a reader without it: when the cache holds both at their
// revisions, their change rows are the read's one statement; when either
// changed, the run and its parent are read as before, in a snapshot of
// their own after that statement.
func TestRunCacheAnswersARunAndItsParentAlone(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		f := newFixture(t, d)
		ctx := context.Background()
		f.create(t, engine.NewRun{ID: "parent", FlowName: "cached"},
			engine.NewRun{ID: "child", FlowName: "cached", Parents: []engine.ParentEdge{{ParentID: "parent"}}})
		f.r.SetRunCache(snapshot.DefaultRunCacheBytes)
		uncached := snapshot.NewReader(f.ro)
		uncached.SetRunCache(0)

		expect := func(t *testing.T, statements int, hits uint64) {
			t.Helper()
			before, _, _ := f.r.RunCacheStats()
			rctx, rd := f.r.Begin(ctx)
			rd.Alone()
			runs, parents, err := f.r.RunsAndParents(rctx, []string{"child"})
			n, alone := rd.Statements(), rd.RanAlone()
			rd.End()
			if err != nil {
				t.Fatal(err)
			}
			wantRuns, wantParents, err := uncached.RunsAndParents(ctx, []string{"child"})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(runs, wantRuns) || !reflect.DeepEqual(parents["parent"], wantParents["parent"]) {
				t.Errorf("child %#v with parent %#v, want %#v with %#v", runs[0], parents["parent"], wantRuns[0], wantParents["parent"])
			}
			after, _, _ := f.r.RunCacheStats()
			if !alone || n != statements || after-before != hits {
				t.Fatalf("ran alone: %v, %d statements and %d runs from the cache, want %d and %d", alone, n, after-before, statements, hits)
			}
		}
		t.Run("runs the cache does not hold are read by their rows", func(t *testing.T) { expect(t, 2, 0) })
		t.Run("unchanged, both are read by their change rows", func(t *testing.T) { expect(t, 2, 2) })
		t.Run("a changed parent is read by its row after the change rows", func(t *testing.T) {
			f.do(t, func(tx *engine.Tx) error { return tx.Start(ctx, "parent", worker) })
			expect(t, 3, 0)
			expect(t, 2, 2)
		})
		t.Run("a deleted parent is read again", func(t *testing.T) {
			f.do(t, func(tx *engine.Tx) error { return tx.Delete(ctx, "parent") })
			expect(t, 3, 0)
		})
		noOpenReads(t, f.ro)
	})
}

// TestListPagesThroughTheRunCache reads a list page again and again while
// its runs change, are deleted and are broken, through a reader with the
// run cache (on in both dialects here), and checks each page against a
// reader without it: the same edges, cursors and runs, the cached ones
// read by their change rows alone.
func TestListPagesThroughTheRunCache(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		f, ids, uncached := cachedFixture(t, d, "listed")
		ctx := context.Background()
		flow := "listed"
		req := snapshot.ListRequest{Filter: snapshot.RunFilter{FlowName: &flow}, First: ptr(5)}

		// read reads the first two pages of req through f.r and through
		// uncached, each pair in one snapshot of the store, checks them
		// against each other and returns how many statements f.r's first
		// page ran and how many runs the cache answered.
		read := func(t *testing.T) (statements int, hits uint64) {
			t.Helper()
			before, _, _ := f.r.RunCacheStats()
			var after *string
			for page := range 2 {
				r := req
				r.After = after
				rctx, rd := f.r.Begin(ctx)
				got, err := f.r.ListRuns(rctx, r)
				if page == 0 {
					statements = rd.Statements()
				}
				rd.End()
				if err != nil {
					t.Fatal(err)
				}
				want, err := uncached.ListRuns(ctx, r)
				if err != nil {
					t.Fatal(err)
				}
				if len(got.Edges) != len(want.Edges) || got.PageInfo.HasNextPage != want.PageInfo.HasNextPage {
					t.Fatalf("page %d: %d edges (more: %v), want %d (more: %v)", page, len(got.Edges), got.PageInfo.HasNextPage, len(want.Edges), want.PageInfo.HasNextPage)
				}
				for i, e := range got.Edges {
					w := want.Edges[i]
					if e.RunID != w.RunID || e.Ordinal != w.Ordinal || e.Cursor != w.Cursor ||
						fault.CodeOf(e.Node.Err) != fault.CodeOf(w.Node.Err) || !reflect.DeepEqual(e.Node.Value, w.Node.Value) {
						t.Errorf("page %d, edge %d: %s %d %#v (%v), want %s %d %#v (%v)", page, i, e.RunID, e.Ordinal, e.Node.Value, e.Node.Err, w.RunID, w.Ordinal, w.Node.Value, w.Node.Err)
					}
				}
				after = got.PageInfo.EndCursor
			}
			now, _, _ := f.r.RunCacheStats()
			return statements, now - before
		}

		// A page reads one run more than it holds, to know whether another
		// follows: the first page's last run read is the second's first.
		t.Run("a first read reads the rows", func(t *testing.T) {
			if n, hits := read(t); n != 3 || hits != 1 {
				t.Fatalf("%d statements and %d runs from the cache, want 3 (the position, the page's change rows and its runs) and 1", n, hits)
			}
		})
		t.Run("unchanged runs are read by their change rows", func(t *testing.T) {
			if n, hits := read(t); n != 2 || hits != uint64(len(ids)+1) {
				t.Fatalf("%d statements and %d runs from the cache, want 2 (the position and the page's change rows) and %d", n, hits, len(ids)+1)
			}
		})
		t.Run("a changed run is read again", func(t *testing.T) {
			f.do(t, func(tx *engine.Tx) error { return tx.Start(ctx, ids[7], worker) })
			if _, hits := read(t); hits != uint64(len(ids)) {
				t.Fatalf("%d runs from the cache, want %d", hits, len(ids))
			}
		})
		t.Run("a deleted run leaves the page", func(t *testing.T) {
			f.do(t, func(tx *engine.Tx) error { return tx.Delete(ctx, ids[4]) })
			read(t)
		})
		t.Run("a run broken since it was cached fails its edge", func(t *testing.T) {
			snapshottest.Loosen(t, f.db).Exec(t, `UPDATE flows_runs SET execution_parent_id = 'r0' WHERE run_id = 'r5'`)
			read(t)
			p, err := f.r.ListRuns(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			broken := 0
			for _, e := range p.Edges {
				if e.RunID == "r5" && fault.CodeOf(e.Node.Err) == fault.DecodeFailed {
					broken++
				}
			}
			if broken != 1 {
				t.Fatalf("the broken run's edge did not fail with DECODE_FAILED: %+v", p.Edges)
			}
		})
		noOpenReads(t, f.ro)
	})
}

// cachedFixture is a store of eight runs of flow, r0 to r7, read by f.r with
// the run cache on and by uncached without it.
func cachedFixture(t *testing.T, d store.Dialect, flow string) (f *fixture, ids []string, uncached *snapshot.Reader) {
	t.Helper()
	f = newFixture(t, d)
	ids = make([]string, 8)
	var runs []engine.NewRun
	for i := range ids {
		ids[i] = fmt.Sprintf("r%d", i)
		runs = append(runs, engine.NewRun{ID: ids[i], FlowName: flow})
	}
	f.create(t, runs...)
	f.r.SetRunCache(snapshot.DefaultRunCacheBytes)
	uncached = snapshot.NewReader(f.ro)
	uncached.SetRunCache(0)
	return f, ids, uncached
}
