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
	"net/url"
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
	// bulkReader's prefix covers more flows than a list makes branches of.
	bulkReader = &access.Principal{Name: "c", Flows: []string{"bulk-*", "ops"}}
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

var scopePaths = map[string]*access.Principal{"a": metadataOnly, "b": opsReader, "n": nobody, "c": bulkReader}

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
		for i := range snapshot.MaxBranches + 1 {
			steps = append(steps, func() error { return create(tx, fmt.Sprintf("bulk-run-%02d", i), fmt.Sprintf("bulk-%02d", i), "") })
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

var everyPath = map[string]*access.Principal{"": access.Everyone, "a": metadataOnly, "b": opsReader, "n": nobody, "c": bulkReader}

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
				for pages := 0; pages < 100; pages++ {
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
				for _, prefix := range []string{"b", "billing-", "bulk-1", "o", "billing-refund", "x"} {
					var wantP []string
					for _, n := range want {
						if strings.HasPrefix(n, prefix) {
							wantP = append(wantP, n)
						}
					}
					r := e.okAs(path, `query($p: String) { flows(first: 200, prefix: $p) { nodes } }`, map[string]any{"p": prefix})
					var gotP []string
					for _, n := range get(r.Data, "flows", "nodes").([]any) {
						gotP = append(gotP, n.(string))
					}
					if !slices.Equal(gotP, wantP) {
						t.Errorf("flows(prefix: %q): %v, want %v", prefix, gotP, wantP)
					}
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

		t.Run("a scope is part of what a list costs", func(t *testing.T) {
			cost := func(path string) float64 {
				t.Helper()
				r := e.okAs(path, `{ listRuns(first: 200) { nodes { __typename } } }`, nil)
				c, _ := get(r.Extensions, "cost", "requested").(float64)
				return c
			}
			// Every run: one range. Two names: two ranges merged. A
			// prefix: a condition the walk checks row by row.
			all, names, prefix := cost(""), cost("b"), cost("a")
			if all < 1 || names <= all || prefix <= all {
				t.Errorf("cost of a list for every run %v, two names %v, a prefix %v", all, names, prefix)
			}
		})

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

// journalQuery selects every payload field and the metadata beside them.
const journalQuery = `query($ids: [ID!]!) { runs(ids: $ids) { ... on Run {
  id status flowName state createdAt
  waiting { kind reason wakeAt tokenDigest request }
  steps { nodes { id type state ... on RunStep { attemptCount attempts { id state resultType result errorName errorMessage } }
    ... on WaitStep { eventName claimedEvent { id hasPayload payload } } } }
  inboundEvents { nodes { id eventName hasPayload payload } }
  events { nodes { seq type cancellationReason } } } } }`

func TestPayloads(t *testing.T) {
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		e := scopeFixture(t, d)
		payloadRuns := map[string]any{"ids": []string{"bp", "bw", "bx"}}

		t.Run("without payloads, every payload field is null beside FORBIDDEN and the metadata stands", func(t *testing.T) {
			r := e.as("a", journalQuery, payloadRuns)
			forbidden := map[string]int{}
			for _, err := range r.Errors {
				if err.Extensions["code"] != "FORBIDDEN" {
					t.Errorf("an error that is not FORBIDDEN: %+v", err)
				}
				forbidden[fmt.Sprint(err.Path[len(err.Path)-1])]++
			}
			for _, f := range []string{"state", "request", "result", "errorName", "errorMessage", "payload", "cancellationReason"} {
				if forbidden[f] == 0 {
					t.Errorf("no FORBIDDEN error at %s: %v", f, forbidden)
				}
			}
			bp := get(r.Data, "runs", 0)
			if get(bp, "state") != nil || get(bp, "flowName") != "billing-invoice" || get(bp, "status") != "RUNNING" {
				t.Errorf("bp: %v", bp)
			}
			attempts := get(bp, "steps", "nodes", 0, "attempts").([]any)
			if len(attempts) != 2 || get(attempts[0], "state") != "FAILED" || get(attempts[1], "resultType") != "JSON" || get(attempts[1], "result") != nil {
				t.Errorf("attempts: %v", attempts)
			}
			if get(bp, "inboundEvents", "nodes", 0, "hasPayload") != true || get(bp, "inboundEvents", "nodes", 0, "payload") != nil {
				t.Errorf("inbound events: %v", get(bp, "inboundEvents"))
			}
			w := get(r.Data, "runs", 1, "waiting")
			if get(w, "kind") != "APPROVAL" || get(w, "reason") != "approval" || get(w, "tokenDigest") == nil || get(w, "request") != nil {
				t.Errorf("waiting: %v", w)
			}
			if get(r.Data, "runs", 2, "events", "nodes", 0, "type") != "CANCELLED" {
				t.Errorf("events: %v", get(r.Data, "runs", 2, "events"))
			}
		})

		t.Run("with payloads, they are served", func(t *testing.T) {
			r := e.okAs("b", journalQuery, map[string]any{"ids": []string{"bp-k1", "op"}})
			if get(r.Data, "runs", 1, "state") == nil {
				t.Errorf("b's state of op: %v", get(r.Data, "runs", 1))
			}
			r = e.okAs("", journalQuery, payloadRuns)
			b, _ := json.Marshal(r.Data)
			for _, part := range []string{"state", "error", "name", "result", "event", "request", "reason"} {
				if !bytes.Contains(b, []byte(payloadMarker+"-"+part)) {
					t.Errorf("everyone's answer lacks the %s payload: %s", part, b)
				}
			}
		})

		t.Run("the direct answer and the cached path leave payloads to the executor", func(t *testing.T) {
			// The shapes the direct answer writes itself, posted twice so
			// that the second is answered from the query cache.
			for _, q := range []string{
				`query($id: ID!) { run(id: $id) { ... on Run { id state } } }`,
				`query($id: ID!) { run(id: $id) { ... on Run { id waiting { kind tokenDigest request } } } }`,
				`query($ids: [ID!]!) { runs(ids: $ids) { ... on Run { id state children { nodes { ... on Run { id state } } } } } }`,
				`query($ids: [ID!]!) { runs(ids: $ids) { ... on Run { id steps { nodes { id ... on RunStep { attempts { result } } } } } } }`,
				`query($ids: [ID!]!) { runs(ids: $ids) { ... on Run { id steps { nodes { id ... on RunStep { attempts { errorName errorMessage } } } } } } }`,
				`query($ids: [ID!]!) { runs(ids: $ids) { ... on Run { id inboundEvents { nodes { id payload } } } } }`,
				`query($ids: [ID!]!) { runs(ids: $ids) { ... on Run { id steps { nodes { ... on WaitStep { claimedEvent { payload } } } } } } }`,
				`{ runs(ids: ["bx"]) { ... on Run { id events { edges { node { cancellationReason } } } } } }`,
			} {
				for range 2 {
					r := e.as("a", q, map[string]any{"id": "bw", "ids": []string{"bp", "bw"}})
					if !r.hasCode("FORBIDDEN") || r.Data == nil {
						t.Errorf("%s: %+v %v", q, r.Errors, r.Data)
					}
				}
			}
			r := e.as("a", `{ run(id: "bw") { ... on Run { id status flowName waiting { kind reason tokenDigest } } } }`, nil)
			if len(r.Errors) > 0 || get(r.Data, "run", "waiting", "tokenDigest") == nil {
				t.Errorf("metadata only: %+v %v", r.Errors, r.Data)
			}
		})

		t.Run("no response to a principal without payloads holds a payload byte", func(t *testing.T) {
			// Everything else the suite asks as "a" is in e.bodies too.
			for _, q := range []string{
				`{ listRuns(first: 200) { nodes { ... on Run { id state waiting { request } } } } }`,
				`{ changes(since: 0, first: 1000) { changes { runId run { ... on Run { state } } } } }`,
			} {
				e.as("a", q, nil)
			}
			e.as("a", journalQuery, payloadRuns)
			e.mu.Lock()
			defer e.mu.Unlock()
			if len(e.bodies["a"]) < 5 {
				t.Fatalf("only %d responses to scan", len(e.bodies["a"]))
			}
			for _, b := range e.bodies["a"] {
				if bytes.Contains(b, []byte(payloadMarker)) {
					t.Errorf("a response to a principal without payloads holds a payload: %s", b)
				}
			}
		})
	})
}

func TestETagsAreBoundToThePrincipal(t *testing.T) {
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		e := scopeFixture(t, d)
		query := "?query=" + url.QueryEscape(`{ run(id: "op") { __typename ... on Run { id status } } }`)
		get := func(path, inm string) (*http.Response, string) {
			t.Helper()
			req, _ := http.NewRequest(http.MethodGet, e.base(path)+"/graphql"+query, nil)
			if inm != "" {
				req.Header.Set("If-None-Match", inm)
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			body, _ := io.ReadAll(res.Body)
			return res, string(body)
		}
		tags := map[string]string{}
		for _, path := range []string{"", "a", "b"} {
			res, body := get(path, "")
			tags[path] = res.Header.Get("ETag")
			if res.StatusCode != 200 || tags[path] == "" {
				t.Fatalf("GET as %q: %d %q %s", path, res.StatusCode, tags[path], body)
			}
			if again, _ := get(path, tags[path]); again.StatusCode != http.StatusNotModified {
				t.Fatalf("GET as %q with its own tag: %d", path, again.StatusCode)
			}
		}
		for made, tag := range tags {
			for _, used := range []string{"", "a", "b"} {
				if used == made {
					continue
				}
				res, body := get(used, tag)
				if res.StatusCode != 200 || res.Header.Get("ETag") == tag {
					t.Errorf("%q's tag sent by %q: %d, ETag %q", made, used, res.StatusCode, res.Header.Get("ETag"))
				}
				// b sees op, a and everyone's answers differ from each other.
				if want := map[string]string{"": "Run", "a": "MissingRun", "b": "Run"}[used]; !strings.Contains(body, `"`+want+`"`) {
					t.Errorf("%q's answer: %s", used, body)
				}
			}
		}
	})
}

