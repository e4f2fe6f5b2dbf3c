package snapshot_test

import (
	"context"
	"strings"
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
		for first, read := range map[string]func(ctx context.Context) error{
			"a page": func(ctx context.Context) error {
				_, err := f.r.Children(ctx, snapshot.PageRequest{Anchor: "a"})
				return err
			},
			"runs": func(ctx context.Context) error { _, err := f.r.Runs(ctx, []string{"a"}); return err },
		} {
			rctx, rd := f.r.Begin(ctx)
			rd.AtLeast(pos.Revision + 1)
			if err := read(rctx); fault.CodeOf(err) != fault.SourceChanged {
				t.Errorf("%s as the first statement: %v, want SOURCE_CHANGED", first, err)
			}
			rd.End()
		}
		noOpenReads(t, f.ro)
	})
}

// TestReadsEndedWithTheirLastStatement reads a run and then, told it is the
// last, its children (Read.EndWithNext): the page answers as in any read,
// at the same position and statement count; on PostgreSQL the transaction
// has ended with it, its connection back in the pool before End; a read
// after it is refused in both dialects rather than read at another
// snapshot; and nothing is left open.
func TestReadsEndedWithTheirLastStatement(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		f := newFixture(t, d)
		f.create(t, engine.NewRun{ID: "a", FlowName: "f"},
			engine.NewRun{ID: "b", FlowName: "f", Parents: []engine.ParentEdge{{ParentID: "a"}}},
			engine.NewRun{ID: "c", FlowName: "f", Parents: []engine.ParentEdge{{ParentID: "a", Seq: 1}}})
		ctx := context.Background()
		want, err := f.r.Children(ctx, snapshot.PageRequest{Anchor: "a"})
		if err != nil {
			t.Fatal(err)
		}
		wantPos, err := f.r.Position(ctx)
		if err != nil {
			t.Fatal(err)
		}

		rctx, rd := f.r.Begin(ctx)
		if _, err := f.r.Run(rctx, "a"); err != nil {
			t.Fatal(err)
		}
		rd.EndWithNext()
		if rd.EndedWithLast() {
			t.Fatal("ended before its last read")
		}
		got, err := f.r.Children(rctx, snapshot.PageRequest{Anchor: "a"})
		if err != nil {
			t.Fatal(err)
		}
		if !rd.EndedWithLast() {
			t.Fatal("the last read did not end the read")
		}
		if len(got.Edges) != len(want.Edges) || len(got.Edges) != 2 || got.Edges[1].RunID != "c" || *got.PageInfo.EndCursor != *want.PageInfo.EndCursor {
			t.Errorf("the last page: %+v, want %+v", got, want)
		}
		if pos, ok := rd.Position(); !ok || pos != wantPos {
			t.Errorf("position %+v %v, want %+v", pos, ok, wantPos)
		}
		if n := rd.Statements(); n != 3 {
			t.Errorf("%d statements, want 3 (the position, the run, the page)", n)
		}
		if d == store.Postgres {
			if n := f.ro.Pool().Stat().AcquiredConns(); n != 0 {
				t.Errorf("%d connections still acquired after the last statement: its ROLLBACK did not go with it", n)
			}
		}
		if _, err := f.r.Run(rctx, "b"); fault.CodeOf(err) != fault.Internal {
			t.Errorf("a read after the last: %v, want INTERNAL", err)
		}
		if p, err := f.r.Position(rctx); err != nil || p != wantPos {
			t.Errorf("the position after the last read: %+v, %v", p, err)
		}
		rd.End()
		noOpenReads(t, f.ro)

		// A last read that fails still ends the read, and leaves nothing
		// open.
		rctx, rd = f.r.Begin(ctx)
		if _, err := f.r.Run(rctx, "a"); err != nil {
			t.Fatal(err)
		}
		rd.EndWithNext()
		if _, err := f.r.Children(rctx, snapshot.PageRequest{Anchor: "a", After: new("not a cursor")}); fault.CodeOf(err) != fault.BadCursor {
			t.Errorf("a bad cursor as the last read: %v, want BAD_CURSOR", err)
		}
		rd.End()
		noOpenReads(t, f.ro)

		// The first read as the last opens the read as any first does.
		rctx, rd = f.r.Begin(ctx)
		rd.EndWithNext()
		if _, err := f.r.Children(rctx, snapshot.PageRequest{Anchor: "a"}); err != nil {
			t.Fatal(err)
		}
		if _, err := f.r.Run(rctx, "a"); fault.CodeOf(err) != fault.Internal {
			t.Errorf("a read after a first and last one: %v, want INTERNAL", err)
		}
		rd.End()
		noOpenReads(t, f.ro)
	})
}

