package endpoint_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/flowsnap/flowsnap/endpoint"
	"github.com/flowsnap/flowsnap/engine"
	"github.com/flowsnap/flowsnap/live"
	"github.com/flowsnap/flowsnap/snapshot"
	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/storetest"
)

// soakRequests is how many requests of each shape the soak serves:
// FLOWSNAP_SOAK_REQUESTS, or a number the suite can afford. A cache keyed by
// something a request rebuilds grows by at least an entry per request, which
// this many requests make visible; 100000 is the full soak.
func soakRequests() int { return envInt("FLOWSNAP_SOAK_REQUESTS", 1000) }

// soakGrowth is how much the live heap may grow over the whole soak: the
// caches filling to their bounds, and the allocator's noise.
const soakGrowth = 8 << 20

// soakShape is one kind of request: a body to post (vars called with the
// request's number), or a subscription opened, answered once and closed.
type soakShape struct {
	name  string
	query string
	vars  func(i int) map[string]any
	sse   bool
}

func soakShapes(ids []string, parent string, since int64) []soakShape {
	byID := func(i int) map[string]any { return map[string]any{"id": ids[i%len(ids)]} }
	none := func(int) map[string]any { return nil }
	shapes := []soakShape{
		{name: "one run", query: `query($id: ID!) { run(id: $id) { ... on Run { id status flowName createdAt owner { hostId } waiting { kind reason } cancellation { requestedAt } } ... on MissingRun { id deleted } } }`, vars: byID},
		{name: "batch", query: `query($ids: [ID!]!) { runs(ids: $ids) { ... on Run { id status flowName createdAt parent { ... on Run { id } } } } }`,
			vars: func(i int) map[string]any {
				return map[string]any{"ids": ids[i%len(ids) : min(len(ids), i%len(ids)+50)]}
			}},
		{name: "dashboard", query: dashboardQuery, vars: byID},
		{name: "children page", query: `query($id: ID!, $n: Int) { run(id: $id) { ... on Run { children(first: $n) { edges { cursor ordinal node { ... on Run { id status } } } pageInfo { hasNextPage endCursor } } } } }`,
			vars: func(i int) map[string]any { return map[string]any{"id": parent, "n": 1 + i%20} }},
		{name: "journal", query: `query($id: ID!) { run(id: $id) { ... on Run { steps(first: 5) { edges { node { id type state ... on RunStep { attemptCount attempts { number state } } } } } events(first: 5) { edges { node { seq } } } } } }`, vars: byID},
		{name: "feed", query: `query($s: SafeInt!) { changes(since: $s, first: 20) { nextRevision changes { revision run { ... on Run { id status } ... on MissingRun { id deleted } } } } }`,
			vars: func(i int) map[string]any { return map[string]any{"s": int64(i) % max(since, 1)} }},
		{name: "countRuns", query: `query { countRuns(filter: {status: [COMPLETED, FAILED]}, upTo: 1000) { count capped } }`, vars: none},
		{name: "runStats", query: `query { runStats { status count capped } }`, vars: none},
		{name: "flows", query: `query { flows(first: 10) { nodes pageInfo { hasNextPage } } }`, vars: none},
		{name: "runActivity", query: `query { runActivity(since: "2020-01-01T00:00:00Z", until: "2020-01-02T00:00:00Z") { start started finished failed } }`, vars: none},
	}
	// One list page per filter of RunFilter, with a changing variable so
	// that no two requests are the same.
	filters := []string{
		`{status: [COMPLETED]}`, `{flowName: "billing"}`, `{parentRunId: $id}`, `{executionParentId: $id}`,
		`{lineageId: $id}`, `{waitingReason: "timer"}`, `{waitingKind: [TIMER, SIGNAL]}`,
		`{createdAfter: "2020-01-01T00:00:00Z"}`, `{createdBefore: "2100-01-01T00:00:00Z"}`, `{rootsOnly: true}`,
		`{cancelRequested: true}`, `{heartbeatBefore: "2100-01-01T00:00:00Z"}`,
		`{finishedAfter: "2020-01-01T00:00:00Z"}`, `{finishedBefore: "2100-01-01T00:00:00Z"}`,
	}
	for _, f := range filters {
		params, uses := "$n: Int", strings.Contains(f, "$id")
		if uses {
			params = "$id: ID, $n: Int"
		}
		shapes = append(shapes, soakShape{
			name:  "listRuns " + f,
			query: `query(` + params + `) { listRuns(filter: ` + f + `, first: $n) { edges { cursor node { ... on Run { id status flowName } } } pageInfo { hasNextPage endCursor } } }`,
			vars: func(i int) map[string]any {
				v := map[string]any{"n": 1 + i%25}
				if uses {
					v["id"] = ids[i%len(ids)]
				}
				return v
			},
		})
	}
	return append(shapes,
		soakShape{name: "position subscription", query: `subscription { position { source revision } }`, vars: none, sse: true},
		soakShape{name: "run subscription", query: `subscription($id: ID!) { run(id: $id) { ... on Run { id status } ... on MissingRun { id } } }`, vars: byID, sse: true},
		soakShape{name: "changes subscription", query: `subscription($s: SafeInt!) { changes(since: $s) { nextRevision changes { revision } } }`,
			vars: func(i int) map[string]any { return map[string]any{"s": int64(i) % max(since, 1)} }, sse: true},
	)
}

