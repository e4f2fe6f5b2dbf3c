package endpoint_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flowsnap/flowsnap/endpoint"
	"github.com/flowsnap/flowsnap/snapshot"
	"github.com/flowsnap/flowsnap/store/storetest"
)

// BenchmarkAttacks sends each hostile request of the suite to the real
// handler and reports its time, CPU and memory per request (server and
// client in one process: cpu-µs/op, B/op and allocs/op include both; the
// bodies are made once, before the timer starts). On a busy machine
// cpu-µs/op says more than ns/op, which includes waiting for a CPU.
func BenchmarkAttacks(b *testing.B) {
	for _, d := range storetest.Dialects {
		b.Run(string(d), func(b *testing.B) {
			h := newHostileServer(b, d, endpoint.Options{})
			for _, a := range attacks() {
				hr := h.prepare(a)
				b.Run(a.name, func(b *testing.B) {
					b.ReportAllocs()
					cpu := selfCPU()
					for b.Loop() {
						r := h.do(b, hr)
						if len(r.resp.Errors) == 0 {
							b.Fatalf("not refused: %d %.200s", r.status, r.body)
						}
					}
					b.ReportMetric((selfCPU()-cpu)*1e6/float64(b.N), "cpu-µs/op")
				})
			}
		})
	}
}

// BenchmarkDashboardUnderAttack serves the dashboard query of
// BenchmarkDashboard as browsers polling send it — at a steady rate
// (FLOWSNAP_BENCH_RATE a second, 100 unless set), each request on its own,
// its latency counted from when it was due — in rounds of
// FLOWSNAP_BENCH_ROUND_MS (2,000) milliseconds, alternately alone and with
// two clients sending the attacks in a closed loop beside it (as fast as
// they are answered), FLOWSNAP_BENCH_ROUNDS (4) of each, interleaved. It
// reports the p50 and p99 of each condition over all its rounds, the
// ratio of the p99s, the attacks answered a second and the share of them
// refused as busy, and the CPU the process used in each condition (in
// cores; on a machine shared with other work, what it was given). Run it
// with -benchtime 1x.
func BenchmarkDashboardUnderAttack(b *testing.B) {
	rate := envInt("FLOWSNAP_BENCH_RATE", 100)
	round := time.Duration(envInt("FLOWSNAP_BENCH_ROUND_MS", 2000)) * time.Millisecond
	rounds := envInt("FLOWSNAP_BENCH_ROUNDS", 4)
	for _, d := range storetest.Dialects {
		b.Run(string(d), func(b *testing.B) {
			bs := seededStore(b, d)
			reader := snapshot.NewReader(storetest.OpenReader(b, bs.dsn))
			srv := httptest.NewServer(endpoint.NewHandler(reader, endpoint.Options{}))
			defer srv.Close()
			pos, err := reader.Position(context.Background())
			if err != nil {
				b.Fatal(err)
			}
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
			dashboard := dashboardRequest(client, srv.URL)
			h := &hostileServer{url: srv.URL, source: pos.Source}
			var list []hostileRequest
			for _, a := range attacks() {
				list = append(list, h.prepare(a))
			}
			var alone, attacked []time.Duration
			var sent, busy atomic.Int64
			var attackTime time.Duration
			// The CPU this process had in each condition, in cores.
			var cpu [2]float64
			var took [2]time.Duration
			load := func(out *[]time.Duration) {
				c, t := selfCPU(), time.Now()
				*out = append(*out, steadyLoad(b, bs, dashboard, rate, round)...)
				i := 0
				if out == &attacked {
					i = 1
				}
				cpu[i] += selfCPU() - c
				took[i] += time.Since(t)
			}
			underAttack := func() {
				stop := make(chan struct{})
				var wg sync.WaitGroup
				for w := range 2 {
					wg.Go(func() {
						for i := w; ; i++ {
							select {
							case <-stop:
								return
							default:
							}
							r := h.do(b, list[i%len(list)])
							sent.Add(1)
							if r.status == http.StatusServiceUnavailable {
								busy.Add(1)
							}
						}
					})
				}
				start := time.Now()
				load(&attacked)
				close(stop)
				wg.Wait()
				attackTime += time.Since(start)
			}
			for b.Loop() {
				for i := range rounds {
					// Alternate which goes first, so that neither always
					// follows the other.
					if i%2 == 0 {
						load(&alone)
						underAttack()
					} else {
						underAttack()
						load(&alone)
					}
				}
			}
			p50a, p99a := percentiles(alone)
			p50x, p99x := percentiles(attacked)
			b.ReportMetric(float64(p50a.Microseconds()), "p50-alone-µs")
			b.ReportMetric(float64(p99a.Microseconds()), "p99-alone-µs")
			b.ReportMetric(float64(p50x.Microseconds()), "p50-attacked-µs")
			b.ReportMetric(float64(p99x.Microseconds()), "p99-attacked-µs")
			b.ReportMetric(float64(p99x)/float64(max(p99a, 1)), "p99-ratio")
			b.ReportMetric(float64(sent.Load())/attackTime.Seconds(), "attacks/s")
			b.ReportMetric(float64(busy.Load())/float64(max(sent.Load(), 1)), "busy-share")
			b.ReportMetric(cpu[0]/took[0].Seconds(), "cores-alone")
			b.ReportMetric(cpu[1]/took[1].Seconds(), "cores-attacked")
		})
	}
}

// steadyLoad sends op at rate a second for d, each request in its own
// goroutine, and returns each one's latency from when it was due.
func steadyLoad(b *testing.B, bs *benchStore, op func(id string) error, rate int, d time.Duration) []time.Duration {
	interval := time.Second / time.Duration(rate)
	n := int(d / interval)
	lat := make([]time.Duration, n)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range n {
		due := start.Add(time.Duration(i) * interval)
		time.Sleep(time.Until(due))
		id := bs.anchors[i%len(bs.anchors)]
		wg.Go(func() {
			if err := op(id); err != nil {
				b.Error(err)
			}
			lat[i] = time.Since(due)
		})
	}
	wg.Wait()
	return lat
}

func percentiles(lat []time.Duration) (p50, p99 time.Duration) {
	if len(lat) == 0 {
		return 0, 0
	}
	s := slices.Clone(lat)
	slices.Sort(s)
	return s[len(s)/2], s[len(s)*99/100]
}
