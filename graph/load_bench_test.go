package graph_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/flowsnap/flowsnap/cursor"
	"github.com/flowsnap/flowsnap/engine"
	"github.com/flowsnap/flowsnap/graph"
	"github.com/flowsnap/flowsnap/snapshot"
	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/storetest"
)

// loadClients is how many clients BenchmarkLoad runs at once;
// FLOWSNAP_BENCH_CLIENTS overrides it.
func loadClients() int {
	if n, err := strconv.Atoi(os.Getenv("FLOWSNAP_BENCH_CLIENTS")); err == nil && n > 0 {
		return n
	}
	return 16
}

// A shape of request, over GraphQL and by bare SQL reading the same rows
// in the same kind of read transaction.
type loadShape struct {
	name  string
	query string
	vars  func(id string) map[string]any
	raw   func(tx store.Tx, id string) error
}

const (
	hubChildren = 1100
	hubDepth    = 1000
)

// BenchmarkLoad serves four shapes of request over HTTP at once from
// loadClients() clients — one run, a batch of 100 runs, the dashboard query
// and a page of 100 children 1,000 deep — each beside bare SQL reading the
// same rows in the same kind of read transaction. Besides req/s and
// latency it reports CPU per request: cpu-µs/req of this process (server,
// and for the GraphQL rows also the HTTP client; see httpFloor for that
// part), and on PostgreSQL pg-µs/req, the CPU its backends spent (from
// /proc of the backend pids pg_stat_activity lists, when the server is on
// this machine).
func BenchmarkLoad(b *testing.B) {
	for _, d := range storetest.Dialects {
		b.Run(string(d), func(b *testing.B) {
			bs := seededStore(b, d)
			seedHub(b, bs.dsn)
			db := storetest.OpenReader(b, bs.dsn)
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
			shapes := []loadShape{
				{name: "run", query: `query($id: ID!) { run(id: $id) { ... on Run { id status flowName createdAt } } }`,
					vars: func(id string) map[string]any { return map[string]any{"id": id} },
					raw: func(tx store.Tx, id string) error {
						return rawRows(tx, `SELECT `+runCols+` FROM flows_runs r WHERE r.run_id = $1`, id)
					}},
				{name: "batch100", query: `query($ids: [ID!]!) { runs(ids: $ids) { ... on Run { id status flowName createdAt } } }`,
					vars: func(string) map[string]any { return map[string]any{"ids": batch} },
					raw: func(tx store.Tx, _ string) error {
						return rawRows(tx, `WITH q(id) AS (`+d.TextList(1)+`) SELECT `+runCols+` FROM q JOIN flows_runs r ON r.run_id = q.id`, d.TextListArg(batch))
					}},
				{name: "dashboard", query: dashboardQuery,
					vars: func(id string) map[string]any { return map[string]any{"id": id} },
					raw: func(tx store.Tx, id string) error {
						for _, q := range [][2]string{{rawRun, id}, {rawChildren, id}, {rawRounds, bs.lineage[id]}} {
							if err := rawRows(tx, q[0], q[1]); err != nil {
								return err
							}
						}
						return nil
					}},
				{name: "children1000", query: `query($c: String) { run(id: "hub") { ... on Run { children(first: 100, after: $c) {
					edges { cursor node { ... on Run { id status flowName createdAt } } } pageInfo { hasNextPage endCursor } } } } }`,
					vars: func(string) map[string]any { return map[string]any{"c": deep} },
					raw: func(tx store.Tx, _ string) error {
						return rawRows(tx, `SELECT e.seq, `+runCols+` FROM flows_run_parents e JOIN flows_runs r ON r.run_id = e.child_id
							WHERE e.parent_id = $1 AND (e.seq, e.child_id) > ($2, $3) ORDER BY e.seq, e.child_id LIMIT 101`,
							"hub", int64(hubDepth-1), hubChildID(hubDepth-1))
					}},
			}
			srv := httptest.NewServer(graph.NewHandler(reader, graph.Options{}))
			defer srv.Close()
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
			for _, s := range shapes {
				b.Run(s.name+"/flowsnap", func(b *testing.B) {
					cpu := startCPU(b, db)
					measureClients(b, bs, func(id string) error { return postQuery(client, srv.URL, s.query, s.vars(id)) })
					cpu.report(b)
				})
				b.Run(s.name+"/rawSQL", func(b *testing.B) {
					cpu := startCPU(b, db)
					measureClients(b, bs, func(id string) error { return rawRead(db, func(tx store.Tx) error { return s.raw(tx, id) }) })
					cpu.report(b)
				})
			}
		})
	}
}

// measureClients runs op from loadClients() goroutines at once.
func measureClients(b *testing.B, bs *benchStore, op func(id string) error) {
	b.SetParallelism(max(1, loadClients()/runtime.GOMAXPROCS(0)))
	measure(b, bs, op)
}

func postQuery(client *http.Client, url, query string, vars map[string]any) error {
	body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	res, err := client.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		return err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		return err
	}
	if res.StatusCode != 200 || bytes.Contains(raw, []byte(`"errors"`)) {
		return fmt.Errorf("status %d: %s", res.StatusCode, raw)
	}
	return nil
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
	self       float64
	backends   map[int]float64
	canBackend bool
}

func startCPU(b *testing.B, db *store.DB) *cpuMeter {
	m := &cpuMeter{db: db, self: selfCPU()}
	if db.Dialect() == store.Postgres {
		m.backends, m.canBackend = backendCPU(db)
	}
	return m
}

func (m *cpuMeter) report(b *testing.B) {
	if b.N == 0 {
		return
	}
	b.ReportMetric((selfCPU()-m.self)*1e6/float64(b.N), "cpu-µs/req")
	if !m.canBackend {
		return
	}
	after, ok := backendCPU(m.db)
	if !ok {
		return
	}
	spent := 0.0
	for pid, t := range after {
		spent += t - m.backends[pid]
	}
	b.ReportMetric(spent*1e6/float64(b.N), "pg-µs/req")
}

// selfCPU is this process's user and system CPU time, in seconds.
func selfCPU() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

// backendCPU is the CPU time, in seconds, of every backend of the store's
// database, read from /proc: false when the server is not on this machine.
func backendCPU(db *store.DB) (map[int]float64, bool) {
	rows, err := db.Pool().Query(context.Background(), `SELECT pid FROM pg_stat_activity WHERE datname = current_database()`)
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
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return nil, false
		}
		// The fields after the parenthesised command: utime and stime
		// are the 12th and 13th, in clock ticks (100 a second on Linux).
		fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(fields) < 13 {
			return nil, false
		}
		u, _ := strconv.ParseFloat(fields[11], 64)
		s, _ := strconv.ParseFloat(fields[12], 64)
		out[pid] = (u + s) / 100
	}
	return out, true
}
