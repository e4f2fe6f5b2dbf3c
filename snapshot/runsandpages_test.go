package snapshot_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/flowsnap/flowsnap/cursor"
	"github.com/flowsnap/flowsnap/engine"
	"github.com/flowsnap/flowsnap/fault"
	"github.com/flowsnap/flowsnap/snapshot"
	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/storetest"
)

// TestRunsAndPagesReadAsApart reads runs by id and pages of children and
// rounds in one statement (Reader.RunsAndPages), alone and in a
// transaction, and checks every result against the same read made apart
// (Load, then RunPages with each anchor's lineage): malformed, missing,
// deleted and repeated ids, children, rounds by the anchor's lineage and by
// a lineage given, a run without rounds or children, an anchor without a
// row, a bad cursor and a bad page size.
func TestRunsAndPagesReadAsApart(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		f := newFixture(t, d)
		f.create(t,
			engine.NewRun{ID: "root", FlowName: "loop"},
			engine.NewRun{ID: "root-1", FlowName: "loop", Round: &engine.Round{LineageID: "root", Ordinal: 1, Previous: "root"}},
			engine.NewRun{ID: "root-2", FlowName: "loop", Round: &engine.Round{LineageID: "root", Ordinal: 2, Previous: "root-1"}},
			engine.NewRun{ID: "kid-a", FlowName: "kid", Parents: []engine.ParentEdge{{ParentID: "root-2", Seq: 0}}},
			engine.NewRun{ID: "kid-b", FlowName: "kid", Parents: []engine.ParentEdge{{ParentID: "root-2", Seq: 1}}},
			engine.NewRun{ID: "gone", FlowName: "kid"},
		)
		f.do(t, func(tx *engine.Tx) error { return tx.Delete(context.Background(), "gone") })
		ctx := context.Background()
		first := 1
		one := &first
		zero := 0
		page1 := f.children(t, "root-2", 1, nil)
		ids := []string{"root-2", "", "never", "gone", "root-2", "kid-a"}
		reqs := []snapshot.RunPageRequest{
			{Kind: cursor.Children, PageRequest: snapshot.PageRequest{Anchor: "root-2"}},
			{Kind: cursor.Children, PageRequest: snapshot.PageRequest{Anchor: "root-2", First: one, After: page1.PageInfo.EndCursor}},
			{Kind: cursor.Rounds, PageRequest: snapshot.PageRequest{Anchor: "root-2"}},
			{Kind: cursor.Rounds, PageRequest: snapshot.PageRequest{Anchor: "root-1", Lineage: "root", First: one}},
			{Kind: cursor.Rounds, PageRequest: snapshot.PageRequest{Anchor: "kid-a"}},
			{Kind: cursor.Rounds, PageRequest: snapshot.PageRequest{Anchor: "never"}},
			{Kind: cursor.Children, PageRequest: snapshot.PageRequest{Anchor: "root-2", After: new("not a cursor")}},
			{Kind: cursor.Rounds, PageRequest: snapshot.PageRequest{Anchor: "root", First: &zero}},
		}
		wantRuns, err := f.r.Load(ctx, ids)
		if err != nil {
			t.Fatal(err)
		}
		// Apart, a rounds page needs its anchor's lineage first.
		lineages := map[string]string{"root-2": "root", "kid-a": "kid-a", "never": "never", "root": "root"}
		apart := make([]snapshot.RunPageRequest, len(reqs))
		for i, r := range reqs {
			apart[i] = r
			if r.Kind == cursor.Rounds && r.Lineage == "" {
				apart[i].Lineage = lineages[r.Anchor]
			}
		}
		wantPages, err := f.r.RunPages(ctx, apart)
		if err != nil {
			t.Fatal(err)
		}
		for _, alone := range []bool{true, false} {
			rctx, rd := f.r.Begin(ctx)
			if alone {
				rd.Alone()
			}
			gotRuns, gotPages, err := f.r.RunsAndPages(rctx, ids, reqs)
			if err != nil {
				t.Fatal(err)
			}
			if rd.RanAlone() != alone || rd.Statements() != 2 {
				t.Errorf("alone %v: ran alone %v in %d statements, want 2", alone, rd.RanAlone(), rd.Statements())
			}
			rd.End()
			for i := range ids {
				if fault.CodeOf(gotRuns[i].Err) != fault.CodeOf(wantRuns[i].Err) || !reflect.DeepEqual(gotRuns[i].Value, wantRuns[i].Value) {
					t.Errorf("run %d %q: %#v (%v), want %#v (%v)", i, ids[i], gotRuns[i].Value, gotRuns[i].Err, wantRuns[i].Value, wantRuns[i].Err)
				}
			}
			for i := range reqs {
				if fault.CodeOf(gotPages[i].Err) != fault.CodeOf(wantPages[i].Err) || !reflect.DeepEqual(gotPages[i].Value, wantPages[i].Value) {
					t.Errorf("page %d: %+v (%v), want %+v (%v)", i, gotPages[i].Value, gotPages[i].Err, wantPages[i].Value, wantPages[i].Err)
				}
			}
		}
		if p := wantPages[2].Value; p == nil || len(p.Edges) != 3 {
			t.Fatalf("the rounds of root-2 by its lineage: %+v", wantPages[2])
		}
		if fault.CodeOf(wantPages[6].Err) != fault.BadCursor || fault.CodeOf(wantPages[7].Err) != fault.BadUserInput {
			t.Fatalf("a bad cursor and a bad page size: %v, %v", wantPages[6].Err, wantPages[7].Err)
		}

		// Runs alone, pages alone, and nothing valid at all.
		if runs, pages, err := f.r.RunsAndPages(ctx, []string{"kid-b"}, nil); err != nil || len(pages) != 0 || runs[0].Value.SnapshotID() != "kid-b" {
			t.Errorf("runs alone: %+v %+v %v", runs, pages, err)
		}
		if runs, pages, err := f.r.RunsAndPages(ctx, nil, reqs[:1]); err != nil || runs != nil || len(pages[0].Value.Edges) != 2 {
			t.Errorf("pages alone: %+v %+v %v", runs, pages, err)
		}
		if runs, _, err := f.r.RunsAndPages(ctx, []string{""}, reqs[7:]); err != nil || fault.CodeOf(runs[0].Err) != fault.BadUserInput {
			t.Errorf("nothing valid: %+v %v", runs, err)
		}
		noOpenReads(t, f.ro)
	})
}
