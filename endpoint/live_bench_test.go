package endpoint_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/flowsnap/flowsnap/endpoint"
	"github.com/flowsnap/flowsnap/engine"
	"github.com/flowsnap/flowsnap/live"
	"github.com/flowsnap/flowsnap/snapshot"
	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/storetest"
)

// BenchmarkLiveFanOut holds 1,000 subscriptions on position and 100 on
// run(id) over WebSocket while the simulated engine writes 50 transactions
// a second to a SQLite store, for FLOWSNAP_LIVE_BENCH_SECONDS (default 10)
// per iteration. It reports the delay from a commit to the first position
// event of each subscriber that shows it (a commit's moment is when a 1ms
// poll of the revision first saw it, so the figures may be up to a
// millisecond short), and the CPU and memory of the whole process: server,
// clients and engine together.
func BenchmarkLiveFanOut(b *testing.B) {
	seconds := 10
	if s := os.Getenv("FLOWSNAP_LIVE_BENCH_SECONDS"); s != "" {
		seconds, _ = strconv.Atoi(s)
	}
	for b.Loop() {
		liveFanOut(b, time.Duration(seconds)*time.Second)
	}
}

func liveFanOut(b *testing.B, duration time.Duration) {
	dsn := storetest.DSN(b, store.SQLite)
	db := storetest.OpenDSN(b, dsn, true)
	ctx := context.Background()
	if _, err := engine.Seed(ctx, db, engine.SeedOptions{Runs: 2000, Seed: 3}); err != nil {
		b.Fatal(err)
	}
	reader := snapshot.NewReader(storetest.OpenReader(b, dsn))
	watcher := live.New(reader, live.Options{MaxSubscriptions: 1100})
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	go func() { _ = watcher.Run(wctx) }()
	<-watcher.Ready()
	// One client holds every subscription.
	// FLOWSNAP_BENCH_MAX_EVENTS sets --max-events (default: half the CPUs).
	srv := httptest.NewServer(endpoint.NewHandler(reader, endpoint.Options{Live: watcher, MaxSubscriptionsPerClient: 1100,
		MaxEvents: envInt("FLOWSNAP_BENCH_MAX_EVENTS", 0)}))
	defer srv.Close()

	// When each revision was first seen.
	var mu sync.Mutex
	seen := map[int64]time.Time{}
	var revs []int64
	go func() {
		for wctx.Err() == nil {
			tx, err := db.BeginRead(wctx)
			if err != nil {
				return
			}
			var rev int64
			_ = tx.QueryRow(wctx, `SELECT revision FROM flows_run_source WHERE singleton = 1`).Scan(&rev)
			_ = tx.Rollback(wctx)
			now := time.Now()
			mu.Lock()
			if _, ok := seen[rev]; !ok {
				seen[rev] = now
				revs = append(revs, rev)
			}
			mu.Unlock()
			time.Sleep(time.Millisecond)
		}
	}()
	// committedIn returns when each sampled revision in (from, to] was
	// first seen.
	committedIn := func(from, to int64) []time.Time {
		mu.Lock()
		defer mu.Unlock()
		i, _ := slices.BinarySearch(revs, from+1)
		var out []time.Time
		for ; i < len(revs) && revs[i] <= to; i++ {
			out = append(out, seen[revs[i]])
		}
		return out
	}

	var delays []time.Duration
	var dmu sync.Mutex
	var wg sync.WaitGroup
	runCtx, cancel := context.WithCancel(ctx)
	for c := range 11 {
		conn := dialWS(b, srv.URL)
		for k := range 100 {
			var ch <-chan event
			if c < 10 {
				ch, _ = conn.subscribe(fmt.Sprint(k), `subscription { position { revision } }`, nil)
			} else {
				ch, _ = conn.subscribe(fmt.Sprint(k), `subscription($id: ID!) { run(id: $id) { ... on Run { status revision } } }`,
					map[string]any{"id": fmt.Sprintf("run-%07d", 1+k*19)})
			}
			position := c < 10
			wg.Add(1)
			go func() {
				defer wg.Done()
				prev := int64(-1)
				for {
					select {
					case ev := <-ch:
						now := time.Now()
						if !position || ev.Extensions.Position == nil {
							continue
						}
						rev := ev.Extensions.Position.Revision
						if prev >= 0 {
							// Every commit this event is the first to show.
							dmu.Lock()
							for _, at := range committedIn(prev, rev) {
								delays = append(delays, now.Sub(at))
							}
							dmu.Unlock()
						}
						prev = rev
					case <-runCtx.Done():
						return
					}
				}
			}()
		}
	}
	if n := watcher.Open(); n < 1000 {
		time.Sleep(time.Second)
	}
	var before syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &before)
	start := time.Now()
	simCtx, simStop := context.WithTimeout(ctx, duration)
	defer simStop()
	_ = engine.Simulate(simCtx, db, engine.SimOptions{Rate: 50, Seed: 9})
	wall := time.Since(start)
	var after syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &after)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	cancel()
	wg.Wait()
	cpu := time.Duration(after.Utime.Nano()+after.Stime.Nano()-before.Utime.Nano()-before.Stime.Nano()) * time.Nanosecond
	dmu.Lock()
	slices.Sort(delays)
	n := len(delays)
	dmu.Unlock()
	if n == 0 {
		b.Fatal("no position event measured")
	}
	b.ReportMetric(float64(delays[n/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(delays[n*99/100].Microseconds())/1000, "p99-ms")
	b.ReportMetric(cpu.Seconds()/wall.Seconds(), "cpu-cores")
	b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "heap-MiB")
	b.ReportMetric(float64(after.Maxrss)/1024, "maxrss-MiB")
	b.ReportMetric(float64(n), "commit-events")
}
