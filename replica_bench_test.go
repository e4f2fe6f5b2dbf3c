package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flowsnap/flowsnap/endpoint"
	"github.com/flowsnap/flowsnap/engine"
	"github.com/flowsnap/flowsnap/snapshot"
	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/pgreplica"
	"github.com/flowsnap/flowsnap/store/storetest"
)

// replicaBenchQuery is dashboard-shaped: a run with a page of its children
// and of its rounds.
const replicaBenchQuery = `query($id: ID!) { run(id: $id) { ... on Run {
  id status flowName createdAt revision lineageId roundOrdinal owner { hostId } waiting { kind reason }
  children(first: 10) { edges { cursor node { ... on Run { id status flowName } } } pageInfo { hasNextPage } }
  rounds(first: 10) { edges { cursor node { ... on Run { id status roundOrdinal } } } pageInfo { hasNextPage } }
} } }`

// BenchmarkReplicaReads serves the dashboard query with reads on the
// primary and with reads on its streaming standby, while the engine's
// simulator writes to the primary as fast as it can. Besides ns/op (one
// read) it reports the engine's write throughput during the reads
// (revisions/s): reads on the standby should leave it untouched.
// FLOWSNAP_BENCH_RUNS sets the seeded store's size (default 5,000).
func BenchmarkReplicaReads(b *testing.B) {
	runs := 5_000
	if n, err := strconv.Atoi(os.Getenv("FLOWSNAP_BENCH_RUNS")); err == nil && n > 0 {
		runs = n
	}
	r := newReplicatedBench(b, runs)
	ids := r.anchors(b)
	for _, where := range []string{"primary", "standby"} {
		b.Run("reads="+where, func(b *testing.B) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			primary, err := store.Open(ctx, r.primary, store.Options{ReadOnly: true, MaxReaders: 8})
			if err != nil {
				b.Fatal(err)
			}
			defer primary.Close()
			reader := snapshot.NewReader(primary)
			if where == "standby" {
				standby, err := store.Open(ctx, r.standby, store.Options{ReadOnly: true, MaxReaders: 8})
				if err != nil {
					b.Fatal(err)
				}
				defer standby.Close()
				if err := reader.UseReplicas(ctx, []*store.DB{standby}, snapshot.ReplicaOptions{StaleFromPrimary: true}); err != nil {
					b.Fatal(err)
				}
				go reader.WatchReplicas(ctx)
			}
			h := endpoint.NewHandler(reader, endpoint.Options{})
			// The engine writes while the reads run.
			simCtx, stopSim := context.WithCancel(ctx)
			simDone := make(chan error, 1)
			go func() { simDone <- engine.Simulate(simCtx, r.db, engine.SimOptions{Rate: 100_000, Seed: 7}) }()
			before := revisionOf(b, r.db)
			start := time.Now()
			var next atomic.Int64
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					id := ids[int(next.Add(1))%len(ids)]
					body, _ := json.Marshal(map[string]any{"query": replicaBenchQuery, "variables": map[string]any{"id": id}})
					req := httptest.NewRequest(http.MethodPost, "/graphql", strings.NewReader(string(body)))
					req.Header.Set("Content-Type", "application/json")
					rec := httptest.NewRecorder()
					h.ServeHTTP(rec, req)
					if rec.Code != http.StatusOK || strings.Contains(rec.Body.String(), `"errors"`) {
						b.Errorf("read failed: %d %.300s", rec.Code, rec.Body.String())
						return
					}
				}
			})
			b.StopTimer()
			elapsed := time.Since(start)
			writes := revisionOf(b, r.db) - before
			stopSim()
			<-simDone
			b.ReportMetric(float64(writes)/elapsed.Seconds(), "revisions/s")
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "reads/s")
		})
	}
}

type benchReplicated struct {
	primary, standby string
	db               *store.DB
}

func newReplicatedBench(b *testing.B, runs int) *benchReplicated {
	b.Helper()
	pair := pgreplica.Shared(b)
	name := pair.NewDatabase(b)
	r := &benchReplicated{primary: pair.PrimaryDSN(name), standby: pair.StandbyDSN(name)}
	r.db = storetest.OpenDSN(b, r.primary, true)
	ctx := context.Background()
	if _, err := engine.Seed(ctx, r.db, engine.SeedOptions{Runs: runs, Seed: 1}); err != nil {
		b.Fatal(err)
	}
	if err := pair.WaitCaughtUp(ctx); err != nil {
		b.Fatal(err)
	}
	return r
}

// anchors are the dashboard's subjects: runs with the most children.
func (r *benchReplicated) anchors(b *testing.B) []string {
	ctx := context.Background()
	tx, err := r.db.BeginRead(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	rows, err := tx.Query(ctx, `SELECT parent_id FROM flows_run_parents GROUP BY parent_id ORDER BY count(*) DESC, parent_id LIMIT 100`)
	if err != nil {
		b.Fatal(err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			b.Fatal(err)
		}
		ids = append(ids, id)
	}
	if len(ids) == 0 {
		b.Fatal("the seeded store has no parents")
	}
	return ids
}

// revisionOf reads db's revision.
func revisionOf(b testing.TB, db *store.DB) int64 {
	b.Helper()
	ctx := context.Background()
	tx, err := db.BeginRead(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	var rev int64
	if err := tx.QueryRow(ctx, `SELECT revision FROM flows_run_source`).Scan(&rev); err != nil {
		b.Fatal(err)
	}
	return rev
}
