package snapshot_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/flowsnap/flowsnap/engine"
	"github.com/flowsnap/flowsnap/fault"
	"github.com/flowsnap/flowsnap/snapshot"
	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/storetest"
)

func TestChanges(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		f := newFixture(t, d)
		ctx := context.Background()
		changes := func(t *testing.T, req snapshot.ChangesRequest) *snapshot.ChangeFeed {
			t.Helper()
			feed, err := f.r.Changes(ctx, req)
			if err != nil {
				t.Fatalf("Changes(%+v): %v", req, err)
			}
			return feed
		}

		t.Run("an empty store has no changes and its revision is next", func(t *testing.T) {
			feed := changes(t, snapshot.ChangesRequest{})
			if len(feed.Changes) != 0 || feed.HasMore || feed.NextRevision != 0 {
				t.Fatalf("feed %+v, want empty at 0", feed)
			}
		})

		f.create(t, engine.NewRun{ID: "a", FlowName: "demo"}, engine.NewRun{ID: "b", FlowName: "demo"}, engine.NewRun{ID: "c", FlowName: "demo"})
		f.do(t, func(tx *engine.Tx) error { return tx.Start(ctx, "a", worker) })
		f.do(t, func(tx *engine.Tx) error { return tx.Delete(ctx, "b") })
		revA, _ := f.change(t, "a")
		revB, _ := f.change(t, "b")
		revC, _ := f.change(t, "c")
		pos := f.storePosition(t)
		want := []snapshot.Change{{RunID: "c", Revision: revC}, {RunID: "a", Revision: revA}, {RunID: "b", Revision: revB, Deleted: true}}

		t.Run("changes are coalesced, in revision order, tombstones included", func(t *testing.T) {
			feed := changes(t, snapshot.ChangesRequest{})
			if !reflect.DeepEqual(feed.Changes, want) {
				t.Fatalf("changes %+v, want %+v", feed.Changes, want)
			}
			if feed.HasMore || feed.NextRevision != pos.Revision {
				t.Fatalf("hasMore %v nextRevision %d, want false and the position's %d", feed.HasMore, feed.NextRevision, pos.Revision)
			}
		})

		t.Run("a short page continues at its last change's revision", func(t *testing.T) {
			var got []snapshot.Change
			since := int64(0)
			for range 10 {
				feed := changes(t, snapshot.ChangesRequest{Since: since, First: ptr(1)})
				got = append(got, feed.Changes...)
				if !feed.HasMore {
					if feed.NextRevision != pos.Revision {
						t.Fatalf("last page's nextRevision %d, want %d", feed.NextRevision, pos.Revision)
					}
					break
				}
				if len(feed.Changes) != 1 || feed.NextRevision != feed.Changes[0].Revision {
					t.Fatalf("page %+v: nextRevision is not its last change's", feed)
				}
				since = feed.NextRevision
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("paged changes %+v, want %+v", got, want)
			}
		})

		t.Run("since is exclusive", func(t *testing.T) {
			feed := changes(t, snapshot.ChangesRequest{Since: revC})
			if !reflect.DeepEqual(feed.Changes, want[1:]) {
				t.Fatalf("changes after %d: %+v, want %+v", revC, feed.Changes, want[1:])
			}
			feed = changes(t, snapshot.ChangesRequest{Since: pos.Revision, Source: &pos.Source})
			if len(feed.Changes) != 0 || feed.HasMore || feed.NextRevision != pos.Revision {
				t.Fatalf("changes at the position: %+v, want none", feed)
			}
		})

		t.Run("the runs of a feed read in the same snapshot", func(t *testing.T) {
			rctx, rd := f.r.Begin(ctx)
			defer rd.End()
			feed, err := f.r.Changes(rctx, snapshot.ChangesRequest{})
			if err != nil {
				t.Fatal(err)
			}
			f.do(t, func(tx *engine.Tx) error { return tx.Delete(ctx, "c") })
			res, err := f.r.Runs(rctx, []string{"a", "b", "c"})
			if err != nil {
				t.Fatal(err)
			}
			if mustRun(t, res[0]).Revision != revA || !mustMissing(t, res[1]).Deleted || mustRun(t, res[2]).Revision != revC {
				t.Fatalf("runs %+v do not match the feed %+v", res, feed)
			}
			if rd.Statements() != 3 {
				t.Fatalf("%d statements, want 3 (position, changes, runs)", rd.Statements())
			}
		})

		t.Run("bad input is refused", func(t *testing.T) {
			other := "0123456789abcdef0123456789abcdef"
			now := f.storePosition(t)
			for _, c := range []struct {
				name string
				req  snapshot.ChangesRequest
				code fault.Code
			}{
				{"first 0", snapshot.ChangesRequest{First: ptr(0)}, fault.BadUserInput},
				{"first 1001", snapshot.ChangesRequest{First: ptr(1001)}, fault.BadUserInput},
				{"a negative since", snapshot.ChangesRequest{Since: -1}, fault.BadUserInput},
				{"another store's source", snapshot.ChangesRequest{Source: &other}, fault.SourceChanged},
				{"a since beyond the store's revision", snapshot.ChangesRequest{Since: now.Revision + 1}, fault.SourceChanged},
			} {
				t.Run(c.name, func(t *testing.T) {
					_, err := f.r.Changes(ctx, c.req)
					wantCode(t, err, c.code)
				})
			}
			if feed := changes(t, snapshot.ChangesRequest{First: ptr(snapshot.MaxChangesSize)}); len(feed.Changes) != 3 {
				t.Fatalf("first %d: %d changes, want 3", snapshot.MaxChangesSize, len(feed.Changes))
			}
		})
	})
}

