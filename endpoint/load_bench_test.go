package endpoint_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/flowsnap/flowsnap/cursor"
	"github.com/flowsnap/flowsnap/endpoint"
	"github.com/flowsnap/flowsnap/engine"
	"github.com/flowsnap/flowsnap/gcpace"
	"github.com/flowsnap/flowsnap/live"
	"github.com/flowsnap/flowsnap/snapshot"
	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/storetest"
)

// loadClients is how many clients BenchmarkLoad runs at once;
// FLOWSNAP_BENCH_CLIENTS overrides it.
func loadClients() int {
	return envInt("FLOWSNAP_BENCH_CLIENTS", 16)
}

// A shape of request, over GraphQL and by bare SQL reading the same rows
// in the same kind of read transaction.
type loadShape struct {
	name  string
	query string
	vars  func(id string) map[string]any
	raw   func(tx store.Tx, id string) error
	// alone, when set, returns raw's statement and its argument, to read
	// as one statement of its own (the position read in it), as flowsnap
	// reads a shape that needs one statement: the rawSQLAlone rows.
	alone func(id string) (string, any)
	// every is query with every field of its runs selected (all of Run's
	// but the journal's), read beside it: the flowsnapEveryField rows,
	// whose x-fields is their CPU per request ÷ the flowsnap row's.
	every string
	// everyRaw reads what every's answer needs by bare SQL (every column
	// of the runs read and of their change rows, and their parents' rows)
	// in the same kind of read transaction: the rawSQLEveryField rows,
	// whose x-flowsnap is the flowsnapEveryField row's CPU per request ÷
	// theirs. everyAlone, when set, returns its statement and argument to
	// read alone (rawSQLEveryFieldAlone), as alone does for raw.
	everyRaw   func(tx store.Tx, id string) error
	everyAlone func(id string) (string, any)
	// noDirect adds the flowsnapNoDirect row: query answered by gqlgen's
	// executor, the direct answer off, whose x-direct is its CPU per
	// request ÷ the flowsnap row's.
	noDirect bool
}

// everyRunField selects every field of Run but the journal's (a page of
// steps or events is a shape of its own), and of MissingRun.
var everyRunField = everyRunFieldAnd("")

// everyRunFieldAnd is everyRunField with more of Run's fields.
func everyRunFieldAnd(more string) string {
	return `... on Run { __typename id revision status flowName state createdAt startedAt finishedAt heartbeatAt
	owner { hostId pid nonce } claim { owner { hostId pid nonce } claimedAt } parentRunId executionParentId
	parent { __typename ... on Run { id status } ... on MissingRun { id deleted } } lineageId roundOrdinal
	cancellation { requestedAt acknowledgement { observedAt owner { hostId pid nonce } } }
	waiting { kind reason wakeAt tokenDigest request } ` + more + ` }
	... on MissingRun { __typename id deleted deletedAtRevision }`
}

// everyPageField selects every field of a page of runs, each run's every
// field.
var everyPageField = `{ __typename edges { __typename cursor ordinal node { ` + everyRunField + ` } }
	nodes { __typename } pageInfo { hasNextPage hasPreviousPage startCursor endCursor } }`

const (
	hubChildren = 1100
	hubDepth    = 1000
)

