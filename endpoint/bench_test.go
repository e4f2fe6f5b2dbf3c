package endpoint_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flowsnap/flowsnap/endpoint"
	"github.com/flowsnap/flowsnap/engine"
	"github.com/flowsnap/flowsnap/snapshot"
	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/storetest"
)

// envInt is the positive number the environment variable name holds, or
// def.
func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

// benchRuns is the size of the store the dashboard benchmark reads;
// FLOWSNAP_BENCH_RUNS overrides it.
func benchRuns() int {
	return envInt("FLOWSNAP_BENCH_RUNS", 100_000)
}

const dashboardQuery = `query Dashboard($id: ID!) { run(id: $id) { ... on Run {
  id status flowName createdAt startedAt finishedAt revision lineageId roundOrdinal
  owner { hostId pid nonce } heartbeatAt waiting { kind reason wakeAt tokenDigest }
  children(first: 10) { edges { cursor ordinal node { ... on Run { id status flowName createdAt } } } pageInfo { hasNextPage endCursor } }
  rounds(first: 10) { edges { cursor ordinal node { ... on Run { id status roundOrdinal createdAt } } } pageInfo { hasNextPage endCursor } }
} } }`

// The same rows by bare SQL: the run, ten children and ten rounds.
const (
	rawRun      = `SELECT run_id, status, state_json, created_at_ms, started_at_ms, finished_at_ms, owner_host_id, owner_pid, owner_nonce, heartbeat_at_ms, lineage_id, round_ordinal, waiting_reason, waiting_wake_at_ms, waiting_token FROM flows_runs WHERE run_id = $1`
	rawChildren = `SELECT e.seq, r.run_id, r.status, r.state_json, r.created_at_ms FROM flows_run_parents e JOIN flows_runs r ON r.run_id = e.child_id WHERE e.parent_id = $1 ORDER BY e.seq, e.child_id LIMIT 11`
	rawRounds   = `SELECT r.run_id, r.status, r.round_ordinal, r.created_at_ms FROM flows_runs r WHERE COALESCE(r.lineage_id, r.run_id) = $1 ORDER BY COALESCE(r.round_ordinal, 0), r.run_id LIMIT 11`
)

type benchStore struct {
	dsn     string
	anchors []string // runs with children or rounds, the dashboard's subjects
	lineage map[string]string
}

// BenchmarkDashboard serves a dashboard-shaped query (a run with its
// children page and rounds page) over HTTP from a seeded store, beside the
// same rows read by bare SQL in the same kind of read transaction. Compare
// the sub-benchmarks' ns/op, p50 and p99 for the ratio.
func BenchmarkDashboard(b *testing.B) {
	for _, d := range storetest.Dialects {
		b.Run(string(d), func(b *testing.B) {
			bs := seededStore(b, d)
			reader := snapshot.NewReader(storetest.OpenReader(b, bs.dsn))
			b.Run("flowsnap", func(b *testing.B) {
				srv := httptest.NewServer(endpoint.NewHandler(reader, endpoint.Options{}))
				defer srv.Close()
				client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
				measure(b, bs, dashboardRequest(client, srv.URL))
			})
			// The fixed cost of an HTTP request through the GraphQL
			// handler that reads nothing: what the dashboard pays before
			// its first statement.
			b.Run("httpFloor", func(b *testing.B) {
				srv := httptest.NewServer(endpoint.NewHandler(reader, endpoint.Options{}))
				defer srv.Close()
				client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
				measure(b, bs, func(string) error {
					res, err := client.Post(srv.URL, "application/json", strings.NewReader(`{"query":"{ __typename }"}`))
					if err != nil {
						return err
					}
					_, err = io.Copy(io.Discard, res.Body)
					res.Body.Close()
					return err
				})
			})
			b.Run("rawSQL", func(b *testing.B) {
				db := reader.DB()
				measure(b, bs, func(id string) error { return rawDashboard(db, id, bs.lineage[id]) })
			})
		})
	}
}

// dashboardRequest returns a function that posts the dashboard query for a
// run to url and fails unless it is answered without errors.
func dashboardRequest(client *http.Client, url string) func(id string) error {
	return func(id string) error {
		return postQuery(client, url, dashboardQuery, map[string]any{"id": id})
	}
}

