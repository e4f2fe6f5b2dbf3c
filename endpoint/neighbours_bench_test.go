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
	"syscall"
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
// was due) in rounds of FLOWSNAP_BENCH_ROUND_MS (2,000) milliseconds,
// alternately alone and beside a neighbour, FLOWSNAP_BENCH_ROUNDS (2) of
// each for each neighbour, with the reference engine writing all the
// while (20 transactions a second) into a store of FLOWSNAP_NEIGHBOURS_RUNS
// (10,000) seeded runs. The neighbours:
//
//   - expensive-list: two clients sending, as fast as they are answered,
//     one query of 50 aliased run lists filtered on what no index serves;
//   - subscription-flood: eight clients each subscribing to the change
//     feed from revision 0 (events of 1,000 changes with their runs),
//     reading it to the present, and subscribing again;
//   - ping-flood: twenty WebSocket connections sending pings as fast as
//     they can (and dialing again if closed), reading the pongs;
//   - idle-websockets: 1,000 WebSocket connections, each from a loopback
//     address of its own, initialised and then silent.
//
// For each neighbour it reports the p50 and p99 alone and beside it, the
// ratio of the p99s, the simple queries that failed or timed out (none
// should), and the CPU the process used (server, clients and neighbour
// alike: on a machine shared with other work, what it was given). Run it
// with -benchtime 1x.
func BenchmarkNeighbours(b *testing.B) {
	rate := envInt("FLOWSNAP_BENCH_RATE", 100)
	round := time.Duration(envInt("FLOWSNAP_BENCH_ROUND_MS", 2000)) * time.Millisecond
	rounds := envInt("FLOWSNAP_BENCH_ROUNDS", 2)
	runs := envInt("FLOWSNAP_NEIGHBOURS_RUNS", 10_000)
	for _, d := range storetest.Dialects {
		b.Run(string(d), func(b *testing.B) {
			n := neighbourhood(b, d, runs)
			simple := func(id string) error {
				return postQuery(n.client, n.url+"/graphql", `query Simple($id: ID!) { run(id: $id) { ... on Run { id status flowName revision } } }`, map[string]any{"id": id})
			}
			for _, c := range []struct {
				name      string
				neighbour func(ctx context.Context, ready func())
			}{
				{"expensive-list", n.expensiveList},
				{"subscription-flood", n.subscriptionFlood},
				{"ping-flood", n.pingFlood},
				{"idle-websockets", n.idleWebSockets},
			} {
				b.Run(c.name, func(b *testing.B) {
					for b.Loop() {
						var alone, beside []time.Duration
						var cpu [2]float64
						failed := 0
						for range rounds {
							c0 := selfCPU()
							lat, f := steadyRate(n.ids, simple, rate, round)
							cpu[0] += selfCPU() - c0
							alone, failed = append(alone, lat...), failed+f
							lat, f = n.beside(c.neighbour, func() ([]time.Duration, int) {
								c0 := selfCPU()
								defer func() { cpu[1] += selfCPU() - c0 }()
								return steadyRate(n.ids, simple, rate, round)
							}, round)
							beside, failed = append(beside, lat...), failed+f
						}
						a50, a99 := percentiles(alone)
						p50, p99 := percentiles(beside)
						b.ReportMetric(float64(a50.Microseconds())/1000, "alone-p50-ms")
						b.ReportMetric(float64(a99.Microseconds())/1000, "alone-p99-ms")
						b.ReportMetric(float64(p50.Microseconds())/1000, "p50-ms")
						b.ReportMetric(float64(p99.Microseconds())/1000, "p99-ms")
						b.ReportMetric(float64(p99)/float64(max(a99, 1)), "p99-ratio")
						b.ReportMetric(float64(failed), "failed")
						// The process's CPU (server, clients and neighbour
						// alike), in cores.
						b.ReportMetric(cpu[0]/(float64(rounds)*round.Seconds()), "cores-alone")
						b.ReportMetric(cpu[1]/(float64(rounds)*round.Seconds()), "cores-beside")
					}
				})
			}
		})
	}
}

// beside runs measure while neighbour works, once it is ready and has
// had a quarter of a round to get going.
func (n *neighbours) beside(neighbour func(ctx context.Context, ready func()), measure func() ([]time.Duration, int), round time.Duration) ([]time.Duration, int) {
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	ready := make(chan struct{})
	wg.Go(func() { neighbour(ctx, sync.OnceFunc(func() { close(ready) })) })
	<-ready
	time.Sleep(round / 4)
	lat, failed := measure()
	stop()
	wg.Wait()
	return lat, failed
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
	rdb := storetest.OpenReader(b, dsn)
	reader := snapshot.NewReader(rdb)
	// As flowsnap serve sets it up (--statement-timeout, --expensive-reads).
	reader.SetStatementLimit(2*time.Second, snapshot.DefaultLane(rdb.MaxReaders()))
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
	// The flooder's own CPU is spent in this process, on the same CPUs:
	// a small send buffer stops its writes soon after the server stops
	// reading, as a remote flooder's would be stopped by TCP.
	d := &net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		return c.Control(func(fd uintptr) { _ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_SNDBUF, 4096) })
	}}
	client := &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
	for range 20 {
		wg.Go(func() {
			for ctx.Err() == nil {
				conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(n.url, "http")+"/graphql",
					&websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}, HTTPClient: client})
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
