package endpoint_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flowsnap/flowsnap/access"
	"github.com/flowsnap/flowsnap/endpoint"
	"github.com/flowsnap/flowsnap/engine"
	"github.com/flowsnap/flowsnap/live"
	"github.com/flowsnap/flowsnap/snapshot"
	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/storetest"
	"github.com/flowsnap/flowsnap/store/vocab"
)

// payloadMarker begins every payload the scope fixture writes: state,
// results, errors, event payloads, waiting requests, event log details.
// No response to a principal without payloads may contain it.
const payloadMarker = "PAYLOAD-b1e7"

// The principals of the scope suite, served under a path each.
var (
	// metadataOnly sees the billing flows and no payload.
	metadataOnly = &access.Principal{Name: "a", Flows: []string{"billing-*"}}
	// opsReader sees ops and one exact billing flow, payloads included.
	opsReader = &access.Principal{Name: "b", Flows: []string{"ops", "billing-refund"}, Payloads: true}
	// nobody has no flows: it sees no run.
	nobody = &access.Principal{Name: "n", Payloads: true}
)

// scopeEnv is a store with runs of several flows, served to each principal
// under a path of its own ("/a", "/b", "/n"; "/" for a server without
// authentication), with subscriptions.
type scopeEnv struct {
	t       *testing.T
	db      *store.DB
	w       *engine.Writer
	url     string
	flow    map[string]string // run id → flow name, live runs
	created map[string]int64
	ids     []string // every id asked about, "gone" and "never" included

	mu     sync.Mutex
	bodies map[string][][]byte // by principal path, every response body
}

var scopePaths = map[string]*access.Principal{"a": metadataOnly, "b": opsReader, "n": nobody}

