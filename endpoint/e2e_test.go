package endpoint_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flowsnap/flowsnap/endpoint"
	"github.com/flowsnap/flowsnap/engine"
	"github.com/flowsnap/flowsnap/snapshot"
	"github.com/flowsnap/flowsnap/snapshot/snapshottest"
	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/storetest"
	"github.com/flowsnap/flowsnap/store/vocab"
)

// secretToken is the waiting token of the fixture's waiting run. No response
// of this suite may contain it.
const secretToken = "resume-token-7f3a9c-DO-NOT-LEAK"

const (
	fanOut    = 250 // children of "parent"
	rounds    = 5   // rounds of lineage "round-0"
	fanRuns   = 100 // parents "fan-000".. for the statement count
	fanKids   = 3
	createdAt = int64(1_764_470_802_123) // 2025-11-30T02:46:42.123Z
)

// env is one dialect's store with its server.
type env struct {
	t      *testing.T
	db     *store.DB
	reader *snapshot.Reader
	url    string
	mu     sync.Mutex
	bodies [][]byte // every response body, for the token scan
	stmts  []int    // statements of each operation, in order
}

// fixture builds a store with a known history and serves it through the
// real GraphQL handler over HTTP.
func fixture(t *testing.T, d store.Dialect, opts endpoint.Options) *env {
	t.Helper()
	dsn := storetest.DSN(t, d)
	db := storetest.OpenDSN(t, dsn, true)
	ctx := context.Background()
	w := engine.NewWriter(db, func() int64 { return createdAt })
	owner := vocab.Owner{HostID: "host-a", PID: 4242, Nonce: "nonce-a"}
	must(t, w.Do(ctx, func(tx *engine.Tx) error {
		if err := tx.CreateRun(ctx, engine.NewRun{ID: "parent", FlowName: "fanout"}); err != nil {
			return err
		}
		for i := range fanOut {
			if err := tx.CreateRun(ctx, engine.NewRun{ID: fmt.Sprintf("child-%03d", i), FlowName: "leaf",
				Parents: []engine.ParentEdge{{ParentID: "parent", Seq: int64(i)}}}); err != nil {
				return err
			}
		}
		if err := tx.CreateRun(ctx, engine.NewRun{ID: "round-0", FlowName: "loop"}); err != nil {
			return err
		}
		for i := 1; i < rounds; i++ {
			if err := tx.CreateRun(ctx, engine.NewRun{ID: fmt.Sprintf("round-%d", i), FlowName: "loop",
				Round: &engine.Round{LineageID: "round-0", Ordinal: int64(i), Previous: fmt.Sprintf("round-%d", i-1)}}); err != nil {
				return err
			}
		}
		for i := range fanRuns {
			p := fmt.Sprintf("fan-%03d", i)
			if err := tx.CreateRun(ctx, engine.NewRun{ID: p, FlowName: "fan"}); err != nil {
				return err
			}
			for k := range fanKids {
				if err := tx.CreateRun(ctx, engine.NewRun{ID: fmt.Sprintf("%s-kid-%d", p, k), FlowName: "kid",
					Parents: []engine.ParentEdge{{ParentID: p, Seq: int64(k)}}}); err != nil {
					return err
				}
			}
		}
		for _, id := range []string{"waiter", "runner", "cancelled", "gone"} {
			if err := tx.CreateRun(ctx, engine.NewRun{ID: id, FlowName: "ops", State: json.RawMessage(`{"flowName":"ops","input":{"n":1}}`)}); err != nil {
				return err
			}
		}
		return nil
	}))
	must(t, w.Start(ctx, "waiter", owner))
	must(t, w.Wait(ctx, "waiter", engine.Waiting{Reason: "approval", WakeAt: createdAt + 60_000, Token: secretToken, Request: json.RawMessage(`{"approver":"ops"}`)}))
	must(t, w.Start(ctx, "runner", owner))
	must(t, w.Start(ctx, "cancelled", owner))
	must(t, w.RequestCancel(ctx, "cancelled"))
	must(t, w.AcknowledgeCancel(ctx, "cancelled", owner))
	must(t, w.Delete(ctx, "gone"))

	e := &env{t: t, db: db}
	reader := snapshot.NewReader(storetest.OpenReader(t, dsn))
	e.reader = reader
	opts.OnOperation = func(rd *snapshot.Read) {
		e.mu.Lock()
		e.stmts = append(e.stmts, rd.Statements())
		e.mu.Unlock()
	}
	srv := httptest.NewServer(endpoint.NewHandler(reader, opts))
	t.Cleanup(srv.Close)
	e.url = srv.URL
	t.Cleanup(func() {
		for _, b := range e.bodies {
			if bytes.Contains(b, []byte(secretToken)) {
				t.Errorf("a response contains the waiting token: %s", b)
			}
		}
	})
	return e
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// response is a decoded GraphQL response.
type response struct {
	status int
	ctype  string
	Data   map[string]any `json:"data"`
	Errors []struct {
		Message    string         `json:"message"`
		Path       []any          `json:"path"`
		Extensions map[string]any `json:"extensions"`
	} `json:"errors"`
	Extensions map[string]any `json:"extensions"`
}

func (r *response) codes() []string {
	var out []string
	for _, e := range r.Errors {
		c, _ := e.Extensions["code"].(string)
		out = append(out, c)
	}
	return out
}

func (r *response) hasCode(code string) bool {
	for _, c := range r.codes() {
		if c == code {
			return true
		}
	}
	return false
}

// do posts a query and records the body.
func (e *env) do(query string, vars map[string]any) *response {
	e.t.Helper()
	body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	req, _ := http.NewRequest(http.MethodPost, e.url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	return e.send(req)
}

func (e *env) send(req *http.Request) *response {
	e.t.Helper()
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
	e.bodies = append(e.bodies, raw)
	e.mu.Unlock()
	r := &response{status: res.StatusCode, ctype: res.Header.Get("Content-Type")}
	if err := json.Unmarshal(raw, r); err != nil {
		e.t.Fatalf("response is not JSON (%d): %s", res.StatusCode, raw)
	}
	return r
}

// ok fails the test when the response has errors.
func (e *env) ok(query string, vars map[string]any) *response {
	e.t.Helper()
	r := e.do(query, vars)
	if len(r.Errors) > 0 || r.status != http.StatusOK {
		e.t.Fatalf("query failed (%d): %+v", r.status, r.Errors)
	}
	return r
}

// get walks a decoded JSON value by keys and indexes.
func get(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			l, _ := v.([]any)
			if k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

const runFields = `
fragment runFields on Run {
  id revision status flowName state createdAt startedAt finishedAt
  owner { hostId pid nonce } heartbeatAt
  claim { owner { hostId pid nonce } claimedAt }
  parentRunId executionParentId lineageId roundOrdinal
  cancellation { requestedAt acknowledgement { observedAt owner { hostId pid nonce } } }
  waiting { kind reason wakeAt tokenDigest request }
}`

func TestGraphQL(t *testing.T) {
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		e := fixture(t, d, endpoint.Options{})

		t.Run("the position is the snapshot's and is echoed in extensions", func(t *testing.T) {
			r := e.ok(`{ position { source revision } }`, nil)
			src, _ := get(r.Data, "position", "source").(string)
			rev, _ := get(r.Data, "position", "revision").(float64)
			if len(src) != 32 || rev < 1 {
				t.Fatalf("position = %v", r.Data["position"])
			}
			if get(r.Extensions, "position", "source") != src || get(r.Extensions, "position", "revision") != rev {
				t.Fatalf("extensions.position = %v, data.position = %v", r.Extensions["position"], r.Data["position"])
			}
		})

		t.Run("a waiting run shows every field and only the token's digest", func(t *testing.T) {
			r := e.ok(`query($id: ID!) { run(id: $id) { __typename ...runFields } }`+runFields, map[string]any{"id": "waiter"})
			run := get(r.Data, "run")
			sum := sha256.Sum256([]byte(secretToken))
			want := map[string]any{
				"__typename": "Run", "id": "waiter", "status": "SUSPENDED", "flowName": "ops",
				"createdAt": "2025-11-30T02:46:42.123Z", "lineageId": "waiter", "roundOrdinal": float64(0),
			}
			for k, v := range want {
				if get(run, k) != v {
					t.Errorf("%s = %v, want %v", k, get(run, k), v)
				}
			}
			if get(run, "waiting", "kind") != "APPROVAL" || get(run, "waiting", "reason") != "approval" ||
				get(run, "waiting", "tokenDigest") != hex.EncodeToString(sum[:]) ||
				get(run, "waiting", "request", "approver") != "ops" ||
				get(run, "waiting", "wakeAt") != "2025-11-30T02:47:42.123Z" {
				t.Errorf("waiting = %v", get(run, "waiting"))
			}
			if get(run, "state", "input", "n") != float64(1) {
				t.Errorf("state = %v", get(run, "state"))
			}
			if get(run, "owner") != nil {
				t.Errorf("a suspended run has no owner, got %v", get(run, "owner"))
			}
		})

		t.Run("a running run has its owner and an acknowledged cancellation", func(t *testing.T) {
			r := e.ok(`{ run(id: "cancelled") { ...runFields } }`+runFields, nil)
			run := get(r.Data, "run")
			if get(run, "status") != "RUNNING" || get(run, "owner", "hostId") != "host-a" || get(run, "owner", "pid") != float64(4242) {
				t.Errorf("owner = %v", get(run, "owner"))
			}
			if get(run, "cancellation", "requestedAt") == nil || get(run, "cancellation", "acknowledgement", "owner", "nonce") != "nonce-a" {
				t.Errorf("cancellation = %v", get(run, "cancellation"))
			}
		})

		t.Run("a batch answers in order with duplicates in place and missing runs", func(t *testing.T) {
			r := e.do(`{ runs(ids: ["parent", "nope", "gone", "parent", ""]) {
				__typename ... on Run { id } ... on MissingRun { id deleted deletedAtRevision } } }`, nil)
			list, _ := r.Data["runs"].([]any)
			if len(list) != 5 {
				t.Fatalf("runs = %v", r.Data["runs"])
			}
			if get(list, 0, "id") != "parent" || get(list, 3, "id") != "parent" {
				t.Errorf("order or duplicates wrong: %v", list)
			}
			if get(list, 1, "__typename") != "MissingRun" || get(list, 1, "deleted") != false || get(list, 1, "deletedAtRevision") != nil {
				t.Errorf("never-existed = %v", list[1])
			}
			if get(list, 2, "deleted") != true || get(list, 2, "deletedAtRevision") == nil {
				t.Errorf("deleted = %v", list[2])
			}
			if list[4] != nil || len(r.Errors) != 1 || r.codes()[0] != "BAD_USER_INPUT" || fmt.Sprint(r.Errors[0].Path) != "[runs 4]" {
				t.Errorf("an empty id must null its element with BAD_USER_INPUT at [runs 4]: %v %+v", list[4], r.Errors)
			}
		})

		t.Run("children page to the end in order, each exactly once", func(t *testing.T) {
			var seen []string
			var after any
			pages := 0
			for {
				r := e.ok(`query($after: String) { run(id: "parent") { ... on Run {
					children(first: 100, after: $after) { edges { cursor ordinal node { ... on Run { id parent { ... on Run { id } } } } }
					nodes { ... on Run { id } } pageInfo { hasNextPage endCursor } } } } }`, map[string]any{"after": after})
				conn := get(r.Data, "run", "children")
				edges, _ := get(conn, "edges").([]any)
				for i, edge := range edges {
					id, _ := get(edge, "node", "id").(string)
					if get(edge, "ordinal") != float64(len(seen)) || get(conn, "nodes", i, "id") != id || get(edge, "node", "parent", "id") != "parent" {
						t.Fatalf("edge %d of page %d = %v", i, pages, edge)
					}
					seen = append(seen, id)
				}
				pages++
				if get(conn, "pageInfo", "hasNextPage") != true {
					break
				}
				after = get(conn, "pageInfo", "endCursor")
				if after != get(edges, len(edges)-1, "cursor") {
					t.Fatalf("endCursor is not the last edge's cursor")
				}
			}
			if len(seen) != fanOut || pages != 3 {
				t.Fatalf("paged %d children in %d pages, want %d in 3", len(seen), pages, fanOut)
			}
			for i, id := range seen {
				if id != fmt.Sprintf("child-%03d", i) {
					t.Fatalf("child %d is %s", i, id)
				}
			}
		})

		t.Run("rounds list the whole lineage from any of its rounds", func(t *testing.T) {
			r := e.ok(`{ run(id: "round-3") { ... on Run { lineageId roundOrdinal parentRunId
				rounds(first: 2) { edges { ordinal node { ... on Run { id } } } pageInfo { hasNextPage endCursor } } } } }`, nil)
			run := get(r.Data, "run")
			if get(run, "lineageId") != "round-0" || get(run, "roundOrdinal") != float64(3) || get(run, "parentRunId") != "round-2" {
				t.Fatalf("run = %v", run)
			}
			var ids []string
			after := get(run, "rounds", "pageInfo", "endCursor")
			for _, edge := range get(run, "rounds", "edges").([]any) {
				ids = append(ids, get(edge, "node", "id").(string))
			}
			for get(r.Data, "run", "rounds", "pageInfo", "hasNextPage") == true {
				r = e.ok(`query($after: String) { run(id: "round-3") { ... on Run {
					rounds(first: 2, after: $after) { edges { ordinal node { ... on Run { id } } } pageInfo { hasNextPage endCursor } } } } }`, map[string]any{"after": after})
				for _, edge := range get(r.Data, "run", "rounds", "edges").([]any) {
					ids = append(ids, get(edge, "node", "id").(string))
				}
				after = get(r.Data, "run", "rounds", "pageInfo", "endCursor")
			}
			if strings.Join(ids, ",") != "round-0,round-1,round-2,round-3,round-4" {
				t.Fatalf("rounds = %v", ids)
			}
		})

		t.Run("bad page sizes and cursors are refused with their codes", func(t *testing.T) {
			cur := get(e.ok(`{ run(id: "parent") { ... on Run { children(first: 1) { pageInfo { endCursor } } } } }`, nil).Data,
				"run", "children", "pageInfo", "endCursor")
			cases := []struct {
				name, query string
				vars        map[string]any
				code        string
			}{
				{"a page size of 0", `{ run(id: "parent") { ... on Run { children(first: 0) { nodes { __typename } } } } }`, nil, "BAD_USER_INPUT"},
				{"a page size of 201", `{ run(id: "parent") { ... on Run { rounds(first: 201) { nodes { __typename } } } } }`, nil, "BAD_USER_INPUT"},
				{"a malformed cursor", `{ run(id: "parent") { ... on Run { children(after: "not a cursor!") { nodes { __typename } } } } }`, nil, "BAD_CURSOR"},
				{"a children cursor used for rounds", `query($c: String) { run(id: "parent") { ... on Run { rounds(after: $c) { nodes { __typename } } } } }`, map[string]any{"c": cur}, "BAD_CURSOR"},
				{"a cursor of another run", `query($c: String) { run(id: "fan-001") { ... on Run { children(after: $c) { nodes { __typename } } } } }`, map[string]any{"c": cur}, "BAD_CURSOR"},
				{"more than 200 ids", `query($ids: [ID!]!) { runs(ids: $ids) { __typename } }`, map[string]any{"ids": make([]string, 201)}, "BAD_USER_INPUT"},
				{"an id over 1024 characters", `query($id: ID!) { run(id: $id) { __typename } }`, map[string]any{"id": strings.Repeat("x", 1025)}, "BAD_USER_INPUT"},
				{"a query that does not parse", `{ run(id: `, nil, "BAD_USER_INPUT"},
				{"a field that does not exist", `{ nope }`, nil, "BAD_USER_INPUT"},
			}
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					r := e.do(c.query, c.vars)
					if !r.hasCode(c.code) {
						t.Fatalf("codes = %v, want %s: %+v", r.codes(), c.code, r.Errors)
					}
					for _, er := range r.Errors {
						if er.Message == "" || strings.Contains(er.Message, "SELECT") || strings.Contains(er.Message, "flows_") {
							t.Errorf("message %q must say what is wrong without SQL", er.Message)
						}
					}
				})
			}
		})

		t.Run("limits refuse what would cost too much", func(t *testing.T) {
			ids := make([]string, 200)
			for i := range ids {
				ids[i] = fmt.Sprintf("fan-%03d", i%fanRuns)
			}
			deep := "id"
			for range 20 {
				deep = "parent { ... on Run { " + deep + " } }"
			}
			var aliases strings.Builder
			for i := range 250 {
				fmt.Fprintf(&aliases, "a%d: position { revision } ", i)
			}
			for _, c := range []struct {
				name, query string
				vars        map[string]any
			}{
				{"200 runs with 200 children with 200 rounds each", `query($ids: [ID!]!) { runs(ids: $ids) { ... on Run { children(first: 200) { nodes { ... on Run { rounds(first: 200) { nodes { __typename } } } } } } } }`, map[string]any{"ids": ids}},
				{"a query nested 20 parents deep", `{ run(id: "child-001") { ... on Run { ` + deep + ` } } }`, nil},
				{"250 aliases", "{ " + aliases.String() + " }", nil},
			} {
				t.Run(c.name, func(t *testing.T) {
					r := e.do(c.query, c.vars)
					if !r.hasCode("COMPLEXITY_LIMIT") || r.Data != nil && len(r.Data) > 0 {
						t.Fatalf("codes = %v, data = %v", r.codes(), r.Data)
					}
				})
			}
			t.Run("a body over the limit", func(t *testing.T) {
				big := `{"query": "{ position { revision } }", "variables": {"pad": "` + strings.Repeat("x", 2<<20) + `"}}`
				req, _ := http.NewRequest(http.MethodPost, e.url, strings.NewReader(big))
				req.Header.Set("Content-Type", "application/json")
				r := e.send(req)
				if r.status != http.StatusRequestEntityTooLarge || !r.hasCode("BAD_USER_INPUT") {
					t.Fatalf("status %d codes %v", r.status, r.codes())
				}
			})
			t.Run("a query over the token limit", func(t *testing.T) {
				// Few nodes, many tokens: a list literal of 30,000 ids.
				r := e.do(`{ runs(ids: [`+strings.Repeat(`"x" `, 30_000)+`]) { __typename } }`, nil)
				if !r.hasCode("BAD_USER_INPUT") {
					t.Fatalf("codes = %v", r.codes())
				}
			})
		})

		t.Run("GET runs queries and negotiates the response type", func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodGet, e.url+"?query="+url.QueryEscape(`{ run(id: "runner") { ... on Run { status } } }`), nil)
			req.Header.Set("Accept", "application/graphql-response+json")
			r := e.send(req)
			if r.status != 200 || get(r.Data, "run", "status") != "RUNNING" || !strings.HasPrefix(r.ctype, "application/graphql-response+json") {
				t.Fatalf("status %d type %q data %v", r.status, r.ctype, r.Data)
			}
			req, _ = http.NewRequest(http.MethodGet, e.url+"?query="+url.QueryEscape(`{ position { revision } }`), nil)
			req.Header.Set("Accept", "application/json")
			if r := e.send(req); !strings.HasPrefix(r.ctype, "application/json") {
				t.Fatalf("type %q", r.ctype)
			}
		})

		t.Run("statements grow with the query's depth, not with its runs", func(t *testing.T) {
			count := func(n int) int {
				ids := make([]string, n)
				for i := range ids {
					ids[i] = fmt.Sprintf("fan-%03d", i)
				}
				r := e.ok(`query($ids: [ID!]!) { runs(ids: $ids) { ... on Run { id parent { __typename }
					children(first: 10) { nodes { ... on Run { id parent { ... on Run { id } }
					rounds(first: 5) { nodes { ... on Run { id } } } } } } } } }`, map[string]any{"ids": ids})
				if got := len(r.Data["runs"].([]any)); got != n {
					t.Fatalf("runs = %d, want %d", got, n)
				}
				if kids := get(r.Data, "runs", n-1, "children", "nodes"); len(kids.([]any)) != fanKids {
					t.Fatalf("children of the last = %v", kids)
				}
				e.mu.Lock()
				defer e.mu.Unlock()
				return e.stmts[len(e.stmts)-1]
			}
			few, many := count(10), count(fanRuns)
			t.Logf("statements: %d for 10 runs, %d for %d runs", few, many, fanRuns)
			// The position, the runs, the children pages with their runs
			// (whose parents are the runs already read), the rounds pages
			// with their runs: 4 at this depth.
			if many > 4 || many != few {
				t.Fatalf("statements: %d for 10 runs, %d for %d runs", few, many, fanRuns)
			}
		})

		t.Run("runs with their children and rounds are one statement", func(t *testing.T) {
			ids := make([]string, fanRuns)
			for i := range ids {
				ids[i] = fmt.Sprintf("fan-%03d", i)
			}
			r := e.ok(`query($ids: [ID!]!) { runs(ids: $ids) { ... on Run { id
				children(first: 10) { nodes { ... on Run { id } } } rounds(first: 5) { nodes { ... on Run { id } } } } } }`, map[string]any{"ids": ids})
			last := get(r.Data, "runs", fanRuns-1)
			if kids := get(last, "children", "nodes"); len(kids.([]any)) != fanKids {
				t.Fatalf("children of the last = %v", kids)
			}
			if rounds := get(last, "rounds", "nodes").([]any); len(rounds) != 1 || get(rounds, 0, "id") != ids[fanRuns-1] {
				t.Fatalf("rounds of the last = %v", rounds)
			}
			e.mu.Lock()
			defer e.mu.Unlock()
			// The position, and the runs with the pages of both kinds and
			// their runs (snapshot.Reader.RunsAndPages).
			if n := e.stmts[len(e.stmts)-1]; n != 2 {
				t.Fatalf("%d statements, want 2", n)
			}
		})
	})
}

