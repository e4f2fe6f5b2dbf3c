package snapshot_test

import (
	"context"
	"testing"

	"github.com/flowsnap/flowsnap/cursor"
	"github.com/flowsnap/flowsnap/engine"
	"github.com/flowsnap/flowsnap/fault"
	"github.com/flowsnap/flowsnap/snapshot"
	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/storetest"
)

func TestPagesCarryTheirRevisionAndNeverContinueInAnOlderRead(t *testing.T) {
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		ctx := context.Background()
		db := storetest.Open(t, d)
		w := engine.NewWriter(db, nil)
		if err := w.CreateRun(ctx, engine.NewRun{ID: "p", FlowName: "f"}); err != nil {
			t.Fatal(err)
		}
		for i, id := range []string{"a", "b"} {
			if err := w.CreateRun(ctx, engine.NewRun{ID: id, FlowName: "f", Parents: []engine.ParentEdge{{ParentID: "p", Seq: int64(i)}}}); err != nil {
				t.Fatal(err)
			}
		}
		r := snapshot.NewReader(db)
		one := 1
		page, err := r.Children(ctx, snapshot.PageRequest{Anchor: "p", First: &one})
		if err != nil {
			t.Fatal(err)
		}
		pos, err := r.Position(ctx)
		if err != nil {
			t.Fatal(err)
		}
		c, err := cursor.Decode(*page.PageInfo.EndCursor)
		if err != nil || c.Revision != pos.Revision {
			t.Fatalf("the page's cursor decodes to %+v, %v; want revision %d", c, err, pos.Revision)
		}
		// A cursor from a later revision than the read is refused.
		c.Revision = pos.Revision + 1
		later := cursor.Encode(c)
		_, err = r.Children(ctx, snapshot.PageRequest{Anchor: "p", First: &one, After: &later})
		if fault.CodeOf(err) != fault.Stale {
			t.Fatalf("a cursor from revision %d read at %d: %v, want STALE", c.Revision, pos.Revision, err)
		}
		// A read that honours it as its minimum is SOURCE_CHANGED: no
		// store without replicas can reach it.
		rctx, rd := r.Begin(ctx)
		defer rd.End()
		rd.AtLeast(c.Revision)
		if _, err := r.Position(rctx); fault.CodeOf(err) != fault.SourceChanged {
			t.Fatalf("a read at least at revision %d of a store at %d: %v, want SOURCE_CHANGED", c.Revision, pos.Revision, err)
		}
	})
}