// BenchmarkLoad serves four shapes of request over HTTP at once from
// loadClients() clients — one run, a batch of 100 runs, the dashboard query
// and a page of 100 children 1,000 deep — each beside bare SQL reading the
// same rows in the same kind of read transaction (and, for the one run
// and the batch, which flowsnap reads in one statement run alone, beside
// bare SQL doing the same: rawSQLAlone), and beside a Go HTTP server that
// only reads the same request and writes as many bytes back: httpFloor,
// what any server over HTTP pays for the exchange. The list shapes
// (loadListShapes) and a run's journal (loadJournalShape) follow. Besides req/s and
// latency it reports CPU per request. The GraphQL server runs in a process
// of its own (this test binary started again, see TestMain), so that its
// CPU is counted apart from the benchmark's HTTP client: cpu-µs/req is the
// CPU of the process that reads the store (the server for the GraphQL rows,
// this process for bare SQL), client-µs/req that of the HTTP client, and
// srv-maxrss-MiB the server's peak resident memory so far, srv-allocs/req
// and srv-B/req its allocations (B/op and allocs/op are this process's). With
// FLOWSNAP_BENCH_INPROCESS=1 the server runs in this process instead, as
// -cpuprofile needs, and cpu-µs/req counts server and client together. On
// PostgreSQL pg-µs/req is the CPU its backends spent (from /proc of the
// backend pids pg_stat_activity lists, when the server is on this machine).
// On SQLite the server keeps its run cache, so that the batch rows read the
// revisions of the same 100 runs and not their rows;
// FLOWSNAP_BENCH_RUN_CACHE=0 measures every batch as a first read.
func BenchmarkLoad(b *testing.B) {
	// Bare SQL is read at the collector's pace and memory limit the server
	// keeps (package gcpace), so that neither side is spared collections
	// the other pays.
	prev := debug.SetGCPercent(100)
	debug.SetGCPercent(prev)
	gcpace.Set(os.Getenv, gcpace.DefaultPercent, false)
	prevLimit := debug.SetMemoryLimit(-1)
	gcpace.Limit(os.Getenv)
	b.Cleanup(func() { debug.SetGCPercent(prev); debug.SetMemoryLimit(prevLimit) })
	for _, d := range storetest.Dialects {
		b.Run(string(d), func(b *testing.B) {
			bs := seededStore(b, d)
			seedHub(b, bs.dsn)
			dsn, app := bs.dsn, ""
			if d == store.Postgres {
				// Names the benchmark's connections, so that only their
				// backends are counted, not those of other clients of the
				// same database.
				app = fmt.Sprintf("flowsnap-load-%d", os.Getpid())
				dsn += "&application_name=" + app
			}
			db := storetest.OpenReader(b, dsn)
			reader := snapshot.NewReader(db)
			pos, err := reader.Position(context.Background())
			if err != nil {
				b.Fatal(err)
			}
			deep := cursor.Encode(cursor.Cursor{Source: pos.Source, Anchor: "hub", Kind: cursor.Children, Ordinal: hubDepth - 1, Last: hubChildID(hubDepth - 1)})
			batch := bs.anchors[:min(100, len(bs.anchors))]
			for len(batch) < 100 {
				batch = append(batch, bs.anchors[len(batch)%len(bs.anchors)])
			}
			runCols := `r.run_id, r.status, r.state_json, r.created_at_ms`
			// The id is bound as flowsnap binds a value compared with an
			// indexed column (store.Dialect.Bound): on an analysed SQLite
			// store a plain $1 has the statement run alone prepared again
			// on every use, which made bare SQL alone cost three times
			// what it does.
			rawOneRun := `SELECT ` + runCols + ` FROM flows_runs r WHERE r.run_id = ` + d.Bound(1)
			rawBatch := `WITH q(id) AS (` + d.TextList(1) + `) SELECT ` + runCols + ` FROM q JOIN flows_runs r ON r.run_id = q.id`
			// The every-field twins read every column an every-field
			// answer shows of each run and its change row, and its
			// parent's status, in one statement: the same rows.
			everyOneRun := `SELECT ` + everyRunCols(d) + ` FROM flows_runs r JOIN flows_run_changes c ON c.run_id = r.run_id
				LEFT JOIN flows_runs p ON p.run_id = r.execution_parent_id WHERE r.run_id = ` + d.Bound(1)
			everyBatch := `WITH q(id) AS (` + d.TextList(1) + `) SELECT ` + everyRunCols(d) + ` FROM q JOIN flows_runs r ON r.run_id = q.id
				JOIN flows_run_changes c ON c.run_id = r.run_id LEFT JOIN flows_runs p ON p.run_id = r.execution_parent_id`
			everyPage := func(page string) string {
				return `SELECT ` + everyRunCols(d) + ` FROM (` + page + `) e JOIN flows_runs r ON r.run_id = e.id
				JOIN flows_run_changes c ON c.run_id = r.run_id LEFT JOIN flows_runs p ON p.run_id = r.execution_parent_id ORDER BY e.ord, e.id`
			}
			everyChildren := func(limit string) string {
				return everyPage(`SELECT seq AS ord, child_id AS id FROM flows_run_parents WHERE parent_id = ` + d.Bound(1) +
					` AND (seq, child_id) > (` + d.Bound(2) + `, ` + d.Bound(3) + `) ORDER BY seq, child_id LIMIT ` + limit)
			}
			everyRounds := everyPage(`SELECT COALESCE(round_ordinal, 0) AS ord, run_id AS id FROM flows_runs WHERE COALESCE(lineage_id, run_id) = ` + d.Bound(1) +
				` ORDER BY COALESCE(round_ordinal, 0), run_id LIMIT 11`)
			shapes := []loadShape{
				{name: "run", query: `query($id: ID!) { run(id: $id) { ... on Run { id status flowName createdAt } } }`,
					vars: func(id string) map[string]any { return map[string]any{"id": id} },
					raw: func(tx store.Tx, id string) error {
						return rawRows(tx, rawOneRun, id)
					},
					alone: func(id string) (string, any) { return rawOneRun, id },
					every: `query($id: ID!) { run(id: $id) { ` + everyRunField + ` } }`,
					everyRaw: func(tx store.Tx, id string) error {
						return rawRowsN(tx, everyRunColumns, everyOneRun, id)
					},
					everyAlone: func(id string) (string, any) { return everyOneRun, id }},
				{name: "batch100", query: `query($ids: [ID!]!) { runs(ids: $ids) { ... on Run { id status flowName createdAt } } }`,
					vars: func(string) map[string]any { return map[string]any{"ids": batch} },
					raw: func(tx store.Tx, _ string) error {
						return rawRows(tx, rawBatch, d.TextListArg(batch))
					},
					alone: func(string) (string, any) { return rawBatch, d.TextListArg(batch) },
					every: `query($ids: [ID!]!) { runs(ids: $ids) { ` + everyRunField + ` } }`,
					everyRaw: func(tx store.Tx, _ string) error {
						return rawRowsN(tx, everyRunColumns, everyBatch, d.TextListArg(batch))
					},
					everyAlone: func(string) (string, any) { return everyBatch, d.TextListArg(batch) }},
				{name: "dashboard", query: dashboardQuery,
					vars: func(id string) map[string]any { return map[string]any{"id": id} },
					raw: func(tx store.Tx, id string) error {
						for _, q := range [][2]string{{rawRun, id}, {rawChildren, id}, {rawRounds, bs.lineage[id]}} {
							if err := rawRows(tx, q[0], q[1]); err != nil {
								return err
							}
						}
						return nil
					},
					every: `query Dashboard($id: ID!) { run(id: $id) { ` +
						everyRunFieldAnd(`children(first: 10) `+everyPageField+` rounds(first: 10) `+everyPageField) + ` } }`,
					everyRaw: func(tx store.Tx, id string) error {
						if err := rawRowsN(tx, everyRunColumns, everyOneRun, id); err != nil {
							return err
						}
						if err := rawRowsN(tx, everyRunColumns, everyChildren("11"), id, int64(-1), ""); err != nil {
							return err
						}
						return rawRowsN(tx, everyRunColumns, everyRounds, bs.lineage[id])
					}},
				{name: "children1000", query: `query($c: String) { run(id: "hub") { ... on Run { children(first: 100, after: $c) {
					edges { cursor node { ... on Run { id status flowName createdAt } } } pageInfo { hasNextPage endCursor } } } } }`,
					vars: func(string) map[string]any { return map[string]any{"c": deep} },
					raw: func(tx store.Tx, _ string) error {
						return rawRows(tx, `SELECT e.seq, `+runCols+` FROM flows_run_parents e JOIN flows_runs r ON r.run_id = e.child_id
							WHERE e.parent_id = $1 AND (e.seq, e.child_id) > ($2, $3) ORDER BY e.seq, e.child_id LIMIT 101`,
							"hub", int64(hubDepth-1), hubChildID(hubDepth-1))
					},
					every: `query($c: String) { run(id: "hub") { ... on Run { children(first: 100, after: $c) ` + everyPageField + ` } } }`,
					everyRaw: func(tx store.Tx, _ string) error {
						if err := rawRowsN(tx, everyRunColumns, everyOneRun, "hub"); err != nil {
							return err
						}
						return rawRowsN(tx, everyRunColumns, everyChildren("101"), "hub", int64(hubDepth-1), hubChildID(hubDepth-1))
					}},
			}
			shapes = append(shapes, loadListShapes(b, d, db, runCols)...)
			shapes = append(shapes, loadJournalShape(b, db, bs.anchors))
			srv := startLoadServer(b, reader, dsn)
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
			for _, s := range shapes {
				// ours is the flowsnap row's CPU per request, server and
				// backends; 0 when that row did not run in this round.
				// every is the flowsnapEveryField row's, for its bare
				// twins' x-flowsnap.
				var ours, every float64
				b.Run(s.name+"/flowsnap", func(b *testing.B) {
					cpu := startCPU(b, db, app)
					served := srv.usage(b)
					measureClients(b, bs, func(id string) error { return postQuery(client, srv.url, s.query, s.vars(id)) })
					ours = cpu.reportServed(b, served, srv.usage(b))
				})
				if s.every != "" {
					b.Run(s.name+"/flowsnapEveryField", func(b *testing.B) {
						cpu := startCPU(b, db, app)
						served := srv.usage(b)
						measureClients(b, bs, func(id string) error { return postQuery(client, srv.url, s.every, s.vars(id)) })
						every = cpu.reportServed(b, served, srv.usage(b))
						if ours > 0 && every > 0 {
							b.ReportMetric(every/ours, "x-fields")
						}
					})
					if srv.rusage != "" {
						// The same ratio from the two queries served in
						// turns, a round of each at a time, so that what
						// the machine does meanwhile weighs on both alike.
						b.Run(s.name+"/fieldsPaired", func(b *testing.B) {
							benchmarked := func(id string) error { return postQuery(client, srv.url, s.query, s.vars(id)) }
							everyField := func(id string) error { return postQuery(client, srv.url, s.every, s.vars(id)) }
							x := pairedCPU(b, bs, db, app, srv, benchmarked, everyField)
							b.ReportMetric(x, "x-fields")
							// How much more the every-field answer writes.
							anchor := bs.anchors[0]
							b.ReportMetric(float64(responseSize(b, client, srv.url, s.every, s.vars(anchor)))/
								float64(responseSize(b, client, srv.url, s.query, s.vars(anchor))), "x-bytes")
						})
					}
					if srv.floor != "" {
						// The same pair of exchanges served by a Go HTTP
						// server that reads no store: how much of x-fields
						// any server pays for writing the larger answer.
						b.Run(s.name+"/floorPaired", func(b *testing.B) {
							anchor := bs.anchors[0]
							floor := func(query string) func(id string) error {
								url := srv.floor + "?n=" + strconv.Itoa(responseSize(b, client, srv.url, query, s.vars(anchor)))
								return func(id string) error { return postQuery(client, url, query, s.vars(id)) }
							}
							b.ReportMetric(pairedCPU(b, bs, db, app, srv, floor(s.query), floor(s.every)), "x-fields")
						})
					}
				}
				if s.noDirect && srv.noDirect != "" {
					b.Run(s.name+"/flowsnapNoDirect", func(b *testing.B) {
						cpu := startCPU(b, db, app)
						served := srv.usage(b)
						measureClients(b, bs, func(id string) error { return postQuery(client, srv.noDirect, s.query, s.vars(id)) })
						executor := cpu.reportServed(b, served, srv.usage(b))
						if ours > 0 && executor > 0 {
							b.ReportMetric(executor/ours, "x-direct")
						}
					})
				}
				if srv.floor != "" {
					b.Run(s.name+"/httpFloor", func(b *testing.B) {
						url := srv.floor + "?n=" + strconv.Itoa(responseSize(b, client, srv.url, s.query, s.vars(bs.anchors[0])))
						cpu := startCPU(b, db, app)
						served := srv.usage(b)
						measureClients(b, bs, func(id string) error { return postQuery(client, url, s.query, s.vars(id)) })
						cpu.reportServed(b, served, srv.usage(b))
					})
				}
				b.Run(s.name+"/rawSQL", func(b *testing.B) {
					cpu := startCPU(b, db, app)
					measureClients(b, bs, func(id string) error { return rawRead(db, func(tx store.Tx) error { return s.raw(tx, id) }) })
					reportRatio(b, ours, cpu.report(b))
				})
				if s.alone != nil {
					b.Run(s.name+"/rawSQLAlone", func(b *testing.B) {
						cpu := startCPU(b, db, app)
						measureClients(b, bs, func(id string) error { return rawAlone(db, s.alone, id, 4) })
						reportRatio(b, ours, cpu.report(b))
					})
				}
				if s.everyRaw != nil {
					b.Run(s.name+"/rawSQLEveryField", func(b *testing.B) {
						cpu := startCPU(b, db, app)
						measureClients(b, bs, func(id string) error { return rawRead(db, func(tx store.Tx) error { return s.everyRaw(tx, id) }) })
						reportRatio(b, every, cpu.report(b))
					})
				}
				if s.everyAlone != nil {
					b.Run(s.name+"/rawSQLEveryFieldAlone", func(b *testing.B) {
						cpu := startCPU(b, db, app)
						measureClients(b, bs, func(id string) error { return rawAlone(db, s.everyAlone, id, everyRunColumns) })
						reportRatio(b, every, cpu.report(b))
					})
				}
			}
		})
	}
}

