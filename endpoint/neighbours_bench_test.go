package endpoint_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/flowsnap/flowsnap/endpoint"
	"github.com/flowsnap/flowsnap/engine"
	"github.com/flowsnap/flowsnap/live"
	"github.com/flowsnap/flowsnap/snapshot"
	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/storetest"
)

// BenchmarkNeighbours measures what other clients do to a simple query:
// one run by id, sent at a steady rate (FLOWSNAP_BENCH_RATE a second, 100
// unless set; each request on its own, its latency counted from when it
// was due) for FLOWSNAP_BENCH_ROUND_MS (2,000) milliseconds alone, then
// beside each neighbour in turn, with the reference engine writing all the
// while (20 transactions a second) into a store of FLOWSNAP_NEIGHBOURS_RUNS
// (10,000) seeded runs. The neighbours:
//
//   - expensive-list: two clients sending, as fast as they are answered,
//     one query of 50 aliased run lists filtered on what no index serves;
//   - subscription-flood: eight clients each subscribing to the change
//     feed from revision 0 (events of 1,000 changes with their runs),
//     reading it to the present, and subscribing again;
//   - ping-flood: twenty WebSocket connections sending pings as fast as
//     they can, each dialing again when it is closed for it;
//   - idle-websockets: 1,000 WebSocket connections, each from a loopback
//     address of its own, initialised and then silent.
//
// It reports each condition's p50 and p99, its p99 over the p99 alone,
// and the simple queries that failed or timed out (none should). Run it
// with -benchtime 1x.
func BenchmarkNeighbours(b *testing.B) {
	rate := envInt("FLOWSNAP_BENCH_RATE", 100)
	round := time.Duration(envInt("FLOWSNAP_BENCH_ROUND_MS", 2000)) * time.Millisecond
	runs := envInt("FLOWSNAP_NEIGHBOURS_RUNS", 10_000)
	for _, d := range storetest.Dialects {
		b.Run(string(d), func(b *testing.B) {
			n := neighbourhood(b, d, runs)
			simple := func(id string) error {
				return postQuery(n.client, n.url+"/graphql", `query Simple($id: ID!) { run(id: $id) { ... on Run { id status flowName revision } } }`, map[string]any{"id": id})
			}
			var alone time.Duration
			for _, c := range []struct {
				name      string
				neighbour func(ctx context.Context, ready func())
			}{
				{"alone", nil},
				{"expensive-list", n.expensiveList},
				{"subscription-flood", n.subscriptionFlood},
				{"ping-flood", n.pingFlood},
				{"idle-websockets", n.idleWebSockets},
			} {
				b.Run(c.name, func(b *testing.B) {
					for b.Loop() {
						ctx, stop := context.WithCancel(context.Background())
						var wg sync.WaitGroup
						if c.neighbour != nil {
							ready := make(chan struct{})
							wg.Go(func() { c.neighbour(ctx, sync.OnceFunc(func() { close(ready) })) })
							<-ready
							// Let it get going.
							time.Sleep(round / 4)
						}
						lat, failed := steadyRate(n.ids, simple, rate, round)
						stop()
						wg.Wait()
						p50, p99 := percentiles(lat)
						if c.name == "alone" {
							alone = p99
						}
						b.ReportMetric(float64(p50.Microseconds())/1000, "p50-ms")
						b.ReportMetric(float64(p99.Microseconds())/1000, "p99-ms")
						b.ReportMetric(float64(p99)/float64(max(alone, 1)), "p99-ratio")
						b.ReportMetric(float64(failed), "failed")
					}
				})
			}
		})
	}
}

// neighbours is a served store with the engine writing into it.
type neighbours struct {
	url    string
	client *http.Client
	ids    []string
}

func neighbourhood(b *testing.B, d store.Dialect, runs int) *neighbours {
	ctx := context.Background()
	dsn := storetest.DSN(b, d)
	db, err := store.Open(ctx, dsn, store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	if _, _, err := db.Migrate(ctx); err != nil {
		b.Fatal(err)
	}
	if _, err := engine.Seed(ctx, db, engine.SeedOptions{Runs: runs, Seed: 1}); err != nil {
		b.Fatal(err)
	}
	simCtx, stopSim := context.WithCancel(ctx)
	simDone := make(chan struct{})
	go func() {
		defer close(simDone)
		if err := engine.Simulate(simCtx, db, engine.SimOptions{Rate: 20, Seed: 2}); err != nil {
			b.Error(err)
		}
	}()
	b.Cleanup(func() { stopSim(); <-simDone })
	reader := snapshot.NewReader(storetest.OpenReader(b, dsn))
	watcher := live.New(reader, live.Options{})
	wctx, stopWatch := context.WithCancel(ctx)
	watchDone := make(chan struct{})
	go func() {
		defer close(watchDone)
		_ = watcher.Run(wctx)
	}()
	b.Cleanup(func() { stopWatch(); <-watchDone })
	<-watcher.Ready()
	// Room for the thousand idle connections beside the other neighbours;
	// every other limit is the default.
	srv := httptest.NewServer(endpoint.NewHandler(reader, endpoint.Options{Live: watcher, MaxConnections: 1200}))
	b.Cleanup(srv.Close)
	n := &neighbours{url: srv.URL, client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}}}
	raw, err := postAnswer(n.client, srv.URL+"/graphql", `{ listRuns(first: 200) { edges { node { ... on Run { id } } } } }`, nil)
	if err != nil {
		b.Fatal(err)
	}
	var page struct {
		Data struct {
			ListRuns struct {
				Edges []struct {
					Node struct{ ID string } `json:"node"`
				} `json:"edges"`
			} `json:"listRuns"`
		} `json:"data"`
	}
	if err := json.Unmarshal(raw, &page); err != nil {
		b.Fatal(err)
	}
	for _, e := range page.Data.ListRuns.Edges {
		n.ids = append(n.ids, e.Node.ID)
	}
	if len(n.ids) == 0 {
		b.Fatal("no runs")
	}
	return n
}