// TestChangesProjection follows the change feed from 0 while the simulated
// engine writes, keeping a projection as docs/contract.md#change-feed says a client does, and
// checks that once the engine stops the projection is exactly the store.
func TestChangesProjection(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		f := newFixture(t, d)
		ctx := context.Background()
		if _, err := engine.Seed(ctx, f.db, engine.SeedOptions{Runs: 300, Seed: 11}); err != nil {
			t.Fatal(err)
		}
		simCtx, stop := context.WithTimeout(ctx, 2*time.Second)
		defer stop()
		simDone := make(chan error, 1)
		go func() { simDone <- engine.Simulate(simCtx, f.db, engine.SimOptions{Rate: 200, Seed: 4}) }()

		type entry struct {
			revision int64
			run      *snapshot.Run
		}
		projection := map[string]entry{}
		var source *string
		since := int64(0)
		follow := func() (caughtUp bool) {
			rctx, rd := f.r.Begin(ctx)
			defer rd.End()
			feed, err := f.r.Changes(rctx, snapshot.ChangesRequest{Since: since, Source: source, First: ptr(50)})
			if err != nil {
				t.Fatalf("changes since %d: %v", since, err)
			}
			ids := make([]string, len(feed.Changes))
			for i, c := range feed.Changes {
				ids[i] = c.RunID
			}
			res, err := f.r.Load(rctx, ids)
			if err != nil {
				t.Fatal(err)
			}
			for i, c := range feed.Changes {
				if c.Revision <= since {
					t.Fatalf("change %+v is not after since %d", c, since)
				}
				if old, ok := projection[c.RunID]; ok && old.revision >= c.Revision {
					continue
				}
				if res[i].Err != nil {
					t.Fatalf("reading %q: %v", c.RunID, res[i].Err)
				}
				run, _ := res[i].Value.(*snapshot.Run)
				if (run == nil) != c.Deleted || (run != nil && run.Revision != c.Revision) {
					t.Fatalf("change %+v read as %#v in the same snapshot", c, res[i].Value)
				}
				projection[c.RunID] = entry{c.Revision, run}
			}
			pos, _ := rd.Position()
			source = &pos.Source
			since = feed.NextRevision
			return !feed.HasMore
		}
		for simRunning := true; simRunning; {
			select {
			case err := <-simDone:
				if err != nil {
					t.Fatalf("simulate: %v", err)
				}
				simRunning = false
			default:
				follow()
			}
		}
		// A transaction whose commit raced the engine's end may land just
		// after it: follow until the feed has reached the store's revision.
		for tries := 0; ; tries++ {
			for !follow() {
			}
			if since == f.storePosition(t).Revision {
				break
			}
			t.Logf("the store moved on to %d after the feed reached %d", f.storePosition(t).Revision, since)
			if tries == 100 {
				t.Fatalf("the feed stays at %d behind the store", since)
			}
			time.Sleep(20 * time.Millisecond)
		}

		// A fresh read of every run id the store has ever seen.
		all := f.runIDs(t, `SELECT run_id FROM flows_run_changes`)
		if len(all) != len(projection) {
			t.Fatalf("the projection holds %d run ids, the store %d", len(projection), len(all))
		}
		live, deleted := 0, 0
		for i := 0; i < len(all); i += snapshot.MaxBatch {
			ids := all[i:min(i+snapshot.MaxBatch, len(all))]
			for k, res := range f.runs(t, ids...) {
				p := projection[ids[k]]
				switch s := res.Value.(type) {
				case *snapshot.Run:
					live++
					if !reflect.DeepEqual(s, p.run) {
						t.Fatalf("run %q: projection %+v, store %+v", ids[k], p.run, s)
					}
				case *snapshot.Missing:
					deleted++
					if p.run != nil || !s.Deleted || *s.DeletedAtRevision != p.revision {
						t.Fatalf("run %q is deleted at %v, the projection has %+v", ids[k], s.DeletedAtRevision, p)
					}
				default:
					t.Fatalf("run %q: %v", ids[k], res.Err)
				}
			}
		}
		if final := f.storePosition(t); since != final.Revision {
			t.Fatalf("the feed ends at %d, the store at %d", since, final.Revision)
		}
		if live == 0 || deleted == 0 {
			t.Fatalf("%d live and %d deleted runs: the test saw too little", live, deleted)
		}
		t.Logf("%d live, %d deleted runs, revision %d", live, deleted, since)
	})
}