// floorBodies are the bodies /floor answers, by size.
var floorBodies sync.Map

// loadServerEnv, set to a store's DSN, makes the test binary serve that
// store's GraphQL endpoint instead of running tests (see TestMain).
const loadServerEnv = "FLOWSNAP_LOAD_SERVER"

// TestMain runs the tests, or, started by startLoadServer, serves a store
// over GraphQL in a process of its own.
func TestMain(m *testing.M) {
	if dsn := os.Getenv(loadServerEnv); dsn != "" {
		if err := serveLoad(dsn); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// serveLoad serves dsn's GraphQL endpoint at /graphql and the process's
// CPU time, peak memory and allocations at /rusage, on a loopback port it prints, until
// its standard input closes. FLOWSNAP_BENCH_SERVER_PROFILE names a file
// for a CPU profile of the whole serving, FLOWSNAP_BENCH_SERVER_MEMPROFILE
// one for its allocations.
func serveLoad(dsn string) error {
	ctx := context.Background()
	// As a server does (see serveStore in package main).
	gcpace.Set(os.Getenv, gcpace.DefaultPercent, false)
	gcpace.Limit(os.Getenv)
	db, err := store.Open(ctx, dsn, store.Options{ReadOnly: true})
	if err != nil {
		return err
	}
	defer db.Close()
	if path := os.Getenv("FLOWSNAP_BENCH_SERVER_PROFILE"); path != "" {
		f, err := os.Create(path)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	if path := os.Getenv("FLOWSNAP_BENCH_SERVER_MEMPROFILE"); path != "" {
		// Every allocation, so that the counts are exact.
		runtime.MemProfileRate = 1
		defer func() {
			if f, err := os.Create(path); err == nil {
				_ = pprof.Lookup("allocs").WriteTo(f, 0)
				_ = f.Close()
			}
		}()
	}
	mux := http.NewServeMux()
	mux.Handle("/graphql", endpoint.NewHandler(loadReader(ctx, db), endpoint.Options{}))
	// /graphql-nodirect is the same endpoint with the direct answer off:
	// the flowsnapNoDirect rows.
	mux.Handle("/graphql-nodirect", endpoint.NewHandler(loadReader(ctx, db), endpoint.Options{NoDirect: true}))
	// /floor reads a request and answers n bytes of JSON, and nothing
	// else: the httpFloor rows, what the same exchange costs a Go HTTP
	// server that reads no store and runs no GraphQL.
	mux.HandleFunc("/floor", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		if err != nil || len(body) == 0 {
			http.Error(w, "no body", http.StatusBadRequest)
			return
		}
		// Made once per size and sent with its length, as the endpoint
		// sends an answer: what is left is the exchange alone.
		out, ok := floorBodies.Load(n)
		if !ok {
			const wrap = `{"data":null,"pad":""}`
			out, _ = floorBodies.LoadOrStore(n, append(append([]byte(wrap[:len(wrap)-2]), bytes.Repeat([]byte{'x'}, max(0, n-len(wrap)))...), `"}`...))
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(out.([]byte))))
		_, _ = w.Write(out.([]byte))
	})
	mux.HandleFunc("/rusage", func(w http.ResponseWriter, _ *http.Request) {
		var ru syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		fmt.Fprintf(w, "%d %d %d %d", ru.Utime.Nano()+ru.Stime.Nano(), peakRSS(), ms.Mallocs, ms.TotalAlloc)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	fmt.Println(ln.Addr().String())
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		_ = ln.Close()
	}()
	// As serve serves.
	srv := &http.Server{Handler: mux, ConnContext: endpoint.WithConn}
	if err := srv.Serve(endpoint.CoalescingListener(ln)); !errors.Is(err, net.ErrClosed) {
		return err
	}
	return nil
}

// loadReader is the reader the load server serves db with, watched by a
// revision watcher at the default interval, as serve's is:
// FLOWSNAP_BENCH_RUN_CACHE=0 turns its run cache off, so that every batch
// reads its rows as on its first read.
func loadReader(ctx context.Context, db *store.DB) *snapshot.Reader {
	r := snapshot.NewReader(db)
	if os.Getenv("FLOWSNAP_BENCH_RUN_CACHE") == "0" {
		r.SetRunCache(0)
	}
	w := live.New(r, live.Options{})
	go func() { _ = w.Run(ctx) }()
	select {
	case <-w.Ready():
	case <-time.After(5 * time.Second):
	}
	return r
}

// peakRSS is this process's peak resident memory in KiB (VmHWM), 0 when
// unknown. Not getrusage's ru_maxrss, which a process started by exec
// inherits from the one that started it.
func peakRSS() int64 {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(status)) {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb
		}
	}
	return 0
}

