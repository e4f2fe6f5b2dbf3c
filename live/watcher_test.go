package live_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flowsnap/flowsnap/engine"
	"github.com/flowsnap/flowsnap/live"
	"github.com/flowsnap/flowsnap/snapshot"
	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/storetest"
	"github.com/flowsnap/flowsnap/store/vocab"
)

// TestASlowSubscriberGetsTheLatestRevision lets the engine commit many
// times while a subscriber takes nothing: it holds one notification, not a
// queue, and Take says the latest revision; the merged ones are counted.
func TestASlowSubscriberGetsTheLatestRevision(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		db := storetest.Open(t, d)
		w := engine.NewWriter(db, nil)
		ctx := context.Background()
		if err := w.CreateRun(ctx, engine.NewRun{ID: "r1", FlowName: "slow"}); err != nil {
			t.Fatal(err)
		}
		reg := prometheus.NewRegistry()
		m := live.NewMetrics()
		reg.MustRegister(m.Collectors()...)
		watcher := live.New(snapshot.NewReader(db), live.Options{Interval: 5 * time.Millisecond, Metrics: m})
		wctx, stop := context.WithCancel(ctx)
		defer stop()
		go watcher.Run(wctx)
		<-watcher.Ready()
		sub, err := watcher.Subscribe()
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Close()
		sub.WatchRun("r1")
		for i := range 20 {
			err := db.Write(ctx, func(tx store.Tx) error {
				_, err := tx.Exec(ctx, `UPDATE flows_runs SET state_json = $2 WHERE run_id = $1`, "r1", fmt.Sprintf(`{"flowName":"slow","n":%d}`, i))
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			time.Sleep(10 * time.Millisecond)
		}
		var want int64
		tx, err := db.BeginRead(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := tx.QueryRow(ctx, `SELECT revision FROM flows_run_changes WHERE run_id = 'r1'`).Scan(&want); err != nil {
			t.Fatal(err)
		}
		tx.Rollback(ctx)
		deadline := time.Now().Add(30 * time.Second)
		for {
			if len(sub.Changed()) > 1 {
				t.Fatalf("%d notifications queued", len(sub.Changed()))
			}
			<-sub.Changed()
			if rev, _ := sub.Take(); rev >= want {
				if rev != want {
					t.Fatalf("told of revision %d, r1 is at %d", rev, want)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("never told of r1's latest revision")
			}
		}
		mfs, _ := reg.Gather()
		var coalesced float64
		for _, mf := range mfs {
			if mf.GetName() == "flowsnap_live_events_coalesced_total" {
				coalesced = mf.GetMetric()[0].GetCounter().GetValue()
			}
		}
		if coalesced == 0 {
			t.Fatal("no notification was coalesced while the subscriber took nothing")
		}
	})
}

// TestAnIdleTickIsOneStatement ticks by hand: a tick that finds nothing new
// runs one statement (the revision read alone); the first that finds a
// commit after it reads the changes too, and tells the subscriber.
func TestAnIdleTickIsOneStatement(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		db := storetest.Open(t, d)
		ew := engine.NewWriter(db, nil)
		ctx := context.Background()
		if err := ew.CreateRun(ctx, engine.NewRun{ID: "r1", FlowName: "idle"}); err != nil {
			t.Fatal(err)
		}
		var ticks []int
		w := live.New(snapshot.NewReader(db), live.Options{OnTick: func(n int) { ticks = append(ticks, n) }})
		w.Tick(ctx)
		sub, err := w.Subscribe()
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Close()
		sub.WatchRun("r1")
		w.Tick(ctx)
		w.Tick(ctx)
		w.Tick(ctx)
		if err := ew.Start(ctx, "r1", vocab.Owner{HostID: "h", PID: 1, Nonce: "n"}); err != nil {
			t.Fatal(err)
		}
		w.Tick(ctx)
		select {
		case <-sub.Changed():
		default:
			t.Fatal("the tick after a commit did not tell r1's subscriber")
		}
		w.Tick(ctx)
		// The first tick reads the position in a transaction; then idle
		// ticks, the commit's tick (the revision alone, then the position
		// and the changes), and the tick after it, which reads in a
		// transaction again and finds nothing.
		want := []int{1, 1, 1, 1, 3, 1}
		if fmt.Sprint(ticks) != fmt.Sprint(want) {
			t.Fatalf("statements per tick %v, want %v", ticks, want)
		}
	})
}
