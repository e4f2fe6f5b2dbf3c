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
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flowsnap/flowsnap/cursor"
	"github.com/flowsnap/flowsnap/endpoint"
	"github.com/flowsnap/flowsnap/engine"
	"github.com/flowsnap/flowsnap/snapshot"
	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/storetest"
)

// attack is one hostile request: how to make it, and what it must be
// answered with.
type attack struct {
	name   string
	method string
	ctype  string
	body   func(source string) []byte // POST body, or GET query string
	code   string                     // extensions.code of the first error
	reason string                     // the refusal counter's label
}

func post(query string, vars map[string]any) func(string) []byte {
	return func(string) []byte {
		b, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
		return b
	}
}

func repeat(n int, f func(i int) string) string {
	var b strings.Builder
	for i := range n {
		b.WriteString(f(i))
		b.WriteByte(' ')
	}
	return b.String()
}

// bodyMarker is put into malformed bodies: no response or log line may
// carry it back.
const bodyMarker = "ECHO-ME-IF-YOU-DARE"

// attacks are the known ways to make one small request cost a server a lot.
func attacks() []attack {
	doubling := "query { ...F0 } " + repeat(26, func(i int) string {
		if i == 25 {
			return fmt.Sprintf("fragment F%d on Query { __typename }", i)
		}
		return fmt.Sprintf("fragment F%d on Query { ...F%d ...F%d }", i, i+1, i+1)
	})
	deep := "{ run(id: \"parent\") { " + strings.Repeat("... on Run { parent { ", 60) + "__typename" + strings.Repeat(" } }", 60) + " } }"
	introspection := "{ __schema { types { fields { type { fields { type { fields { type { fields { type { name } } } } } } } } } } }"
	ids := make([]string, 120_000)
	for i := range ids {
		ids[i] = "x"
	}
	return []attack{
		{name: "2,000 fields of one name with different arguments", body: post("{ "+repeat(2000, func(i int) string { return fmt.Sprintf(`run(id:"%d"){__typename}`, i) })+"}", nil), code: "COMPLEXITY_LIMIT", reason: "size"},
		{name: "a chain of fragments each spreading the next twice, 26 deep", body: post(doubling, nil), code: "COMPLEXITY_LIMIT", reason: "size"},
		{name: "19,000 __typename", body: post("{ "+strings.Repeat("__typename ", 19_000)+"}", nil), code: "COMPLEXITY_LIMIT", reason: "size"},
		{name: "an alias flood", body: post("{ "+repeat(3000, func(i int) string { return fmt.Sprintf("a%d: __typename", i) })+"}", nil), code: "COMPLEXITY_LIMIT", reason: "size"},
		{name: "a directive flood", body: post("{ __typename "+strings.Repeat("@include(if: true) ", 2500)+"}", nil), code: "BAD_USER_INPUT", reason: "validation"},
		{name: "a flood of unknown directives", body: post("{ "+repeat(3000, func(i int) string { return fmt.Sprintf("__typename @d%d", i) })+"}", nil), code: "BAD_USER_INPUT", reason: "validation"},
		{name: "inline fragments past the document size", body: post("{ "+strings.Repeat("... { __typename } ", 3000)+"}", nil), code: "COMPLEXITY_LIMIT", reason: "size"},
		{name: "a fragment cycle", body: post("{ ...A } fragment A on Query { ...B } fragment B on Query { ...A }", nil), code: "BAD_USER_INPUT", reason: "validation"},
		{name: "nested introspection", body: post(introspection, nil), code: "BAD_USER_INPUT", reason: "validation"},
		{name: "fields nested 60 deep", body: post(deep, nil), code: "COMPLEXITY_LIMIT", reason: "depth"},
		{name: "a batch of 120,000 ids in variables", body: post(`query($ids: [ID!]!) { runs(ids: $ids) { __typename } }`, map[string]any{"ids": ids}), code: "BAD_USER_INPUT", reason: "size"},
		{name: "a batch of 40,000 ids in variables", body: post(`query($ids: [ID!]!) { runs(ids: $ids) { ... on Run { id status flowName } } }`, map[string]any{"ids": ids[:40_000]}), code: "BAD_USER_INPUT", reason: "size"},
		{name: "variables past the complexity limit", body: post(`query($ids: [ID!]!) { runs(ids: $ids) { ... on Run { id status flowName children(first: 100) { nodes { __typename } } } } }`, map[string]any{"ids": ids[:1_500]}), code: "COMPLEXITY_LIMIT", reason: "complexity"},
		{name: "variables over the body limit", body: post(`query($v: String) { __typename }`, map[string]any{"v": strings.Repeat("v", 2<<20)}), code: "BAD_USER_INPUT", reason: "size"},
		{name: "a batched (JSON array) body", body: func(string) []byte {
			return []byte(`[{"query":"{ __typename }"},{"query":"{ position { revision } }","variables":{"m":"` + bodyMarker + `"}}]`)
		}, code: "BAD_USER_INPUT", reason: "transport"},
		{name: "a malformed body", body: func(string) []byte { return []byte(`{"query": "{ __typename }", "` + bodyMarker) }, code: "BAD_USER_INPUT", reason: "transport"},
		{name: "a body of the wrong shape", body: func(string) []byte { return []byte(`{"query": ["` + bodyMarker + `"]}`) }, code: "BAD_USER_INPUT", reason: "transport"},
		{name: "a wrong content type", ctype: "text/plain", body: func(string) []byte { return []byte(`{"query":"{ __typename }"}`) }, code: "BAD_USER_INPUT", reason: "transport"},
		{name: "a wrong method", method: http.MethodPut, body: post("{ __typename }", nil), code: "BAD_USER_INPUT", reason: "transport"},
		{name: "a bad URL escape", method: http.MethodGet, body: func(string) []byte { return []byte("query=%zz" + bodyMarker) }, code: "BAD_USER_INPUT", reason: "transport"},
		{name: "a parse error quoting a huge token", body: post(`{ __typename "`+strings.Repeat("t", 200_000)+bodyMarker+`" }`, nil), code: "BAD_USER_INPUT", reason: "parse"},
		{name: "too many tokens", body: post(`{ runs(ids: [`+strings.Repeat(`"x" `, 30_000)+`]) { __typename } }`, nil), code: "BAD_USER_INPUT", reason: "parse"},
		{name: "a document of 30,000 comments", body: post("{ __typename "+strings.Repeat("#\n", 30_000)+"}", nil), code: "BAD_USER_INPUT", reason: "parse"},
		{name: "2,000 fields of one name inside a fragment", body: post("{ ...F } fragment F on Query { "+strings.Repeat("__typename ", 2000)+"}", nil), code: "COMPLEXITY_LIMIT", reason: "size"},
		{name: "a forged cursor with a NUL in its id", body: func(source string) []byte {
			c := cursor.Encode(cursor.Cursor{Source: source, Anchor: "parent", Kind: cursor.Children, Ordinal: 0, Last: "kid\x00' OR 1=1"})
			return post(`query($c: String) { run(id: "parent") { ... on Run { children(first: 1, after: $c) { edges { cursor } } } } }`, map[string]any{"c": c})("")
		}, code: "BAD_CURSOR", reason: "input"},
	}
}

