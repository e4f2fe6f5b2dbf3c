package live_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/flowsnap/flowsnap/engine"
	"github.com/flowsnap/flowsnap/live"
	"github.com/flowsnap/flowsnap/snapshot"
	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/storetest"
)

// BenchmarkWatcherTick measures one tick of the watcher in both dialects:
// idle, when the store did not move since the last (what most ticks find
// at a short --live-interval), and busy, when one transaction committed
// since. It reports the statements a tick runs; the idle tick's cost is
// what bounds how short the interval may be.
func BenchmarkWatcherTick(b *testing.B) {
	for _, d := range storetest.Dialects {
		b.Run(string(d), func(b *testing.B) { benchmarkTick(b, d) })
	}
}

func benchmarkTick(b *testing.B, d store.Dialect) {
	{
		db := storetest.Open(b, d)
		ctx := context.Background()
		if _, err := engine.Seed(ctx, db, engine.SeedOptions{Runs: 200, Seed: 3}); err != nil {
			b.Fatal(err)
		}
		statements := 0
		w := live.New(snapshot.NewReader(db), live.Options{OnTick: func(n int) { statements += n }})
		w.Tick(ctx)
		sub, err := w.Subscribe()
		if err != nil {
			b.Fatal(err)
		}
		defer sub.Close()
		sub.WatchAll()
		b.Run("idle", func(b *testing.B) {
			statements = 0
			for b.Loop() {
				w.Tick(ctx)
			}
			b.ReportMetric(float64(statements)/float64(b.N), "statements/tick")
		})
		b.Run("busy", func(b *testing.B) {
			ew := engine.NewWriter(db, nil)
			statements = 0
			for i := 0; b.Loop(); i++ {
				b.StopTimer()
				if err := ew.CreateRun(ctx, engine.NewRun{ID: "tick-" + strconv.Itoa(i), FlowName: "tick"}); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				w.Tick(ctx)
				<-sub.Changed()
			}
			b.ReportMetric(float64(statements)/float64(b.N), "statements/tick")
		})
	}
}