// firstEventWriter records a response and cancels the request once an
// event has been written: a subscriber that reads one event and leaves.
type firstEventWriter struct {
	header http.Header
	body   bytes.Buffer
	status int
	cancel context.CancelFunc
}

func (w *firstEventWriter) Header() http.Header { return w.header }
func (w *firstEventWriter) WriteHeader(s int)   { w.status = s }
func (w *firstEventWriter) Flush()              {}
func (w *firstEventWriter) Write(p []byte) (int, error) {
	w.body.Write(p)
	if bytes.Contains(w.body.Bytes(), []byte("event: next")) {
		w.cancel()
	}
	return len(p), nil
}

// serveSoak serves one request of shape s directly through h, and fails
// the test unless it was answered without errors.
func serveSoak(t *testing.T, h http.Handler, s soakShape, i int) {
	body, _ := json.Marshal(map[string]any{"query": s.query, "variables": s.vars(i)})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req := httptest.NewRequestWithContext(ctx, http.MethodPost, "/graphql", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if s.sse {
		req.Header.Set("Accept", "text/event-stream")
		w := &firstEventWriter{header: http.Header{}, status: http.StatusOK, cancel: cancel}
		h.ServeHTTP(w, req)
		if w.status != http.StatusOK || !strings.Contains(w.body.String(), "event: next") || strings.Contains(w.body.String(), `"errors"`) {
			t.Fatalf("%s: status %d: %.300s", s.name, w.status, w.body.String())
		}
		return
	}
	req.Header.Set("Accept", "application/graphql-response+json")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	if w.Code != http.StatusOK || strings.Contains(w.Body.String(), `"errors"`) {
		t.Fatalf("%s: status %d: %.300s", s.name, w.Code, w.Body.String())
	}
}

// liveHeap is the live heap after a full collection.
func liveHeap() uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// TestServingManyRequestsKeepsTheHeapFlat serves every shape a client
// sends (one run, a batch, the dashboard, a children page, the journal,
// the feed, counts, every list filter, subscriptions opened and closed)
// many times each, and fails when the live heap after a forced collection
// grows by more than a few MiB: every per-document or per-request cache
// must have a key stable across requests and a bound.
func TestServingManyRequestsKeepsTheHeapFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("the soak serves tens of thousands of requests")
	}
	dsn := storetest.DSN(t, store.SQLite)
	db := storetest.OpenDSN(t, dsn, true)
	ctx := context.Background()
	if _, err := engine.Seed(ctx, db, engine.SeedOptions{Runs: 400, Seed: 7}); err != nil {
		t.Fatal(err)
	}
	reader := snapshot.NewReader(storetest.OpenReader(t, dsn))
	watcher := live.New(reader, live.Options{Interval: 20 * time.Millisecond})
	wctx, stop := context.WithCancel(ctx)
	stopped := make(chan struct{})
	go func() { defer close(stopped); _ = watcher.Run(wctx) }()
	t.Cleanup(func() { stop(); <-stopped })
	<-watcher.Ready()
	h := endpoint.NewHandler(reader, endpoint.Options{Live: watcher})

	var ids []string
	var parent string
	var since int64
	{
		body, _ := json.Marshal(map[string]any{"query": `{ position { revision } listRuns(first: 200) { edges { node { ... on Run { id children(first: 1) { edges { ordinal } } } } } } }`})
		req := httptest.NewRequest(http.MethodPost, "/graphql", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		var out struct {
			Data struct {
				Position struct{ Revision int64 }
				ListRuns struct {
					Edges []struct {
						Node struct {
							ID       string
							Children struct{ Edges []struct{} }
						}
					}
				}
			}
		}
		if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil {
			t.Fatalf("%v: %s", err, w.Body.String())
		}
		for _, e := range out.Data.ListRuns.Edges {
			ids = append(ids, e.Node.ID)
			if parent == "" && len(e.Node.Children.Edges) > 0 {
				parent = e.Node.ID
			}
		}
		since = out.Data.Position.Revision
		if len(ids) < 100 || parent == "" {
			t.Fatalf("the seeded store has %d runs and parent %q", len(ids), parent)
		}
	}

	shapes := soakShapes(ids, parent, since)
	n := soakRequests()
	// A first round fills what is bounded: the query cache, the parsed
	// documents' collected fields, the statement caches, the run cache.
	for _, s := range shapes {
		for i := range max(n/10, 50) {
			serveSoak(t, h, s, i)
		}
	}
	before := liveHeap()
	for _, s := range shapes {
		start := liveHeap()
		for i := range n {
			serveSoak(t, h, s, i)
		}
		grew := int64(liveHeap()) - int64(start)
		if grew > soakGrowth/8 {
			t.Errorf("%s: the live heap grew by %.1f MiB over %d requests", s.name, float64(grew)/(1<<20), n)
		}
	}
	after := liveHeap()
	grew := int64(after) - int64(before)
	t.Logf("%d shapes × %d requests: live heap %.1f → %.1f MiB", len(shapes), n, float64(before)/(1<<20), float64(after)/(1<<20))
	if grew > soakGrowth {
		t.Errorf("the live heap grew by %s over %d requests of each shape; a cache is unbounded or keyed by something each request rebuilds", fmt.Sprintf("%.1f MiB", float64(grew)/(1<<20)), n)
	}
}