func TestTimeoutReleasesTheRead(t *testing.T) {
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		e := fixture(t, d, endpoint.Options{Timeout: time.Nanosecond})
		r := e.do(`{ position { revision } }`, nil)
		if !r.hasCode("TIMEOUT") || r.Extensions["position"] != nil {
			t.Fatalf("codes = %v, extensions = %v", r.codes(), r.Extensions)
		}
	})
}

func TestABrokenRowFailsOnlyItsOwnElement(t *testing.T) {
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		e := fixture(t, d, endpoint.Options{})
		// child-007 was spawned by "parent"; an execution parent that
		// disagrees breaks run invariant 3 (ARCHITECTURE.md, "The contract").
		snapshottest.Loosen(t, e.db).Exec(t, `UPDATE flows_runs SET execution_parent_id = 'fan-001' WHERE run_id = 'child-007'`)
		r := e.do(`{ runs(ids: ["child-006", "child-007", "child-008"]) { ... on Run { id status } } }`, nil)
		list, _ := r.Data["runs"].([]any)
		if len(list) != 3 || get(list, 0, "id") != "child-006" || list[1] != nil || get(list, 2, "id") != "child-008" {
			t.Fatalf("runs = %v", r.Data["runs"])
		}
		if len(r.Errors) != 1 || r.codes()[0] != "DECODE_FAILED" || fmt.Sprint(r.Errors[0].Path) != "[runs 1]" ||
			r.Errors[0].Extensions["runId"] != "child-007" || !strings.Contains(r.Errors[0].Message, "child-007") {
			t.Fatalf("errors = %+v", r.Errors)
		}

		r = e.do(`{ run(id: "parent") { ... on Run { children(first: 10) {
			edges { ordinal node { ... on Run { id } } } nodes { ... on Run { id } } } } } }`, nil)
		edges, _ := get(r.Data, "run", "children", "edges").([]any)
		if len(edges) != 10 || get(edges, 7, "node") != nil || get(edges, 7, "ordinal") != float64(7) || get(edges, 8, "node", "id") != "child-008" {
			t.Fatalf("edges = %v", edges)
		}
		if get(r.Data, "run", "children", "nodes", 7) != nil || get(r.Data, "run", "children", "nodes", 6, "id") != "child-006" {
			t.Fatalf("nodes = %v", get(r.Data, "run", "children", "nodes"))
		}
		paths := map[string]bool{}
		for _, er := range r.Errors {
			if er.Extensions["code"] != "DECODE_FAILED" {
				t.Errorf("error %+v", er)
			}
			paths[fmt.Sprint(er.Path)] = true
		}
		if !paths["[run children edges 7 node]"] || !paths["[run children nodes 7]"] || len(paths) != 2 {
			t.Fatalf("error paths = %v", paths)
		}

		// A failed read is kept with its key: asking for the broken run
		// again, by run, by runs and as a page's node, reads it once.
		r = e.do(`{ a: run(id: "child-007") { ... on Run { id } } b: runs(ids: ["child-007", "child-006"]) { ... on Run { id } }
			c: run(id: "child-007") { ... on Run { id } } }`, nil)
		if len(r.Errors) != 3 || r.codes()[0] != "DECODE_FAILED" || r.Data["a"] != nil || get(r.Data, "b", 1, "id") != "child-006" {
			t.Fatalf("errors = %+v, data = %v", r.Errors, r.Data)
		}
		e.mu.Lock()
		stmts := e.stmts[len(e.stmts)-1]
		e.mu.Unlock()
		if stmts != 2 { // the position and the runs
			t.Fatalf("the operation ran %d statements, want 2", stmts)
		}
	})
}

