package graph_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/flowsnap/flowsnap/graph"
	"github.com/flowsnap/flowsnap/snapshot"
	"github.com/flowsnap/flowsnap/store/storetest"
)

// BenchmarkAttacks sends each hostile request of the suite to the real
// handler and reports its time and memory per request (server and client
// in one process: B/op and allocs/op include both).
func BenchmarkAttacks(b *testing.B) {
	for _, d := range storetest.Dialects {
		b.Run(string(d), func(b *testing.B) {
			h := newHostileServer(b, d, graph.Options{})
			for _, a := range attacks() {
				b.Run(a.name, func(b *testing.B) {
					b.ReportAllocs()
					for b.Loop() {
						r := h.send(b, a)
						if len(r.resp.Errors) == 0 {
							b.Fatalf("not refused: %d %.200s", r.status, r.body)
						}
					}
				})
			}
		})
	}
}

// BenchmarkDashboardUnderAttack serves the dashboard query of
// BenchmarkDashboard alone, then with two clients sending the attacks in a
// loop beside it; compare the two p99-µs.
func BenchmarkDashboardUnderAttack(b *testing.B) {
	for _, d := range storetest.Dialects {
		b.Run(string(d), func(b *testing.B) {
			bs := seededStore(b, d)
			reader := snapshot.NewReader(storetest.OpenReader(b, bs.dsn))
			srv := httptest.NewServer(graph.NewHandler(reader, graph.Options{}))
			defer srv.Close()
			pos, err := reader.Position(context.Background())
			if err != nil {
				b.Fatal(err)
			}
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
			dashboard := dashboardRequest(client, srv.URL)
			b.Run("alone", func(b *testing.B) { measure(b, bs, dashboard) })
			b.Run("besideAttacks", func(b *testing.B) {
				h := &hostileServer{url: srv.URL, source: pos.Source}
				stop := make(chan struct{})
				var wg sync.WaitGroup
				for w := range 2 {
					wg.Go(func() {
						list := attacks()
						for i := w; ; i++ {
							select {
							case <-stop:
								return
							default:
							}
							h.send(b, list[i%len(list)])
						}
					})
				}
				measure(b, bs, dashboard)
				close(stop)
				wg.Wait()
			})
		})
	}
}