func scopeFixture(t *testing.T, d store.Dialect) *scopeEnv {
	t.Helper()
	dsn := storetest.DSN(t, d)
	e := &scopeEnv{t: t, db: storetest.OpenDSN(t, dsn, true), flow: map[string]string{}, created: map[string]int64{}, bodies: map[string][][]byte{}}
	now := createdAt
	e.w = engine.NewWriter(e.db, func() int64 { now++; return now })
	ctx := context.Background()
	n := int64(0)
	create := func(tx *engine.Tx, id, flow string, state string, parents ...string) error {
		n++
		r := engine.NewRun{ID: id, FlowName: flow, CreatedAt: createdAt - 1000 + n}
		if state != "" {
			r.State = json.RawMessage(state)
		}
		for i, p := range parents {
			r.Parents = append(r.Parents, engine.ParentEdge{ParentID: p, Seq: int64(i)})
		}
		e.flow[id], e.created[id] = flow, r.CreatedAt
		return tx.CreateRun(ctx, r)
	}
	must(t, e.w.Do(ctx, func(tx *engine.Tx) error {
		steps := []func() error{
			func() error {
				return create(tx, "bp", "billing-invoice", `{"flowName":"billing-invoice","input":{"card":"`+payloadMarker+`-state"}}`)
			},
			func() error { return create(tx, "bp-k1", "billing-refund", "", "bp") },
			func() error { return create(tx, "bp-k2", "ops", "", "bp") },
			func() error { return create(tx, "bp-k3", "secret-jobs", "", "bp") },
			func() error { return create(tx, "op", "ops", "") },
			func() error { return create(tx, "op-k1", "billing-invoice", "", "op") },
			func() error { return create(tx, "bw", "billing-invoice", "") },
			func() error { return create(tx, "bx", "billing-invoice", "") },
			func() error { return create(tx, "gone", "billing-invoice", "") },
			func() error { return create(tx, "loop-0", "billing-invoice", "") },
		}
		for i := range 5 {
			steps = append(steps,
				func() error { return create(tx, fmt.Sprintf("b-%02d", i), "billing-invoice", "") },
				func() error { return create(tx, fmt.Sprintf("o-%02d", i), "ops", "") })
		}
		for _, s := range steps {
			if err := s(); err != nil {
				return err
			}
		}
		for i, flow := range []string{"ops", "billing-invoice"} {
			id := fmt.Sprintf("loop-%d", i+1)
			n++
			e.flow[id], e.created[id] = flow, createdAt-1000+n
			if err := tx.CreateRun(ctx, engine.NewRun{ID: id, FlowName: flow, CreatedAt: createdAt - 1000 + n,
				Round: &engine.Round{LineageID: "loop-0", Ordinal: int64(i + 1), Previous: fmt.Sprintf("loop-%d", i)}}); err != nil {
				return err
			}
		}
		return nil
	}))
	owner := vocab.Owner{HostID: "host-s", PID: 9, Nonce: "nonce-s"}
	must(t, e.w.Start(ctx, "bp", owner))
	must(t, e.w.AddStep(ctx, "bp", engine.Step{ID: "charge", Type: vocab.StepRun, MaxAttempts: 3}))
	must(t, e.w.StartAttempt(ctx, "bp", "charge", "a1"))
	must(t, e.w.FailAttempt(ctx, "bp", "a1", engine.AttemptError{Message: payloadMarker + "-error", Name: payloadMarker + "-name", NextAttemptAt: createdAt + 5000}))
	must(t, e.w.StartAttempt(ctx, "bp", "charge", "a2"))
	must(t, e.w.SucceedAttempt(ctx, "bp", "a2", json.RawMessage(`{"receipt":"`+payloadMarker+`-result"}`)))
	must(t, e.w.AddStep(ctx, "bp", engine.Step{ID: "approve", Type: vocab.StepWait, EventName: "approved"}))
	must(t, e.w.AddInboundEvent(ctx, engine.InboundEvent{ID: "e1", RunID: "bp", Name: "approved", Payload: json.RawMessage(`"` + payloadMarker + `-event"`)}))
	must(t, e.w.SatisfyWait(ctx, "bp", "approve", "e1"))
	must(t, e.w.AppendRunEvent(ctx, "bp", vocab.EventStarted, ""))
	must(t, e.w.Start(ctx, "bw", owner))
	must(t, e.w.Wait(ctx, "bw", engine.Waiting{Reason: "approval", WakeAt: createdAt + 60_000, Token: secretToken, Request: json.RawMessage(`{"ask":"` + payloadMarker + `-request"}`)}))
	must(t, e.w.Cancel(ctx, "bx"))
	must(t, e.w.AppendRunEvent(ctx, "bx", vocab.EventCancelled, payloadMarker+"-reason"))
	must(t, e.w.Delete(ctx, "gone"))
	delete(e.flow, "gone")
	for id := range e.flow {
		e.ids = append(e.ids, id)
	}
	sort.Strings(e.ids)
	e.ids = append(e.ids, "gone", "never")

	reader := snapshot.NewReader(storetest.OpenReader(t, dsn))
	watcher := live.New(reader, live.Options{Interval: 20 * time.Millisecond})
	wctx, stop := context.WithCancel(ctx)
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		_ = watcher.Run(wctx)
	}()
	t.Cleanup(func() { stop(); <-stopped })
	select {
	case <-watcher.Ready():
	case <-time.After(30 * time.Second):
		t.Fatal("the watcher did not read the store's revision")
	}
	h := endpoint.NewHandler(reader, endpoint.Options{Live: watcher, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	mux := http.NewServeMux()
	for path, p := range scopePaths {
		mux.Handle("/"+path+"/", http.StripPrefix("/"+path, withPrincipal(p, h)))
	}
	mux.Handle("/", h)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	e.url = srv.URL
	t.Cleanup(func() {
		for path, bodies := range e.bodies {
			for _, b := range bodies {
				if bytes.Contains(b, []byte(secretToken)) {
					t.Errorf("a response to %q contains the waiting token: %s", path, b)
				}
			}
		}
	})
	return e
}

// withPrincipal serves next to p, as the authentication in front of the
// endpoint does: the principal is in the request's context.
func withPrincipal(p *access.Principal, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r.WithContext(access.NewContext(r.Context(), p)))
	})
}

// base is the URL principal path serves at ("" for no principal).
func (e *scopeEnv) base(path string) string {
	if path == "" {
		return e.url
	}
	return e.url + "/" + path
}