// steadyRate sends op at rate a second for d over ids, each request in its
// own goroutine, and returns the latencies of those that succeeded (from
// when each was due) and how many failed.
func steadyRate(ids []string, op func(id string) error, rate int, d time.Duration) ([]time.Duration, int) {
	interval := time.Second / time.Duration(rate)
	n := int(d / interval)
	lat := make([]time.Duration, n)
	var failed atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for i := range n {
		due := start.Add(time.Duration(i) * interval)
		time.Sleep(time.Until(due))
		wg.Go(func() {
			if err := op(ids[i%len(ids)]); err != nil {
				failed.Add(1)
				lat[i] = -1
				return
			}
			lat[i] = time.Since(due)
		})
	}
	wg.Wait()
	ok := lat[:0]
	for _, l := range lat {
		if l >= 0 {
			ok = append(ok, l)
		}
	}
	return ok, int(failed.Load())
}

func (n *neighbours) expensiveList(ctx context.Context, ready func()) {
	ready()
	var q strings.Builder
	q.WriteString("{ ")
	for i := range 50 {
		fmt.Fprintf(&q, "a%d: listRuns(filter: {status: [COMPLETED], cancelRequested: true}, first: 100) { edges { node { ... on Run { id status } } } } ", i)
	}
	q.WriteString("}")
	body, _ := json.Marshal(map[string]any{"query": q.String()})
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for ctx.Err() == nil {
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, n.url+"/graphql", bytes.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				if res, err := client.Do(req); err == nil {
					_, _ = io.Copy(io.Discard, res.Body)
					res.Body.Close()
				}
			}
		})
	}
	wg.Wait()
}

func (n *neighbours) subscriptionFlood(ctx context.Context, ready func()) {
	ready()
	const feed = `subscription { changes(since: 0) { nextRevision hasMore changes { runId revision run { ... on Run { id status flowName createdAt } } } } }`
	body, _ := json.Marshal(map[string]any{"query": feed})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for ctx.Err() == nil {
				sctx, cancel := context.WithCancel(ctx)
				req, _ := http.NewRequestWithContext(sctx, http.MethodPost, n.url+"/graphql", bytes.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "text/event-stream")
				res, err := http.DefaultClient.Do(req)
				if err == nil {
					sc := bufio.NewScanner(res.Body)
					sc.Buffer(make([]byte, 1<<20), 1<<26)
					for sc.Scan() {
						// Read to the present, then subscribe again.
						if line := sc.Text(); strings.HasPrefix(line, "data: ") && strings.Contains(line, `"hasMore":false`) {
							break
						}
					}
					res.Body.Close()
				}
				cancel()
			}
		})
	}
	wg.Wait()
}

func (n *neighbours) pingFlood(ctx context.Context, ready func()) {
	ready()
	var wg sync.WaitGroup
	ping := []byte(`{"type":"ping"}`)
	for range 20 {
		wg.Go(func() {
			for ctx.Err() == nil {
				conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(n.url, "http")+"/graphql",
					&websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}})
				if err != nil {
					time.Sleep(10 * time.Millisecond)
					continue
				}
				// Pongs are read and dropped, as a flooding client would.
				go func() {
					for {
						if _, _, err := conn.Read(ctx); err != nil {
							return
						}
					}
				}()
				if conn.Write(ctx, websocket.MessageText, []byte(`{"type":"connection_init"}`)) == nil {
					for conn.Write(ctx, websocket.MessageText, ping) == nil {
					}
				}
				_ = conn.CloseNow()
			}
		})
	}
	wg.Wait()
}

func (n *neighbours) idleWebSockets(ctx context.Context, ready func()) {
	defer ready()
	conns := make([]*websocket.Conn, 0, 1000)
	defer func() {
		for _, c := range conns {
			_ = c.CloseNow()
		}
	}()
	for i := range 1000 {
		ip := net.IPv4(127, 1, byte(i/250), byte(i%250+1))
		client := &http.Client{Transport: &http.Transport{DialContext: dialerFrom(ip.String(), false).DialContext}}
		conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(n.url, "http")+"/graphql",
			&websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}, HTTPClient: client})
		if err != nil {
			if ctx.Err() == nil {
				panic(fmt.Sprintf("idle connection %d: %v", i, err))
			}
			return
		}
		conns = append(conns, conn)
		if err := conn.Write(ctx, websocket.MessageText, []byte(`{"type":"connection_init"}`)); err != nil {
			panic(fmt.Sprintf("idle connection %d: %v", i, err))
		}
		if _, ack, err := conn.Read(ctx); err != nil || !bytes.Contains(ack, []byte("connection_ack")) {
			panic(fmt.Sprintf("idle connection %d: %s, %v", i, ack, err))
		}
	}
	ready()
	<-ctx.Done()
}
