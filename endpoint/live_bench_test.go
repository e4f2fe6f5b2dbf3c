package endpoint_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
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

// BenchmarkLiveFanOut holds 1,000 subscriptions of one kind over WebSocket
// (position: 1,000 on position; run: 1,000 on run(id), the unfinished runs
// first) while the simulated engine writes 50 transactions a second, in each
// dialect, for FLOWSNAP_LIVE_BENCH_SECONDS (default 10) per iteration, with
// the watcher's interval from FLOWSNAP_BENCH_LIVE_INTERVALS (a comma list of
// durations, default the default --live-interval). It reports the delay from
// a commit to the first event of each subscriber that shows it (a commit's
// moment is when a 1ms poll of the revision first saw it, so the figures may
// be up to a millisecond short), and the CPU and memory of the whole process:
// server, clients and engine together.
func BenchmarkLiveFanOut(b *testing.B) {
	seconds := envInt("FLOWSNAP_LIVE_BENCH_SECONDS", 10)
	intervals := []time.Duration{live.DefaultInterval}
	if s := os.Getenv("FLOWSNAP_BENCH_LIVE_INTERVALS"); s != "" {
		intervals = nil
		for _, f := range strings.Split(s, ",") {
			d, err := time.ParseDuration(strings.TrimSpace(f))
			if err != nil {
				b.Fatalf("FLOWSNAP_BENCH_LIVE_INTERVALS: %v", err)
			}
			intervals = append(intervals, d)
		}
	}
	for _, d := range storetest.Dialects {
		for _, kind := range []string{"position", "run"} {
			for _, interval := range intervals {
				b.Run(fmt.Sprintf("%s/%s/interval=%s", d, kind, interval), func(b *testing.B) {
					for b.Loop() {
						liveFanOut(b, d, kind, interval, time.Duration(seconds)*time.Second)
					}
				})
			}
		}
	}
}

func liveFanOut(b *testing.B, d store.Dialect, kind string, interval, duration time.Duration) {
	dsn := storetest.DSN(b, d)
	db := storetest.OpenDSN(b, dsn, true)
	ctx := context.Background()
	if _, err := engine.Seed(ctx, db, engine.SeedOptions{Runs: 2000, Seed: 3}); err != nil {
		b.Fatal(err)
	}
	// The runs watched: the unfinished ones first, which the engine moves.
	var runIDs []string
	if kind == "run" {
		tx, err := db.BeginRead(ctx)
		if err != nil {
			b.Fatal(err)
		}
		rows, err := tx.Query(ctx, `SELECT run_id FROM flows_runs ORDER BY CASE WHEN status IN ('pending', 'running', 'suspended') THEN 0 ELSE 1 END, run_id LIMIT 1000`)
		if err != nil {
			b.Fatal(err)
		}
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				b.Fatal(err)
			}
			runIDs = append(runIDs, id)
		}
		rows.Close()
		_ = tx.Rollback(ctx)
		if len(runIDs) < 1000 {
			b.Fatalf("%d runs to watch, want 1,000", len(runIDs))
		}
	}
	reader := snapshot.NewReader(storetest.OpenReader(b, dsn))
	watcher := live.New(reader, live.Options{MaxSubscriptions: 1000, Interval: interval})
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	go func() { _ = watcher.Run(wctx) }()
	<-watcher.Ready()
	// One client holds every subscription.
	// FLOWSNAP_BENCH_MAX_EVENTS sets --max-events (default: half the CPUs).
	srv := httptest.NewServer(endpoint.NewHandler(reader, endpoint.Options{Live: watcher, MaxSubscriptionsPerClient: 1000,
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

	// seenFrom returns when the first sampled revision at or after rev
	// was seen: no earlier than rev's commit.
	seenFrom := func(rev int64) (time.Time, bool) {
		mu.Lock()
		defer mu.Unlock()
		i, _ := slices.BinarySearch(revs, rev)
		if i == len(revs) {
			return time.Time{}, false
		}
		return seen[revs[i]], true
	}

	var delays []time.Duration
	var dmu sync.Mutex
	// received counts the events of every subscriber; those before the
	// engine starts are taken off.
	var received atomic.Int64
	var wg sync.WaitGroup
	runCtx, cancel := context.WithCancel(ctx)
	for c := range 10 {
		conn := dialWS(b, srv.URL)
		for k := range 100 {
			var ch <-chan event
			if kind == "position" {
				ch, _ = conn.subscribe(fmt.Sprint(k), `subscription { position { revision } }`, nil)
			} else {
				ch, _ = conn.subscribe(fmt.Sprint(k), `subscription($id: ID!) { run(id: $id) { ... on Run { status revision } } }`,
					map[string]any{"id": runIDs[c*100+k]})
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				prev := int64(-1)
				for {
					select {
					case ev := <-ch:
						now := time.Now()
						received.Add(1)
						if kind == "position" {
							if ev.Extensions.Position == nil {
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
							continue
						}
						var run struct{ Revision int64 }
						if json.Unmarshal(ev.Data["run"], &run) != nil || run.Revision == 0 {
							continue
						}
						if prev >= 0 && run.Revision > prev {
							// The commit of the run's change this event is the first to show.
							if at, ok := seenFrom(run.Revision); ok {
								dmu.Lock()
								delays = append(delays, now.Sub(at))
								dmu.Unlock()
							}
						}
						prev = max(prev, run.Revision)
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
	first := received.Load()
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
		b.Fatal("no event measured")
	}
	b.ReportMetric(float64(delays[n/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(delays[n*99/100].Microseconds())/1000, "p99-ms")
	b.ReportMetric(cpu.Seconds()/wall.Seconds(), "cpu-cores")
	b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "heap-MiB")
	b.ReportMetric(float64(after.Maxrss)/1024, "maxrss-MiB")
	b.ReportMetric(float64(n), "commit-events")
	b.ReportMetric(float64(received.Load()-first)/wall.Seconds(), "events/s")
	b.ReportMetric(float64(interval.Microseconds())/1000, "interval-ms")
}
