package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/flowsnap/flowsnap/engine"
	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/storetest"
	"github.com/flowsnap/flowsnap/telemetry"
)

// BenchmarkTracing serves one dashboard-like query over HTTP on a seeded
// SQLite store, with tracing off (no OTEL_* variables: nothing is
// instrumented) and on (every span recorded and handed to an exporter
// that drops them), so that the difference is what tracing costs an
// operation.
func BenchmarkTracing(b *testing.B) {
	dsn := storetest.DSN(b, store.SQLite)
	db := storetest.OpenDSN(b, dsn, true)
	if _, err := engine.Seed(context.Background(), db, engine.SeedOptions{Runs: 2000, Seed: 1}); err != nil {
		b.Fatal(err)
	}
	var ids []string
	tx, err := db.BeginRead(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	rows, err := tx.Query(context.Background(), `SELECT run_id FROM flows_runs ORDER BY created_at_ms DESC, run_id LIMIT 20`)
	if err != nil {
		b.Fatal(err)
	}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			b.Fatal(err)
		}
		ids = append(ids, fmt.Sprintf("%q", id))
	}
	rows.Close()
	_ = tx.Rollback(context.Background())
	body := fmt.Sprintf(`{"query":"query Dash { runs(ids: [%s]) { __typename ... on Run { id status flowName children(first: 5) { edges { node { __typename ... on Run { id status } } } } } } listRuns(first: 20) { edges { node { __typename ... on Run { id status } } } } }"}`,
		strings.ReplaceAll(strings.Join(ids, ","), `"`, `\"`))
	for _, c := range []struct {
		name    string
		tracing *telemetry.Tracing
	}{
		{"off", &telemetry.Tracing{}},
		{"on", telemetry.ForTest(sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter())))},
	} {
		b.Run(c.name, func(b *testing.B) {
			url := "http://" + serveInProcess(b, dsn, serveOptions{stdout: io.Discard, tracing: c.tracing}) + "/graphql"
			for b.Loop() {
				res, err := http.Post(url, "application/json", strings.NewReader(body))
				if err != nil {
					b.Fatal(err)
				}
				answer, _ := io.ReadAll(res.Body)
				res.Body.Close()
				if res.StatusCode != 200 || !strings.Contains(string(answer), `"listRuns"`) || strings.Contains(string(answer), `"errors"`) {
					b.Fatalf("status %d: %.300s", res.StatusCode, answer)
				}
			}
		})
	}
}