// loadServer is the GraphQL server BenchmarkLoad posts to.
type loadServer struct {
	url string
	// rusage is the child server's /rusage, empty when the server runs
	// in this process.
	rusage string
	// floor is the child server's /floor, empty when the server runs in
	// this process.
	floor string
	// noDirect is the child server's endpoint with the direct answer off,
	// empty when the server runs in this process.
	noDirect string
	client   *http.Client
}

// startLoadServer starts the test binary again as a server of dsn (see
// serveLoad), stopped when b ends; or, with FLOWSNAP_BENCH_INPROCESS=1, serves
// reader from this process.
func startLoadServer(b *testing.B, reader *snapshot.Reader, dsn string) *loadServer {
	if os.Getenv("FLOWSNAP_BENCH_INPROCESS") == "1" {
		ctx, stop := context.WithCancel(context.Background())
		srv := httptest.NewServer(endpoint.NewHandler(loadReader(ctx, reader.DB()), endpoint.Options{}))
		b.Cleanup(func() { srv.Close(); stop() })
		return &loadServer{url: srv.URL}
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$", "-test.bench=^$")
	cmd.Env = append(os.Environ(), loadServerEnv+"="+dsn)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = stdin.Close()
		if err := cmd.Wait(); err != nil {
			b.Errorf("the load server: %v", err)
		}
	})
	addr, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		b.Fatalf("the load server did not start: %v", err)
	}
	addr = strings.TrimSpace(addr)
	return &loadServer{url: "http://" + addr + "/graphql", rusage: "http://" + addr + "/rusage", floor: "http://" + addr + "/floor",
		noDirect: "http://" + addr + "/graphql-nodirect", client: &http.Client{}}
}