func TestSubscriptionsDeliverNoEventOutOfScope(t *testing.T) {
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		e := scopeFixture(t, d)
		ctx := context.Background()
		owner := vocab.Owner{HostID: "host-s", PID: 10, Nonce: "nonce-t"}
		const changes = `subscription($since: SafeInt!) { changes(since: $since) { changes { runId deleted run { ` + snapFields + ` } } nextRevision } }`
		since := e.okAs("", `{ position { revision } }`, nil).Data["position"].(map[string]any)["revision"]

		type subs struct {
			out, later, in, feed <-chan event
		}
		ws := dialWS(t, e.base("a"))
		var tr [2]subs
		tr[0].out, _ = ws.subscribe("out", runSubscription, map[string]any{"id": "bp-k2"})
		tr[0].later, _ = ws.subscribe("later", runSubscription, map[string]any{"id": "later"})
		tr[0].in, _ = ws.subscribe("in", runSubscription, map[string]any{"id": "bp-k1"})
		tr[0].feed, _ = ws.subscribe("feed", changes, map[string]any{"since": since})
		tr[1].out = subscribeSSE(t, e.base("a"), runSubscription, map[string]any{"id": "bp-k2"}).events
		tr[1].later = subscribeSSE(t, e.base("a"), runSubscription, map[string]any{"id": "later"}).events
		tr[1].in = subscribeSSE(t, e.base("a"), runSubscription, map[string]any{"id": "bp-k1"}).events
		tr[1].feed = subscribeSSE(t, e.base("a"), changes, map[string]any{"since": since}).events
		// Everyone's subscription to the run out of a's scope says when
		// the watcher has read its changes.
		reference := dialWS(t, e.base(""))
		ref, _ := reference.subscribe("ref", runSubscription, map[string]any{"id": "bp-k2"})
		next(t, ref)

		for i, s := range tr {
			for what, ch := range map[string]<-chan event{"out": s.out, "later": s.later} {
				typename, _, _, deleted := next(t, ch).run(t)
				if typename != "MissingRun" || deleted {
					t.Fatalf("transport %d, %s: the first event is %s (deleted %v)", i, what, typename, deleted)
				}
			}
			if typename, _, _, _ := next(t, s.in).run(t); typename != "Run" {
				t.Fatalf("transport %d: the run in scope reads as %s", i, typename)
			}
			if ev := next(t, s.feed); len(ev.Errors) > 0 || !bytes.Contains(ev.Data["changes"], []byte(`"changes":[]`)) {
				t.Fatalf("transport %d: the first batch %s %+v", i, ev.Data["changes"], ev.Errors)
			}
		}

		// Changes out of scope only: another run of another flow changes,
		// a run of another flow is created under the id "later", the run
		// subscribed to starts and beats.
		must(t, e.w.Start(ctx, "op", owner))
		must(t, e.w.CreateRun(ctx, engine.NewRun{ID: "later", FlowName: "ops"}))
		must(t, e.w.Start(ctx, "bp-k2", owner))
		must(t, e.w.Heartbeat(ctx, "bp-k2", owner.Nonce))
		written := int64(e.okAs("", `{ position { revision } }`, nil).Data["position"].(map[string]any)["revision"].(float64))
		var last int64
		nextUntil(t, ref, &last, func(ev event) bool { return ev.Extensions.Position.Revision >= written })
		// Then the runs out of scope are deleted, which changes their
		// parent bp, in scope.
		must(t, e.w.Delete(ctx, "bp-k3"))
		must(t, e.w.Delete(ctx, "bp-k2"))
		nextUntil(t, ref, &last, func(ev event) bool {
			_, _, _, deleted := ev.run(t)
			return deleted
		})
		// A change in scope. Deleting bp's children changed bp (its spawn
		// edges went): the feed holds bp and bp-k1, and nothing else, in
		// batches none of which is empty.
		must(t, e.w.Start(ctx, "bp-k1", owner))
		for i, s := range tr {
			var got []string
			for !slices.Contains(got, "bp-k1") {
				ev := next(t, s.feed)
				var feed struct {
					Changes []struct {
						RunID string `json:"runId"`
					} `json:"changes"`
				}
				must(t, json.Unmarshal(ev.Data["changes"], &feed))
				if len(feed.Changes) == 0 {
					t.Fatalf("transport %d: an empty batch: %s", i, ev.Data["changes"])
				}
				for _, c := range feed.Changes {
					got = append(got, c.RunID)
				}
			}
			if slices.Sort(got); !slices.Equal(slices.Compact(got), []string{"bp", "bp-k1"}) {
				t.Errorf("transport %d: the batches after changes out of scope hold %v", i, got)
			}
			if _, status, _, _ := next(t, s.in).run(t); status != "RUNNING" {
				t.Errorf("transport %d: the run in scope is %s", i, status)
			}
		}
		// The watcher has read every change by now; give the streams of
		// the runs out of scope as many ticks again to send what they
		// should not.
		time.Sleep(200 * time.Millisecond)
		for i, s := range tr {
			for what, ch := range map[string]<-chan event{"out": s.out, "later": s.later} {
				select {
				case ev := <-ch:
					t.Errorf("transport %d, %s: an event of a run out of scope: %s %+v", i, what, ev.Data["run"], ev.Errors)
				default:
				}
			}
		}
	})
}
