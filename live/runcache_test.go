package live_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/flowsnap/flowsnap/engine"
	"github.com/flowsnap/flowsnap/fault"
	"github.com/flowsnap/flowsnap/live"
	"github.com/flowsnap/flowsnap/snapshot"
	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/storetest"
)

// TestTheWatcherLetsTheRunCacheSkipUnchangedRuns reads the same runs
// again and again while the engine changes some of them, through a reader
// whose revision watcher tells its run cache of every change, as a server
// is set up. Each read must answer what a reader without a cache answers
// in the same snapshot; a read whose runs the watcher saw unchanged must
// read nothing but its position.
func TestTheWatcherLetsTheRunCacheSkipUnchangedRuns(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		ctx := context.Background()
		db := storetest.Open(t, d)
		w := engine.NewWriter(db, nil)
		var ids []string
		for i := range 6 {
			id := fmt.Sprintf("r%d", i)
			if err := w.CreateRun(ctx, engine.NewRun{ID: id, FlowName: "cached"}); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		}
		change := func(sql, id string) {
			t.Helper()
			err := db.Write(ctx, func(tx store.Tx) error { _, err := tx.Exec(ctx, sql, id); return err })
			if err != nil {
				t.Fatal(err)
			}
		}
		reader := snapshot.NewReader(db) // its dialect's cache, as a server has it
		uncached := snapshot.NewReader(db)
		uncached.SetRunCache(0)
		// Ticks only when the test says, so that it knows what the
		// watcher has seen.
		watcher := live.New(reader, live.Options{Interval: time.Hour, ChangesPerTick: 2})

		// read reads ids after the position, as the loaders of an
		// operation do, and checks them against the uncached reader at
		// the same revision; it returns the read's statements beyond
		// those of the position.
		var positionOnly int
		read := func(step string) int {
			t.Helper()
			rctx, rd := reader.Begin(ctx)
			pos, err := reader.Position(rctx)
			if err != nil {
				t.Fatal(err)
			}
			got, err := reader.Load(rctx, ids)
			statements := rd.Statements()
			rd.End()
			if err != nil {
				t.Fatalf("%s: %v", step, err)
			}
			uctx, urd := uncached.Begin(ctx)
			urd.AtLeast(pos.Revision)
			upos, err := uncached.Position(uctx)
			if err != nil {
				t.Fatal(err)
			}
			want, err := uncached.Load(uctx, ids)
			urd.End()
			if err != nil {
				t.Fatal(err)
			}
			if upos != pos {
				t.Fatalf("%s: the uncached read is at %v, the cached one at %v; the engine writes only when told", step, upos, pos)
			}
			for i := range ids {
				if !reflect.DeepEqual(got[i].Value, want[i].Value) || fault.CodeOf(got[i].Err) != fault.CodeOf(want[i].Err) {
					t.Errorf("%s: %s is %#v (%v), a read without the cache says %#v (%v)", step, ids[i], got[i].Value, got[i].Err, want[i].Value, want[i].Err)
				}
			}
			return statements - positionOnly
		}
		rctx, rd := reader.Begin(ctx)
		if _, err := reader.Position(rctx); err != nil {
			t.Fatal(err)
		}
		positionOnly = rd.Statements()
		rd.End()
		fresh := func(step string, want bool) {
			t.Helper()
			hits, _, _ := reader.RunCacheStats()
			n := read(step)
			after, _, _ := reader.RunCacheStats()
			switch {
			case want && (n != 0 || after-hits != uint64(len(ids))):
				t.Errorf("%s: %d statements beyond the position and %d runs from the cache, want none and %d", step, n, after-hits, len(ids))
			case !want && n == 0:
				t.Errorf("%s: no statement beyond the position, though the watcher has not seen the runs unchanged", step)
			}
		}

		fresh("before the watcher's first look", false)
		watcher.Tick(ctx)
		fresh("read before the first look", false)
		fresh("read again after the first look", true)

		change(`UPDATE flows_runs SET state_json = '{"flowName":"cached","n":1}' WHERE run_id = $1`, "r2")
		fresh("a run changed, the watcher not told yet", false)
		watcher.Tick(ctx)
		fresh("the watcher told of the change it was read at", true)

		change(`DELETE FROM flows_runs WHERE run_id = $1`, "r5")
		watcher.Tick(ctx)
		fresh("a run deleted, the watcher told", false)
		// A missing run is not kept: it is read each time.
		fresh("the deleted run read again", false)
		ids = ids[:5]
		fresh("the others read again after the deletion", true)

		// More changes than a tick reads: the tick cannot say which runs
		// changed before the last it read, so the cache knows none.
		for _, id := range []string{"r0", "r1", "r3"} {
			change(`UPDATE flows_runs SET state_json = '{"flowName":"cached","n":2}' WHERE run_id = $1`, id)
		}
		watcher.Tick(ctx)
		fresh("after a tick cut short", false)
		watcher.Tick(ctx)
		fresh("after the tick that read the rest", true)
	})
}
