package snapshot_test

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flowsnap/flowsnap/engine"
	"github.com/flowsnap/flowsnap/snapshot"
	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/storetest"
)

// TestPagingWhileTheEngineWritesNeitherRepeatsNorSkips pages the children of
// a run and the rounds of a lineage from the first page to the last, each
// page in a read of its own as separate requests would, while the engine
// keeps adding children (after the pages read so far and before them) and
// rounds (new ones at the end, and ones filling gaps before the page's
// position). No item may come twice, the items must come in list order, and
// every item that existed when paging started must come.
func TestPagingWhileTheEngineWritesNeitherRepeatsNorSkips(t *testing.T) {
	t.Parallel()
	duration := testSeconds(t, "FLOWSNAP_PAGING_TEST_SECONDS", 3)
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		f := newFixture(t, d)
		const initialChildren, initialRounds = 200, 50
		runs := []engine.NewRun{{ID: "hub", FlowName: "fan-out"}, {ID: "lin", FlowName: "loop"}}
		for i := range initialChildren {
			runs = append(runs, engine.NewRun{ID: fmt.Sprintf("init-%03d", i), FlowName: "leaf",
				Parents: []engine.ParentEdge{{ParentID: "hub", Seq: int64(10 * i)}}})
		}
		// Rounds take the even ordinals, so that the writer can fill the odd
		// ones behind a page's position.
		prev := "lin"
		for k := int64(2); k <= 2*initialRounds; k += 2 {
			id := fmt.Sprintf("round-%04d", k)
			runs = append(runs, engine.NewRun{ID: id, FlowName: "loop", Round: &engine.Round{LineageID: "lin", Ordinal: k, Previous: prev}})
			prev = id
		}
		f.create(t, runs...)

		// The test runs for duration and then until enough happened to
		// tell, within a minute: a loaded machine writes and reads slowly.
		ctx, cancel := context.WithTimeout(context.Background(), duration+time.Minute)
		defer cancel()
		var writes, passes, pages, newItems atomic.Int64
		enough := func() bool { return writes.Load() >= 20 && passes.Load() >= 4 && newItems.Load() > 0 }
		var wg sync.WaitGroup
		wg.Go(func() {
			start := time.Now()
			for ctx.Err() == nil {
				if time.Since(start) >= duration && enough() {
					cancel()
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(3, 4))
			nextSeq, nextOrdinal := int64(10*initialChildren), int64(2*initialRounds+2)
			odd := rng.Perm(initialRounds)
			for n := 0; ctx.Err() == nil; n++ {
				var run engine.NewRun
				switch {
				case n%3 == 0:
					// A child at the end of the list.
					run = engine.NewRun{ID: fmt.Sprintf("late-%05d", n), FlowName: "leaf", Parents: []engine.ParentEdge{{ParentID: "hub", Seq: nextSeq}}}
					nextSeq++
				case n%3 == 1:
					// A child somewhere before the end, maybe behind a page.
					run = engine.NewRun{ID: fmt.Sprintf("early-%05d", n), FlowName: "leaf", Parents: []engine.ParentEdge{{ParentID: "hub", Seq: rng.Int64N(nextSeq)}}}
				case len(odd) > 0 && n%2 == 0:
					// A round filling a gap, maybe behind a page.
					k := int64(2*odd[0] + 1)
					odd = odd[1:]
					run = engine.NewRun{ID: fmt.Sprintf("round-%04d", k), FlowName: "loop", Round: &engine.Round{LineageID: "lin", Ordinal: k, Previous: "lin"}}
				default:
					run = engine.NewRun{ID: fmt.Sprintf("round-%04d", nextOrdinal), FlowName: "loop", Round: &engine.Round{LineageID: "lin", Ordinal: nextOrdinal, Previous: "lin"}}
					nextOrdinal++
				}
				if err := f.w.CreateRun(ctx, run); err != nil {
					if ctx.Err() == nil {
						t.Errorf("creating %s: %v", run.ID, err)
					}
					return
				}
				writes.Add(1)
				time.Sleep(time.Millisecond)
			}
		}()

		type lister struct {
			name  string
			first int
			page  func(ctx context.Context, first int, after *string) (*snapshot.Page, error)
		}
		listers := []lister{
			{"children", 7, func(ctx context.Context, first int, after *string) (*snapshot.Page, error) {
				return f.r.Children(ctx, snapshot.PageRequest{Anchor: "hub", First: &first, After: after})
			}},
			{"rounds", 5, func(ctx context.Context, first int, after *string) (*snapshot.Page, error) {
				return f.r.Rounds(ctx, snapshot.PageRequest{Anchor: "round-0010", Lineage: "lin", First: &first, After: after})
			}},
		}
		for _, l := range listers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for ctx.Err() == nil {
					before, err := everything(f.r, l.page)
					if err != nil {
						t.Errorf("%s: %v", l.name, err)
						return
					}
					seen := map[string]bool{}
					var last snapshot.Edge
					var after *string
					for n := 0; ; n++ {
						// A read of its own per page.
						p, err := l.page(context.Background(), l.first, after)
						if err != nil {
							t.Errorf("%s: page %d: %v", l.name, n, err)
							return
						}
						pages.Add(1)
						for _, e := range p.Edges {
							if seen[e.RunID] {
								t.Errorf("%s: %s came twice", l.name, e.RunID)
							}
							if len(seen) > 0 && cmp.Or(cmp.Compare(e.Ordinal, last.Ordinal), cmp.Compare(e.RunID, last.RunID)) <= 0 {
								t.Errorf("%s: (%d, %s) came after (%d, %s)", l.name, e.Ordinal, e.RunID, last.Ordinal, last.RunID)
							}
							seen[e.RunID] = true
							last = e
						}
						if !p.PageInfo.HasNextPage {
							break
						}
						after = p.PageInfo.EndCursor
					}
					for id := range before {
						if !seen[id] {
							t.Errorf("%s: %s existed when paging started but never came", l.name, id)
						}
					}
					passes.Add(1)
					newItems.Add(int64(len(seen) - len(before)))
				}
			}()
		}
		wg.Wait()
		t.Logf("%s: %d runs created while paging; %d passes from first to last page, %d pages, %d items that appeared during a pass", d, writes.Load(), passes.Load(), pages.Load(), newItems.Load())
		if !enough() {
			t.Fatalf("too little happened to tell within a minute")
		}
	})
}

// everything returns the ids of a whole list, read in one read.
func everything(r *snapshot.Reader, page func(ctx context.Context, first int, after *string) (*snapshot.Page, error)) (map[string]bool, error) {
	ctx, rd := r.Begin(context.Background())
	defer rd.End()
	ids := map[string]bool{}
	var after *string
	for {
		p, err := page(ctx, snapshot.MaxPageSize, after)
		if err != nil {
			return nil, err
		}
		for _, e := range p.Edges {
			ids[e.RunID] = true
		}
		if !p.PageInfo.HasNextPage {
			return ids, nil
		}
		after = p.PageInfo.EndCursor
	}
}