// measure runs op in parallel over the anchors and reports requests per
// second and latency percentiles.
func measure(b *testing.B, bs *benchStore, op func(id string) error) {
	b.ReportAllocs()
	var mu sync.Mutex
	var lat []time.Duration
	var next int64
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		var mine []time.Duration
		for pb.Next() {
			mu.Lock()
			id := bs.anchors[next%int64(len(bs.anchors))]
			next++
			mu.Unlock()
			t0 := time.Now()
			if err := op(id); err != nil {
				b.Error(err)
				return
			}
			mine = append(mine, time.Since(t0))
		}
		mu.Lock()
		lat = append(lat, mine...)
		mu.Unlock()
	})
	elapsed := time.Since(start)
	b.StopTimer()
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	b.ReportMetric(float64(len(lat))/elapsed.Seconds(), "req/s")
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}

func rawDashboard(db *store.DB, id, lineage string) error {
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
	for _, q := range []struct {
		sql string
		arg string
	}{{rawRun, id}, {rawChildren, id}, {rawRounds, lineage}} {
		rows, err := tx.Query(ctx, q.sql, q.arg)
		if err != nil {
			return err
		}
		for rows.Next() {
			vals := make([]any, 15)
			dest := make([]any, 15)
			for i := range vals {
				dest[i] = &vals[i]
			}
			n := map[string]int{rawRun: 15, rawChildren: 5, rawRounds: 4}[q.sql]
			if err := rows.Scan(dest[:n]...); err != nil {
				rows.Close()
				return err
			}
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// seededStore seeds a store of benchRuns() runs and picks
// the dashboard's subjects: runs with the most children and runs of the
// longest lineages.
func seededStore(b *testing.B, d store.Dialect) *benchStore {
	dsn := storetest.DSN(b, d)
	db, err := store.Open(context.Background(), dsn, store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	if _, _, err := db.Migrate(ctx); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	if _, err := engine.Seed(ctx, db, engine.SeedOptions{Runs: benchRuns(), Seed: 1}); err != nil {
		b.Fatal(err)
	}
	b.Logf("%s: seeded %d runs in %s", d, benchRuns(), time.Since(start).Round(time.Millisecond))
	// A store in service is vacuumed and analysed as it goes; one seeded a
	// moment ago holds every superseded version of its change rows, which
	// the lookups by run id would wade through.
	if d == store.Postgres {
		_, err = db.Pool().Exec(ctx, "VACUUM ANALYZE")
		if err == nil {
			// The seeding's WAL is written out now, not by a checkpoint
			// in the middle of the rows measured.
			if _, cerr := db.Pool().Exec(ctx, "CHECKPOINT"); cerr != nil {
				b.Logf("no checkpoint after seeding: %v", cerr)
			}
		}
	} else {
		err = db.Write(ctx, func(tx store.Tx) error { _, err := tx.Exec(ctx, "ANALYZE"); return err })
	}
	if err != nil {
		b.Fatal(err)
	}
	bs := &benchStore{dsn: dsn, lineage: map[string]string{}}
	tx, err := db.BeginRead(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	rows, err := tx.Query(ctx, `SELECT r.run_id, COALESCE(r.lineage_id, r.run_id) FROM flows_runs r
			WHERE r.run_id IN (SELECT parent_id FROM flows_run_parents GROUP BY parent_id ORDER BY count(*) DESC, parent_id LIMIT 50)
			   OR r.run_id IN (SELECT lineage_id FROM flows_runs WHERE lineage_id IS NOT NULL GROUP BY lineage_id ORDER BY count(*) DESC, lineage_id LIMIT 50)
			ORDER BY r.run_id`)
	if err != nil {
		b.Fatal(err)
	}
	for rows.Next() {
		var id, lineage string
		if err := rows.Scan(&id, &lineage); err != nil {
			b.Fatal(err)
		}
		bs.anchors = append(bs.anchors, id)
		bs.lineage[id] = lineage
	}
	rows.Close()
	if len(bs.anchors) == 0 {
		b.Fatal("the seeded store has no parents or lineages")
	}
	return bs
}