// serverUsage is the server process's CPU time in seconds, peak resident
// memory in KiB, and allocations so far (count and bytes).
type serverUsage struct {
	cpu                    float64
	maxRSS, mallocs, bytes int64
	ok                     bool
}

func (s *loadServer) usage(b *testing.B) serverUsage {
	if s.rusage == "" {
		return serverUsage{}
	}
	res, err := s.client.Get(s.rusage)
	if err != nil {
		b.Fatal(err)
	}
	defer res.Body.Close()
	var ns int64
	u := serverUsage{ok: true}
	if _, err := fmt.Fscan(res.Body, &ns, &u.maxRSS, &u.mallocs, &u.bytes); err != nil {
		b.Fatal(err)
	}
	u.cpu = float64(ns) / 1e9
	return u
}

// pairedRounds is how many rounds of each query pairedCPU serves.
const pairedRounds = 10

// pairedCPU serves b.N requests of a and as many of e, from loadClients()
// goroutines, in pairedRounds rounds of each taken in turns, and returns
// the CPU per request of e ÷ that of a, the server's and its backends'.
// The two rounds of a turn ask for the same runs: anchors differ in how
// many children and rounds they have, and a turn's ratio would otherwise
// be as much theirs as the selections'.
func pairedCPU(b *testing.B, bs *benchStore, db *store.DB, app string, srv *loadServer, a, e func(id string) error) float64 {
	var spent [2]float64
	serve := func(op func(id string) error, from, n int) float64 {
		cpu := startCPU(b, db, app)
		before := srv.usage(b)
		var left atomic.Int64
		left.Store(int64(n))
		var wg sync.WaitGroup
		for range loadClients() {
			wg.Go(func() {
				for {
					i := left.Add(-1)
					if i < 0 {
						return
					}
					if err := op(bs.anchors[(from+int(i))%len(bs.anchors)]); err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		after := srv.usage(b)
		backends, _ := cpu.backendSeconds()
		return after.cpu - before.cpu + backends
	}
	b.ResetTimer()
	from := 0
	for r := range pairedRounds {
		n := b.N / pairedRounds
		if r < b.N%pairedRounds {
			n++
		}
		// Whichever goes second finds the runs the first read in the
		// caches: each goes first in every other turn.
		if r%2 == 0 {
			spent[0] += serve(a, from, n)
			spent[1] += serve(e, from, n)
		} else {
			spent[1] += serve(e, from, n)
			spent[0] += serve(a, from, n)
		}
		from += n
	}
	b.StopTimer()
	if spent[0] <= 0 {
		return 0
	}
	// Each side's CPU per request, server and backends, beside the ratio.
	b.ReportMetric(spent[0]*1e6/float64(b.N), "a-cpu-µs/req")
	b.ReportMetric(spent[1]*1e6/float64(b.N), "e-cpu-µs/req")
	return spent[1] / spent[0]
}

// measureClients runs op from loadClients() goroutines at once.
func measureClients(b *testing.B, bs *benchStore, op func(id string) error) {
	b.SetParallelism(max(1, loadClients()/runtime.GOMAXPROCS(0)))
	measure(b, bs, op)
}

func postQuery(client *http.Client, url, query string, vars map[string]any) error {
	buf := answerBuffers.Get().(*bytes.Buffer)
	defer answerBuffers.Put(buf)
	return postInto(client, url, query, vars, buf)
}

// answerBuffers hold the answers postQuery reads. The client shares the
// machine's cores with the server it measures: read into a fresh slice
// grown from 512 bytes, a page of every field's answer cost the client
// twice the CPU the benchmarked one did, much of it in the kernel.
var answerBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// postAnswer posts a query and returns its answer, which must be a 200
// without errors.
func postAnswer(client *http.Client, url, query string, vars map[string]any) ([]byte, error) {
	var buf bytes.Buffer
	err := postInto(client, url, query, vars, &buf)
	return buf.Bytes(), err
}

// quotedQueries are the queries posted, each as a JSON string: quoting a
// long query, its new lines escaped, on every request cost the client more
// than the rest of the request.
var quotedQueries sync.Map

// postInto posts a query and reads its answer, which must be a 200 without
// errors, into buf.
func postInto(client *http.Client, url, query string, vars map[string]any, buf *bytes.Buffer) error {
	quoted, ok := quotedQueries.Load(query)
	if !ok {
		q, _ := json.Marshal(query)
		quoted, _ = quotedQueries.LoadOrStore(query, q)
	}
	body := append(append([]byte(`{"query":`), quoted.([]byte)...), `,"variables":`...)
	v, _ := json.Marshal(vars)
	body = append(append(body, v...), '}')
	res, err := client.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		return err
	}
	defer res.Body.Close()
	buf.Reset()
	if _, err := buf.ReadFrom(res.Body); err != nil {
		return err
	}
	if raw := buf.Bytes(); res.StatusCode != 200 || bytes.Contains(raw, []byte(`"errors"`)) {
		return fmt.Errorf("status %d: %s", res.StatusCode, raw)
	}
	return nil
}

// responseSize is the size of flowsnap's answer to query, which must
// succeed.
func responseSize(b *testing.B, client *http.Client, url, query string, vars map[string]any) int {
	raw, err := postAnswer(client, url, query, vars)
	if err != nil {
		b.Fatal(err)
	}
	return len(raw)
}

// rawRead runs fn in a read transaction as flowsnap opens one, after
// reading the position.
func rawRead(db *store.DB, fn func(tx store.Tx) error) error {
	ctx := context.Background()
	tx, err := db.BeginRead(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	var src string
	var rev int64
	if err := tx.QueryRow(ctx, `SELECT source, revision FROM flows_run_source WHERE singleton = 1`).Scan(&src, &rev); err != nil {
		return err
	}
	return fn(tx)
}

// rawAlone runs sql as one statement of its own, outside a transaction,
// with the position read in it, and scans every column of every row, n of
// them, into plain values.
func rawAlone(db *store.DB, statement func(id string) (string, any), id string, n int) error {
	sql, arg := statement(id)
	var src string
	var rev int64
	rows, err := db.ReadAlone(context.Background(), `SELECT source, revision FROM flows_run_source WHERE singleton = 1`, []any{&src, &rev}, sql, arg)
	if err != nil {
		return err
	}
	return scanRows(rows, n)
}

// scanRows scans every column of every row of rows, n of them, into plain
// values, and closes rows.
func scanRows(rows store.Rows, n int) error {
	defer rows.Close()
	vals := make([]any, n)
	dest := make([]any, n)
	for i := range vals {
		dest[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return err
		}
	}
	return rows.Err()
}

// rawRows runs one query and scans every column of every row into plain
// values.
func rawRows(tx store.Tx, sql string, args ...any) error {
	// The columns between the statement's last SELECT and its FROM.
	cols := sql[strings.LastIndex(sql, "SELECT ")+len("SELECT "):]
	n := strings.Count(cols[:strings.Index(cols, " FROM ")], ",") + 1
	rows, err := tx.Query(context.Background(), sql, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	var vals [16]any
	var dest [16]any
	for i := range vals {
		dest[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(dest[:n]...); err != nil {
			return err
		}
	}
	return rows.Err()
}

// everyRunColumns is how many columns everyRunCols reads.
const everyRunColumns = 27

// everyRunCols are the columns an every-field answer shows of a run r, its
// change row c and its parent p, in dialect d: every column of r that a
// field of Run reads (the waiting token's digest where PostgreSQL keeps
// it), c's revision and tombstone, and p's status (its id is r's
// execution_parent_id).
func everyRunCols(d store.Dialect) string {
	token := "r.waiting_token"
	if d == store.Postgres {
		token = "r.waiting_token_digest"
	}
	return `r.run_id, c.revision, c.deleted, r.status, r.created_at_ms, r.started_at_ms, r.finished_at_ms,
	r.owner_host_id, r.owner_pid, r.owner_nonce, r.heartbeat_at_ms, r.claim_host_id, r.claim_pid, r.claim_nonce, r.claimed_at_ms,
	r.state_json, r.parent_run_id, r.execution_parent_id, r.lineage_id, r.round_ordinal,
	r.cancel_requested_at_ms, r.cancel_acknowledgement_json, r.waiting_reason, r.waiting_wake_at_ms, ` + token + `, r.waiting_request,
	p.status`
}

// rawRowsN runs one query of n columns and scans every column of every
// row into plain values.
func rawRowsN(tx store.Tx, n int, sql string, args ...any) error {
	rows, err := tx.Query(context.Background(), sql, args...)
	if err != nil {
		return err
	}
	return scanRows(rows, n)
}

func hubChildID(i int) string { return fmt.Sprintf("hub-child-%05d", i) }

// seedHub adds a run "hub" with hubChildren children.
func seedHub(b *testing.B, dsn string) {
	ctx := context.Background()
	db, err := store.Open(ctx, dsn, store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	w := engine.NewWriter(db, func() int64 { return 1_700_000_000_000 })
	err = w.Do(ctx, func(tx *engine.Tx) error {
		if err := tx.CreateRun(ctx, engine.NewRun{ID: "hub", FlowName: "fan-out"}); err != nil {
			return err
		}
		for i := range hubChildren {
			if err := tx.CreateRun(ctx, engine.NewRun{ID: hubChildID(i), FlowName: "leaf",
				Parents: []engine.ParentEdge{{ParentID: "hub", Seq: int64(i)}}}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
}

// cpuMeter counts the CPU this process and the store's backends spend.
type cpuMeter struct {
	db         *store.DB
	app        string
	self       float64
	backends   map[int]float64
	canBackend bool
}

// startCPU starts counting; on PostgreSQL the backends counted are those
// of the connections named app.
func startCPU(b *testing.B, db *store.DB, app string) *cpuMeter {
	m := &cpuMeter{db: db, app: app, self: selfCPU()}
	if db.Dialect() == store.Postgres {
		m.backends, m.canBackend = backendCPU(db, app)
	}
	return m
}

// reportServed reports the CPU of a GraphQL row: with a server process
// of its own, its CPU between before and after as cpu-µs/req and this
// process's (the client's) as client-µs/req. It returns the CPU per
// request that reading the store cost, the server's and its backends'; 0
// when the server runs in this process, whose CPU then counts the client
// too.
func (m *cpuMeter) reportServed(b *testing.B, before, after serverUsage) float64 {
	if b.N == 0 || !after.ok {
		m.report(b)
		return 0
	}
	served := (after.cpu - before.cpu) * 1e6 / float64(b.N)
	b.ReportMetric(served, "cpu-µs/req")
	b.ReportMetric((selfCPU()-m.self)*1e6/float64(b.N), "client-µs/req")
	b.ReportMetric(float64(after.maxRSS)/1024, "srv-maxrss-MiB")
	b.ReportMetric(float64(after.mallocs-before.mallocs)/float64(b.N), "srv-allocs/req")
	b.ReportMetric(float64(after.bytes-before.bytes)/float64(b.N), "srv-B/req")
	return served + m.reportBackends(b)
}

// report reports this process's CPU per request and its backends', and
// returns their sum.
func (m *cpuMeter) report(b *testing.B) float64 {
	if b.N == 0 {
		return 0
	}
	self := (selfCPU() - m.self) * 1e6 / float64(b.N)
	b.ReportMetric(self, "cpu-µs/req")
	return self + m.reportBackends(b)
}

// reportBackends reports the backends' CPU per request and returns it; 0
// when they cannot be read.
func (m *cpuMeter) reportBackends(b *testing.B) float64 {
	spent, ok := m.backendSeconds()
	if !ok {
		return 0
	}
	spent = spent * 1e6 / float64(b.N)
	b.ReportMetric(spent, "pg-µs/req")
	return spent
}

// backendSeconds is the CPU the backends spent since the meter started, in
// seconds; false when they cannot be read.
func (m *cpuMeter) backendSeconds() (float64, bool) {
	if !m.canBackend {
		return 0, false
	}
	after, ok := backendCPU(m.db, m.app)
	if !ok {
		return 0, false
	}
	spent := 0.0
	for pid, t := range after {
		spent += t - m.backends[pid]
	}
	return spent, true
}

// reportRatio reports, on a bare SQL row, how many times its CPU per
// request the flowsnap row of the same shape and round spent (x-flowsnap):
// the ratio the targets are set in. Nothing when that row did not run.
func reportRatio(b *testing.B, ours, bare float64) {
	if ours > 0 && bare > 0 {
		b.ReportMetric(ours/bare, "x-flowsnap")
	}
}

// selfCPU is this process's user and system CPU time, in seconds.
func selfCPU() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

// procCPU is the CPU time of process pid, in seconds: the nanoseconds it
// ran on a CPU (the first field of /proc/PID/schedstat), or, where the
// kernel keeps no such count, its user and system time in clock ticks (100
// a second on Linux). Read in ticks, each backend's time is cut to 10 ms
// at both ends of a round, an error that several backends add up to as
// much as a round of a few hundred requests costs them in all.
func procCPU(pid int) (float64, bool) {
	if sched, err := os.ReadFile(fmt.Sprintf("/proc/%d/schedstat", pid)); err == nil {
		if f := strings.Fields(string(sched)); len(f) > 0 {
			if ns, err := strconv.ParseInt(f[0], 10, 64); err == nil {
				return float64(ns) / 1e9, true
			}
		}
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	// The fields after the parenthesised command: utime and stime are the
	// 12th and 13th.
	fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	if len(fields) < 13 {
		return 0, false
	}
	u, _ := strconv.ParseFloat(fields[11], 64)
	s, _ := strconv.ParseFloat(fields[12], 64)
	return (u + s) / 100, true
}

// backendCPU is the CPU time, in seconds, of every backend of the
// connections named app, read from /proc: false when the server is not on
// this machine.
func backendCPU(db *store.DB, app string) (map[int]float64, bool) {
	rows, err := db.Pool().Query(context.Background(), `SELECT pid FROM pg_stat_activity WHERE application_name = $1`, app)
	if err != nil {
		return nil, false
	}
	var pids []int
	for rows.Next() {
		var pid int
		if rows.Scan(&pid) == nil {
			pids = append(pids, pid)
		}
	}
	rows.Close()
	out := map[int]float64{}
	for _, pid := range pids {
		t, ok := procCPU(pid)
		if !ok {
			return nil, false
		}
		out[pid] = t
	}
	return out, true
}