func TestIntrospectionCanBeTurnedOff(t *testing.T) {
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		on := fixture(t, d, endpoint.Options{})
		if r := on.ok(`{ __schema { queryType { name } } }`, nil); get(r.Data, "__schema", "queryType", "name") != "Query" {
			t.Fatalf("introspection on: %v", r.Data)
		}
		off := fixture(t, d, endpoint.Options{DisableIntrospection: true})
		if r := off.do(`{ __schema { queryType { name } } }`, nil); !r.hasCode("BAD_USER_INPUT") {
			t.Fatalf("introspection off: codes %v data %v", r.codes(), r.Data)
		}
		if r := off.ok(`{ position { revision } }`, nil); get(r.Data, "position", "revision") == nil {
			t.Fatalf("queries must still work: %v", r.Data)
		}
	})
}

func TestPersistedQueries(t *testing.T) {
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		e := fixture(t, d, endpoint.Options{})
		query := `{ run(id: "runner") { ... on Run { status } } }`
		sum := sha256.Sum256([]byte(query))
		ext := map[string]any{"persistedQuery": map[string]any{"version": 1, "sha256Hash": hex.EncodeToString(sum[:])}}
		post := func(body map[string]any) *response {
			b, _ := json.Marshal(body)
			req, _ := http.NewRequest(http.MethodPost, e.url, bytes.NewReader(b))
			req.Header.Set("Content-Type", "application/json")
			return e.send(req)
		}
		if r := post(map[string]any{"extensions": ext}); len(r.Errors) == 0 || r.Errors[0].Message != "PersistedQueryNotFound" {
			t.Fatalf("an unknown hash must ask for the query: %+v", r.Errors)
		}
		if r := post(map[string]any{"query": query, "extensions": ext}); get(r.Data, "run", "status") != "RUNNING" {
			t.Fatalf("registering: %+v %v", r.Errors, r.Data)
		}
		if r := post(map[string]any{"extensions": ext}); get(r.Data, "run", "status") != "RUNNING" || r.Extensions["position"] == nil {
			t.Fatalf("by hash: %+v %v", r.Errors, r.Data)
		}
	})
}

func TestAStoreThatGoesAwayIsAPersistenceFailure(t *testing.T) {
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		e := fixture(t, d, endpoint.Options{})
		e.ok(`{ position { revision } }`, nil)
		// The store goes away under the server: on PostgreSQL its tables
		// are dropped, on SQLite its connections are closed.
		if d == store.Postgres {
			must(t, e.db.Write(context.Background(), func(tx store.Tx) error {
				_, err := tx.Exec(context.Background(), `DROP TABLE flows_run_source CASCADE`)
				return err
			}))
		} else {
			e.reader.DB().Close()
		}
		r := e.do(`{ position { revision } run(id: "runner") { __typename } }`, nil)
		if !r.hasCode("PERSISTENCE_FAILED") || r.Extensions["position"] != nil {
			t.Fatalf("codes %v, extensions %v", r.codes(), r.Extensions)
		}
		for _, er := range r.Errors {
			if strings.Contains(er.Message, "flows_") || strings.Contains(er.Message, "SQLSTATE") || strings.Contains(er.Message, ".db") {
				t.Errorf("message %q shows the store's internals", er.Message)
			}
		}
	})
}