// as posts query as the principal of path and records the body.
func (e *scopeEnv) as(path, query string, vars map[string]any) *response {
	e.t.Helper()
	body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	req, _ := http.NewRequest(http.MethodPost, e.base(path)+"/graphql", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	e.mu.Lock()
	e.bodies[path] = append(e.bodies[path], raw)
	e.mu.Unlock()
	r := &response{status: res.StatusCode, ctype: res.Header.Get("Content-Type")}
	if err := json.Unmarshal(raw, r); err != nil {
		e.t.Fatalf("response is not JSON (%d): %s", res.StatusCode, raw)
	}
	return r
}

func (e *scopeEnv) okAs(path, query string, vars map[string]any) *response {
	e.t.Helper()
	r := e.as(path, query, vars)
	if len(r.Errors) > 0 || r.status != http.StatusOK {
		e.t.Fatalf("%s as %q failed (%d): %+v", query, path, r.status, r.Errors)
	}
	return r
}

// sees is the brute force: whether principal p sees live run id.
func (e *scopeEnv) sees(p *access.Principal, id string) bool {
	flow, ok := e.flow[id]
	return ok && p.Scope().Sees(flow, true)
}

// visible is every live run p sees, newest first as listRuns orders them.
func (e *scopeEnv) visible(p *access.Principal) []string {
	var out []string
	for id := range e.flow {
		if e.sees(p, id) {
			out = append(out, id)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := e.created[out[i]], e.created[out[j]]
		return a > b || (a == b && out[i] > out[j])
	})
	return out
}

// checkSnapshot checks one snapshot as p must see it: a Run when p sees
// it, else a MissingRun that never existed (for everyone, "gone" is
// deleted).
func (e *scopeEnv) checkSnapshot(t *testing.T, p *access.Principal, what string, id string, v any) {
	t.Helper()
	typename, _ := get(v, "__typename").(string)
	gotID, _ := get(v, "id").(string)
	if gotID != id {
		t.Errorf("%s: id %q, want %q", what, gotID, id)
	}
	switch {
	case e.sees(p, id):
		if typename != "Run" {
			t.Errorf("%s: %s in scope reads as %v", what, id, v)
		}
	case p == access.Everyone && id == "gone":
		if typename != "MissingRun" || get(v, "deleted") != true {
			t.Errorf("%s: the deleted run reads as %v", what, v)
		}
	default:
		if typename != "MissingRun" || get(v, "deleted") != false || get(v, "deletedAtRevision") != nil {
			t.Errorf("%s: %s out of scope reads as %v, want a MissingRun that never existed", what, id, v)
		}
	}
}

const snapFields = `__typename ... on Run { id flowName } ... on MissingRun { id deleted deletedAtRevision }`

var everyPath = map[string]*access.Principal{"": access.Everyone, "a": metadataOnly, "b": opsReader, "n": nobody}

func TestScopes(t *testing.T) {
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		e := scopeFixture(t, d)
		for path, p := range everyPath {
			t.Run("principal "+p.Name+": runs out of scope read as runs that never existed", func(t *testing.T) {
				r := e.okAs(path, `query($ids: [ID!]!) { runs(ids: $ids) { `+snapFields+` } }`, map[string]any{"ids": e.ids})
				for i, id := range e.ids {
					e.checkSnapshot(t, p, "runs", id, get(r.Data, "runs", i))
				}
				for _, id := range e.ids {
					r := e.okAs(path, `query($id: ID!) { run(id: $id) { `+snapFields+` } node(id: $id) { `+snapFields+` } }`, map[string]any{"id": id})
					e.checkSnapshot(t, p, "run", id, get(r.Data, "run"))
					e.checkSnapshot(t, p, "node", id, get(r.Data, "node"))
				}
			})

			t.Run("principal "+p.Name+": parents, children and rounds pages", func(t *testing.T) {
				kids := []string{"bp-k1", "bp-k2", "bp-k3", "op-k1", "loop-1", "loop-2"}
				r := e.okAs(path, `query($ids: [ID!]!) { runs(ids: $ids) { ... on Run { id parent { `+snapFields+` } } } }`, map[string]any{"ids": kids})
				parentOf := map[string]string{"bp-k1": "bp", "bp-k2": "bp", "bp-k3": "bp", "op-k1": "op", "loop-1": "loop-0", "loop-2": "loop-1"}
				for i, id := range kids {
					if !e.sees(p, id) {
						continue
					}
					e.checkSnapshot(t, p, "parent of "+id, parentOf[id], get(r.Data, "runs", i, "parent"))
				}
				// Children and rounds, one node a page, so that every page
				// and cursor is walked.
				for _, c := range []struct{ anchor, field string }{{"bp", "children"}, {"op", "children"}, {"loop-0", "rounds"}, {"loop-2", "rounds"}} {
					if !e.sees(p, c.anchor) {
						continue
					}
					want := map[string][]string{"bp": {"bp-k1", "bp-k2", "bp-k3"}, "op": {"op-k1"}, "loop-0": {"loop-0", "loop-1", "loop-2"}, "loop-2": {"loop-0", "loop-1", "loop-2"}}[c.anchor]
					var got []string
					after := ""
					for {
						r := e.okAs(path, `query($id: ID!, $after: String) { run(id: $id) { ... on Run { `+c.field+`(first: 1, after: $after) {
							edges { cursor node { `+snapFields+` } } nodes { `+snapFields+` } pageInfo { hasNextPage endCursor } } } } }`,
							map[string]any{"id": c.anchor, "after": after})
						conn := get(r.Data, "run", c.field)
						for i, edge := range get(conn, "edges").([]any) {
							id, _ := get(edge, "node", "id").(string)
							e.checkSnapshot(t, p, c.field+" of "+c.anchor, id, get(edge, "node"))
							e.checkSnapshot(t, p, c.field+" nodes of "+c.anchor, id, get(conn, "nodes", i))
							got = append(got, id)
						}
						if get(conn, "pageInfo", "hasNextPage") != true {
							break
						}
						after = get(conn, "pageInfo", "endCursor").(string)
					}
					if !slices.Equal(got, want) {
						t.Errorf("%s of %s: %v, want %v", c.field, c.anchor, got, want)
					}
				}
			})

			t.Run("principal "+p.Name+": lists, counts and stats see only the runs in scope", func(t *testing.T) {
				want := e.visible(p)
				var got []string
				after := ""
				for pages := 0; pages < 100; pages++ {
					r := e.okAs(path, `query($after: String) { listRuns(first: 3, after: $after) { edges { node { `+snapFields+` } } pageInfo { hasNextPage endCursor } } }`,
						map[string]any{"after": after})
					for _, edge := range get(r.Data, "listRuns", "edges").([]any) {
						id, _ := get(edge, "node", "id").(string)
						e.checkSnapshot(t, p, "listRuns", id, get(edge, "node"))
						got = append(got, id)
					}
					if get(r.Data, "listRuns", "pageInfo", "hasNextPage") != true {
						break
					}
					after = get(r.Data, "listRuns", "pageInfo", "endCursor").(string)
				}
				if !slices.Equal(got, want) {
					t.Errorf("listRuns: %v\nwant %v", got, want)
				}
				counted := func(filter map[string]any, keep func(id string) bool) {
					t.Helper()
					n := 0
					for _, id := range want {
						if keep(id) {
							n++
						}
					}
					r := e.okAs(path, `query($f: RunFilter) { countRuns(filter: $f, upTo: 1000) { count capped } runStats(filter: $f, upTo: 1000) { status count }
						listRuns(filter: $f, first: 200) { edges { node { ... on Run { id } } } } }`, map[string]any{"f": filter})
					if c := get(r.Data, "countRuns", "count"); c != float64(n) {
						t.Errorf("countRuns(%v) = %v, want %d", filter, c, n)
					}
					sum := 0.0
					for _, s := range get(r.Data, "runStats").([]any) {
						sum += get(s, "count").(float64)
					}
					if sum != float64(n) {
						t.Errorf("runStats(%v) sums to %v, want %d", filter, sum, n)
					}
					if l := len(get(r.Data, "listRuns", "edges").([]any)); l != n {
						t.Errorf("listRuns(%v) has %d runs, want %d", filter, l, n)
					}
				}
				counted(nil, func(string) bool { return true })
				counted(map[string]any{"flowName": "ops"}, func(id string) bool { return e.flow[id] == "ops" })
				counted(map[string]any{"flowName": "billing-invoice"}, func(id string) bool { return e.flow[id] == "billing-invoice" })
				counted(map[string]any{"status": []string{"RUNNING", "SUSPENDED", "CANCELLED"}}, func(id string) bool { return id == "bp" || id == "bw" || id == "bx" })
				counted(map[string]any{"rootsOnly": true}, func(id string) bool {
					return !strings.Contains(id, "-k") && id != "loop-1" && id != "loop-2"
				})
			})

			t.Run("principal "+p.Name+": flows and activity see only the runs in scope", func(t *testing.T) {
				names := map[string]bool{}
				for _, id := range e.visible(p) {
					names[e.flow[id]] = true
				}
				want := slices.Sorted(func(yield func(string) bool) {
					for n := range names {
						if !yield(n) {
							return
						}
					}
				})
				var got []string
				after := ""
				for pages := 0; pages < 20; pages++ {
					r := e.okAs(path, `query($after: String) { flows(first: 1, after: $after) { nodes pageInfo { hasNextPage endCursor } } }`, map[string]any{"after": after})
					for _, n := range get(r.Data, "flows", "nodes").([]any) {
						got = append(got, n.(string))
					}
					if get(r.Data, "flows", "pageInfo", "hasNextPage") != true {
						break
					}
					after = get(r.Data, "flows", "pageInfo", "endCursor").(string)
				}
				if !slices.Equal(got, want) {
					t.Errorf("flows: %v, want %v", got, want)
				}
				r := e.okAs(path, `query($since: DateTime!, $until: DateTime!) { runActivity(since: $since, until: $until, bucket: DAY) { started } }`,
					map[string]any{"since": rfc3339(createdAt - 100_000), "until": rfc3339(createdAt + 100_000)})
				if s := get(r.Data, "runActivity", 0, "started"); s != float64(len(e.visible(p))) {
					t.Errorf("runActivity started %v, want %d", s, len(e.visible(p)))
				}
			})

			t.Run("principal "+p.Name+": the change feed leaves out the runs out of scope", func(t *testing.T) {
				r := e.okAs(path, `{ changes(since: 0, first: 1000) { changes { runId deleted run { `+snapFields+` } } nextRevision hasMore } position { revision } }`, nil)
				var got []string
				for _, c := range get(r.Data, "changes", "changes").([]any) {
					id := get(c, "runId").(string)
					got = append(got, id)
					e.checkSnapshot(t, p, "Change.run", id, get(c, "run"))
				}
				want := e.visible(p)
				if p == access.Everyone {
					want = append(want, "gone")
				}
				sort.Strings(got)
				sort.Strings(want)
				if !slices.Equal(got, want) {
					t.Errorf("changes: %v, want %v", got, want)
				}
				if get(r.Data, "changes", "nextRevision") != get(r.Data, "position", "revision") {
					t.Errorf("nextRevision %v, position %v", get(r.Data, "changes", "nextRevision"), get(r.Data, "position", "revision"))
				}
			})
		}

		t.Run("a list cursor is bound to the scope it was made in", func(t *testing.T) {
			const list = `query($after: String) { listRuns(first: 1, after: $after) { pageInfo { endCursor } } flows(first: 1) { pageInfo { endCursor } } }`
			const flows = `query($after: String) { flows(first: 1, after: $after) { nodes } }`
			cursors := map[string][2]string{}
			for _, path := range []string{"", "a", "b"} {
				r := e.okAs(path, list, nil)
				cursors[path] = [2]string{get(r.Data, "listRuns", "pageInfo", "endCursor").(string), get(r.Data, "flows", "pageInfo", "endCursor").(string)}
			}
			for made := range cursors {
				for _, used := range []string{"", "a", "b"} {
					for i, q := range []string{list, flows} {
						r := e.as(used, q, map[string]any{"after": cursors[made][i]})
						if made == used && len(r.Errors) > 0 {
							t.Errorf("a cursor made by %q, used by itself (%d): %+v", made, i, r.Errors)
						}
						if made != used && !r.hasCode("BAD_CURSOR") {
							t.Errorf("a cursor made by %q, used by %q (%d): %+v", made, used, i, r.Errors)
						}
					}
				}
			}
		})
	})
}
