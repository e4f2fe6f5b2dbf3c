package snapshot_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/flowsnap/flowsnap/cursor"
	"github.com/flowsnap/flowsnap/engine"
	"github.com/flowsnap/flowsnap/snapshot"
	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/storetest"
)

// TestOperationsHoldingEveryReaderConnectionStillRead opens as many
// operations as the store has reader connections, has each read its
// position (so that each holds a connection in an open transaction), and
// only then has each run statements of a shape no operation ran before. A
// read must never wait for a second connection while it holds one: with
// every connection held, that wait never ends.
func TestOperationsHoldingEveryReaderConnectionStillRead(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		f := newFixture(t, d)
		runs := []engine.NewRun{{ID: "parent", FlowName: "fan-out"}}
		for i := range 5 {
			runs = append(runs, engine.NewRun{ID: fmt.Sprintf("child-%d", i), FlowName: "leaf", Parents: []engine.ParentEdge{{ParentID: "parent", Seq: int64(i)}}})
		}
		f.create(t, runs...)
		var n int
		if d == store.SQLite {
			n = f.ro.SQLReader().Stats().MaxOpenConnections
		} else {
			n = int(f.ro.Pool().Stat().MaxConns())
		}

		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var opened, wg sync.WaitGroup
		opened.Add(n)
		errs := make(chan error, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rctx, rd := f.r.Begin(ctx)
				defer rd.End()
				_, err := f.r.Position(rctx)
				opened.Done()
				if err != nil {
					errs <- err
					return
				}
				opened.Wait()
				// A batch of i+2 pages is a statement of its own shape.
				reqs := make([]snapshot.PageRequest, i+2)
				for k := range reqs {
					reqs[k] = snapshot.PageRequest{Anchor: "parent", Lineage: "parent"}
				}
				if _, err := f.r.Pages(rctx, cursor.Children, reqs); err != nil {
					errs <- fmt.Errorf("operation %d: %w", i, err)
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Errorf("with all %d reader connections held: %v", n, err)
		}
	})
}