// TestThePositionReadAlone reads the position alone (PositionAlone): one
// statement, the same position a transaction reads, a second statement
// refused, and a minimum beyond the store is SOURCE_CHANGED as in a
// transaction.
func TestThePositionReadAlone(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		f := newFixture(t, d)
		f.create(t, engine.NewRun{ID: "a", FlowName: "f"})
		ctx := context.Background()
		want, err := f.r.Position(ctx)
		if err != nil {
			t.Fatal(err)
		}
		rctx, rd := f.r.Begin(ctx)
		got, err := f.r.PositionAlone(rctx)
		if err != nil {
			t.Fatal(err)
		}
		if got != want || !rd.RanAlone() {
			t.Fatalf("position %+v (alone: %v), want %+v read alone", got, rd.RanAlone(), want)
		}
		if n := rd.Statements(); n != 1 {
			t.Errorf("%d statements, want 1", n)
		}
		if again, err := f.r.Position(rctx); err != nil || again != want {
			t.Errorf("the position asked again: %+v, %v", again, err)
		}
		if _, err := f.r.Runs(rctx, []string{"a"}); fault.CodeOf(err) != fault.Internal {
			t.Errorf("a second statement after the position read alone: %v, want INTERNAL", err)
		}
		rd.End()

		rctx, rd = f.r.Begin(ctx)
		rd.AtLeast(want.Revision + 1)
		if _, err := f.r.PositionAlone(rctx); fault.CodeOf(err) != fault.SourceChanged {
			t.Errorf("a minimum beyond the store read alone: %v, want SOURCE_CHANGED", err)
		}
		rd.End()
	})
}

// TestThePositionSeen takes a position another read saw (PositionSeen):
// at or after the read's least revision it is the read's position without
// a statement, and no statement may follow; below that least revision, or
// from another store, the position is read alone instead.
func TestThePositionSeen(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		f := newFixture(t, d)
		f.create(t, engine.NewRun{ID: "a", FlowName: "f"})
		ctx := context.Background()
		now, err := f.r.Position(ctx)
		if err != nil {
			t.Fatal(err)
		}

		rctx, rd := f.r.Begin(ctx)
		rd.AtLeast(now.Revision)
		got, err := f.r.PositionSeen(rctx, now)
		if err != nil || got != now {
			t.Fatalf("the position seen: %+v, %v; want %+v", got, err, now)
		}
		if pos, ok := rd.Position(); !ok || pos != now {
			t.Errorf("the read's position: %+v (%v), want %+v", pos, ok, now)
		}
		if n := rd.Statements(); n != 0 {
			t.Errorf("%d statements for a position seen, want 0", n)
		}
		if _, err := f.r.Runs(rctx, []string{"a"}); fault.CodeOf(err) != fault.Internal {
			t.Errorf("a statement after a position seen: %v, want INTERNAL", err)
		}
		rd.End()

		// An older position than the read may be at is not taken.
		f.create(t, engine.NewRun{ID: "b", FlowName: "f"})
		later, err := f.r.Position(ctx)
		if err != nil {
			t.Fatal(err)
		}
		rctx, rd = f.r.Begin(ctx)
		rd.AtLeast(later.Revision)
		got, err = f.r.PositionSeen(rctx, now)
		if err != nil || got != later || rd.Statements() != 1 {
			t.Errorf("a position seen before the least revision: %+v, %v in %d statements; want %+v read", got, err, rd.Statements(), later)
		}
		rd.End()

		// Nor one of another store.
		rctx, rd = f.r.Begin(ctx)
		other := snapshot.Position{Source: strings.Repeat("0", len(later.Source)), Revision: later.Revision + 5}
		got, err = f.r.PositionSeen(rctx, other)
		if err != nil || got != later || rd.Statements() != 1 {
			t.Errorf("a position seen of another store: %+v, %v in %d statements; want %+v read", got, err, rd.Statements(), later)
		}
		rd.End()
	})
}