// hostileServer serves a small store through the real handler, with its
// log and metrics kept for the test.
type hostileServer struct {
	url    string
	source string
	reg    *prometheus.Registry
	mu     sync.Mutex
	log    bytes.Buffer
	db     *store.DB
	reader *snapshot.Reader
	// memory, when set, has send measure what each request allocates
	// (runtime.ReadMemStats stops the world, so benchmarks leave it off).
	memory bool
}

func (h *hostileServer) Write(p []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.log.Write(p)
}

func (h *hostileServer) logText() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.log.String()
}

func newHostileServer(t testing.TB, d store.Dialect, opts endpoint.Options) *hostileServer {
	t.Helper()
	dsn := storetest.DSN(t, d)
	db := storetest.OpenDSN(t, dsn, true)
	ctx := context.Background()
	w := engine.NewWriter(db, func() int64 { return createdAt })
	if err := w.Do(ctx, func(tx *engine.Tx) error {
		if err := tx.CreateRun(ctx, engine.NewRun{ID: "parent", FlowName: "fanout"}); err != nil {
			return err
		}
		for i := range 3 {
			if err := tx.CreateRun(ctx, engine.NewRun{ID: fmt.Sprintf("kid-%d", i), FlowName: "leaf",
				Parents: []engine.ParentEdge{{ParentID: "parent", Seq: int64(i)}}}); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	h := &hostileServer{reg: prometheus.NewRegistry(), db: db}
	h.reader = snapshot.NewReader(storetest.OpenReader(t, dsn))
	pos, err := h.reader.Position(ctx)
	if err != nil {
		t.Fatal(err)
	}
	h.source = pos.Source
	opts.Metrics = endpoint.NewMetrics()
	h.reg.MustRegister(opts.Metrics.Collectors()...)
	opts.Logger = slog.New(slog.NewTextHandler(h, nil))
	srv := httptest.NewServer(endpoint.NewHandler(h.reader, opts))
	t.Cleanup(srv.Close)
	h.url = srv.URL
	return h
}

// hostileResult is one answer with what it cost the process.
type hostileResult struct {
	status int
	ctype  string
	body   []byte
	resp   response
	took   time.Duration
	alloc  uint64
}

// hostileRequest is an attack with its body made, to be sent many times.
type hostileRequest struct {
	attack
	payload []byte
}

func (h *hostileServer) prepare(a attack) hostileRequest {
	return hostileRequest{attack: a, payload: a.body(h.source)}
}

func (h *hostileServer) send(t testing.TB, a attack) hostileResult {
	t.Helper()
	return h.do(t, h.prepare(a))
}

func (h *hostileServer) do(t testing.TB, hr hostileRequest) hostileResult {
	t.Helper()
	a, body := hr.attack, hr.payload
	method := a.method
	if method == "" {
		method = http.MethodPost
	}
	var req *http.Request
	if method == http.MethodGet {
		req, _ = http.NewRequest(method, h.url+"?x=1", nil)
		req.URL.RawQuery = string(body)
	} else {
		req, _ = http.NewRequest(method, h.url, bytes.NewReader(body))
		ctype := a.ctype
		if ctype == "" {
			ctype = "application/json"
		}
		req.Header.Set("Content-Type", ctype)
	}
	req.Header.Set("Accept", "application/graphql-response+json")
	var before, after runtime.MemStats
	if h.memory {
		runtime.ReadMemStats(&before)
	}
	start := time.Now()
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(res.Body)
	res.Body.Close()
	took := time.Since(start)
	if h.memory {
		runtime.ReadMemStats(&after)
	}
	if err != nil {
		t.Fatal(err)
	}
	r := hostileResult{status: res.StatusCode, ctype: res.Header.Get("Content-Type"), body: raw, took: took, alloc: after.TotalAlloc - before.TotalAlloc}
	if err := json.Unmarshal(raw, &r.resp); err != nil {
		t.Fatalf("%s: the answer is not JSON (%d): %.300s", a.name, res.StatusCode, raw)
	}
	return r
}

// Generous bounds for a shared, noisy machine; without the limits these
// requests took seconds to minutes and hundreds of megabytes to gigabytes.
const (
	attackTime  = 3 * time.Second
	attackAlloc = 48 << 20
)

func TestHostileRequestsAreRefusedCheaplyWithACode(t *testing.T) {
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		h := newHostileServer(t, d, endpoint.Options{})
		h.memory = true
		counts := map[string]float64{}
		for _, a := range attacks() {
			t.Run(a.name, func(t *testing.T) {
				logBefore := strings.Count(h.logText(), "\n")
				r := h.send(t, a)
				if r.status < 400 || r.status > 499 {
					if a.code == "BAD_CURSOR" && r.status == http.StatusOK {
						// A field error: the request stands, the connection is null.
					} else {
						t.Errorf("status %d, want a 4xx: %.300s", r.status, r.body)
					}
				}
				if len(r.resp.Errors) == 0 {
					t.Fatalf("no error: %.300s", r.body)
				}
				for _, e := range r.resp.Errors {
					if e.Extensions["code"] == nil {
						t.Errorf("error %q has no extensions.code", e.Message)
					}
					if len(e.Message) > 400 {
						t.Errorf("message of %d bytes", len(e.Message))
					}
				}
				if got := r.resp.Errors[0].Extensions["code"]; got != a.code {
					t.Errorf("code %v, want %s: %.300s", got, a.code, r.body)
				}
				if len(r.resp.Errors) > endpoint.DefaultOptions.MaxErrors+1 {
					t.Errorf("%d errors, more than the limit of %d and one summary", len(r.resp.Errors), endpoint.DefaultOptions.MaxErrors)
				}
				if bytes.Contains(r.body, []byte(bodyMarker)) {
					t.Errorf("the answer echoes the request: %.300s", r.body)
				}
				if r.took > attackTime {
					t.Errorf("took %s, more than %s", r.took, attackTime)
				}
				if r.alloc > attackAlloc {
					t.Errorf("allocated %d MiB, more than %d MiB", r.alloc>>20, attackAlloc>>20)
				}
				t.Logf("%d in %s, %d KiB allocated", r.status, r.took.Round(time.Microsecond), r.alloc>>10)
				counts[a.reason]++
				logged := h.logText()
				lines := strings.Split(strings.TrimSpace(logged), "\n")[logBefore:]
				if len(lines) != 1 || !strings.Contains(lines[0], "reason="+a.reason) {
					t.Errorf("log lines for the request: %q, want one with reason=%s", lines, a.reason)
				}
				if strings.Contains(logged, bodyMarker) {
					t.Errorf("the log echoes the request")
				}
			})
		}
		for reason, n := range counts {
			got := (refusals(t, h.reg, reason))
			if got != n {
				t.Errorf("refusals counted for %s: %v, want %v", reason, got, n)
			}
		}
	})
}

// refusals reads one label of the refusal counter from reg.
func refusals(t *testing.T, reg *prometheus.Registry, reason string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "flowsnap_graphql_refused_requests_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "reason" && l.GetValue() == reason {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

func TestCostIsReportedAndMetaFieldsAreFree(t *testing.T) {
	h := newHostileServer(t, store.SQLite, endpoint.Options{ComplexityLimit: 50})
	send := func(q string) hostileResult {
		return h.send(t, attack{name: q, body: post(q, nil)})
	}
	r := send(`{ __typename a: __typename position { __typename revision } }`)
	if r.status != http.StatusOK || len(r.resp.Errors) > 0 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	cost, _ := r.resp.Extensions["cost"].(map[string]any)
	if cost["requested"] != float64(2) || cost["limit"] != float64(50) {
		t.Fatalf("extensions.cost = %v, want requested 2 (position and revision) and limit 50", r.resp.Extensions["cost"])
	}
	// A page of 100 children with one data field costs 1 + 100 × 1 (the
	// run itself, its page, and each child's id).
	r = send(`{ run(id: "parent") { ... on Run { children { nodes { __typename ... on Run { id } } } } } }`)
	if r.status != http.StatusBadRequest || r.resp.Errors[0].Extensions["code"] != "COMPLEXITY_LIMIT" {
		t.Fatalf("%d %s, want 400 COMPLEXITY_LIMIT", r.status, r.body)
	}
	cost, _ = r.resp.Errors[0].Extensions["cost"].(map[string]any)
	if cost["limit"] != float64(50) || cost["requested"].(float64) <= 50 {
		t.Fatalf("the refusal's cost = %v", r.resp.Errors[0].Extensions["cost"])
	}
	if r.ctype != "application/graphql-response+json" {
		t.Fatalf("a refusal under %q", r.ctype)
	}
}

func TestRepeatedStoreFailuresLogAtALimitedRate(t *testing.T) {
	h := newHostileServer(t, store.SQLite, endpoint.Options{})
	h.reader.DB().Close()
	const n = 300
	for range n {
		r := h.send(t, attack{name: "position", body: post(`{ position { revision } }`, nil)})
		if len(r.resp.Errors) == 0 || r.resp.Errors[0].Extensions["code"] != "PERSISTENCE_FAILED" {
			t.Fatalf("%d %s", r.status, r.body)
		}
	}
	lines := strings.Count(h.logText(), "\n")
	// At most ten a second per reason: a few seconds of failures at most.
	if lines > 40 {
		t.Fatalf("%d log lines for %d failed requests", lines, n)
	}
	if got := (refusals(t, h.reg, "store")); got != n {
		t.Fatalf("store failures counted: %v, want %d", got, n)
	}
}

func TestTheTimeoutCoversParsingAndValidation(t *testing.T) {
	h := newHostileServer(t, store.SQLite, endpoint.Options{Timeout: time.Nanosecond})
	// Not in the query cache: it would be parsed and validated, but the
	// request's deadline has passed before that starts.
	r := h.send(t, attack{name: "new document", body: post(`{ position { source } }`, nil)})
	if len(r.resp.Errors) != 1 || r.resp.Errors[0].Extensions["code"] != "TIMEOUT" || r.status != http.StatusBadRequest {
		t.Fatalf("%d %s, want 400 TIMEOUT", r.status, r.body)
	}
	if got := refusals(t, h.reg, "timeout"); got != 1 {
		t.Fatalf("timeouts counted: %v", got)
	}
}

func TestAFullParsingQueueIsRefusedAtOnceAsBusy(t *testing.T) {
	h := newHostileServer(t, store.SQLite, endpoint.Options{MaxParsing: 1, MaxParsingQueue: 1})
	// A body of unknown length is read in a parsing slot, and these bodies
	// do not end until the test says so: whichever request comes first
	// holds the only slot, the next waits in the queue, the last finds it
	// full. The order they arrive in is the machine's.
	type streamed struct {
		w    *io.PipeWriter
		done chan *http.Response
	}
	var reqs []streamed
	answered := make(chan int, 3)
	for i := range 3 {
		pr, pw := io.Pipe()
		req, _ := http.NewRequest(http.MethodPost, h.url, pr)
		req.Header.Set("Content-Type", "application/json")
		s := streamed{pw, make(chan *http.Response, 1)}
		reqs = append(reqs, s)
		go func() {
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				res = &http.Response{Body: io.NopCloser(strings.NewReader(""))}
			}
			s.done <- res
			answered <- i
		}()
	}
	var first int
	select {
	case first = <-answered:
	case <-time.After(30 * time.Second):
		t.Fatal("no request was refused while the slot and the queue were taken")
	}
	refused := <-reqs[first].done
	reqs[first].w.CloseWithError(io.ErrUnexpectedEOF)
	var r response
	if err := json.NewDecoder(refused.Body).Decode(&r); err != nil {
		t.Fatal(err)
	}
	refused.Body.Close()
	if refused.StatusCode != http.StatusServiceUnavailable || refused.Header.Get("Retry-After") == "" ||
		len(r.Errors) != 1 || r.Errors[0].Extensions["code"] != "TIMEOUT" {
		t.Fatalf("%d %+v, want 503 TIMEOUT with Retry-After", refused.StatusCode, r)
	}
	for i, s := range reqs {
		if i == first {
			continue
		}
		go func() {
			_, _ = s.w.Write([]byte(`{"query":"{ __typename }"}`))
			s.w.Close()
		}()
	}
	for i, s := range reqs {
		if i == first {
			continue
		}
		var res *http.Response
		select {
		case res = <-s.done:
		case <-time.After(30 * time.Second):
			t.Fatal("a request that held or waited for the slot was never answered")
		}
		raw, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Errorf("a request that held or waited for the slot: %d %s", res.StatusCode, raw)
		}
	}
	if got := refusals(t, h.reg, "busy"); got != 1 {
		t.Fatalf("busy refusals counted: %v, want 1", got)
	}
}
