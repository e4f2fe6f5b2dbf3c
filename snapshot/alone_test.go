package snapshot_test

import (
	"context"
	"testing"

	"github.com/flowsnap/flowsnap/engine"
	"github.com/flowsnap/flowsnap/fault"
	"github.com/flowsnap/flowsnap/snapshot"
	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/storetest"
)

// TestAloneReads reads runs in one statement run alone (Read.Alone): it
// answers as a transaction would, at the same position, counts as the
// position and one statement, refuses a second statement rather than
// read another snapshot, and leaves nothing open.
func TestAloneReads(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		f := newFixture(t, d)
		f.create(t, engine.NewRun{ID: "a", FlowName: "f"}, engine.NewRun{ID: "b", FlowName: "f", Parents: []engine.ParentEdge{{ParentID: "a"}}})
		ctx := context.Background()

		want, err := f.r.Runs(ctx, []string{"a", "b", "gone"})
		if err != nil {
			t.Fatal(err)
		}
		wantPos, err := f.r.Position(ctx)
		if err != nil {
			t.Fatal(err)
		}
		rctx, rd := f.r.Begin(ctx)
		rd.Alone()
		got, err := f.r.Runs(rctx, []string{"a", "b", "gone"})
		if err != nil {
			t.Fatal(err)
		}
		if !rd.RanAlone() {
			t.Fatal("the read did not run alone")
		}
		for i := range want {
			if w, g := want[i].Value.SnapshotID(), got[i].Value.SnapshotID(); w != g {
				t.Errorf("element %d: %s, want %s", i, g, w)
			}
		}
		if r, ok := got[1].Value.(*snapshot.Run); !ok || r.ExecutionParentID == nil || *r.ExecutionParentID != "a" {
			t.Errorf("run b read alone: %+v", got[1].Value)
		}
		if _, ok := got[2].Value.(*snapshot.Missing); !ok {
			t.Errorf("a missing run read alone: %+v", got[2].Value)
		}
		if pos, ok := rd.Position(); !ok || pos != wantPos {
			t.Errorf("position %+v %v, want %+v", pos, ok, wantPos)
		}
		if n := rd.Statements(); n != 2 {
			t.Errorf("%d statements, want 2 (the position and the runs)", n)
		}
		_, err = f.r.Children(rctx, snapshot.PageRequest{Anchor: "a"})
		if fault.CodeOf(err) != fault.Internal {
			t.Errorf("a second statement after one run alone: %v, want INTERNAL", err)
		}
		if p, err := f.r.Position(rctx); err != nil || p != wantPos {
			t.Errorf("the position after: %+v, %v", p, err)
		}
		rd.End()

		// Alone once the read has begun, or with no statement to run, is
		// an ordinary transaction.
		rctx, rd = f.r.Begin(ctx)
		if _, err := f.r.Position(rctx); err != nil {
			t.Fatal(err)
		}
		rd.Alone()
		if _, err := f.r.Runs(rctx, []string{"a"}); err != nil {
			t.Fatal(err)
		}
		if _, err := f.r.Children(rctx, snapshot.PageRequest{Anchor: "a"}); err != nil {
			t.Fatal(err)
		}
		if rd.RanAlone() {
			t.Error("ran alone after the read had begun")
		}
		rd.End()
		rctx, rd = f.r.Begin(ctx)
		rd.Alone()
		if res, err := f.r.Runs(rctx, []string{""}); err != nil || fault.CodeOf(res[0].Err) != fault.BadUserInput {
			t.Fatalf("a malformed id alone: %+v, %v", res, err)
		}
		if p, err := f.r.Position(rctx); err != nil || p != wantPos {
			t.Errorf("the position of a read with no statement: %+v, %v", p, err)
		}
		rd.End()

		// A position beyond the store is refused as a transaction's is.
		rctx, rd = f.r.Begin(ctx)
		rd.AtLeast(wantPos.Revision + 1)
		rd.Alone()
		if _, err := f.r.Runs(rctx, []string{"a"}); fault.CodeOf(err) != fault.SourceChanged {
			t.Errorf("a minimum revision beyond the store, alone: %v, want SOURCE_CHANGED", err)
		}
		rd.End()
		noOpenReads(t, f.ro)
	})
}

// TestAMinimumBeyondTheStoreRefusesTheFirstStatement asks for a position
// beyond the store in a read whose first statement opens it (pipelined
// with its BEGIN and position on PostgreSQL): SOURCE_CHANGED, as a read
// that opens with its position or alone says, not PERSISTENCE_FAILED.
func TestAMinimumBeyondTheStoreRefusesTheFirstStatement(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		f := newFixture(t, d)
		f.create(t, engine.NewRun{ID: "a", FlowName: "f"})
		ctx := context.Background()
		pos, err := f.r.Position(ctx)
		if err != nil {
			t.Fatal(err)
		}
		rctx, rd := f.r.Begin(ctx)
		rd.AtLeast(pos.Revision + 1)
		if _, err := f.r.Children(rctx, snapshot.PageRequest{Anchor: "a"}); fault.CodeOf(err) != fault.SourceChanged {
			t.Errorf("a page as the first statement: %v, want SOURCE_CHANGED", err)
		}
		rd.End()
		rctx, rd = f.r.Begin(ctx)
		rd.AtLeast(pos.Revision + 1)
		if _, err := f.r.Runs(rctx, []string{"a"}); fault.CodeOf(err) != fault.SourceChanged {
			t.Errorf("runs as the first statement: %v, want SOURCE_CHANGED", err)
		}
		rd.End()
		noOpenReads(t, f.ro)
	})
}
