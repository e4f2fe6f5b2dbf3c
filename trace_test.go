package main

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/flowsnap/flowsnap/engine"
	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/storetest"
	"github.com/flowsnap/flowsnap/store/vocab"
	"github.com/flowsnap/flowsnap/telemetry"
)

// tracedServer serves a seeded store of dialect d with tracing into an
// in-memory exporter, and returns its address, the exporter, what it
// logs and a writer of the store.
func tracedServer(t *testing.T, d store.Dialect) (string, *tracetest.InMemoryExporter, *syncBuffer, *engine.Writer) {
	t.Helper()
	dsn := storetest.DSN(t, d)
	db := storetest.OpenDSN(t, dsn, true)
	w := engine.NewWriter(db, nil)
	if err := w.CreateRun(context.Background(), engine.NewRun{ID: "traced-1", FlowName: "billing"}); err != nil {
		t.Fatal(err)
	}
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	out := &syncBuffer{}
	addr := serveInProcess(t, dsn, serveOptions{stdout: out, tracing: telemetry.ForTest(tp), liveInterval: 20 * time.Millisecond})
	return addr, exp, out, w
}

// serveInProcess runs serve on dsn with opts on port 0 until the test
// ends, and returns its address.
func serveInProcess(t testing.TB, dsn string, opts serveOptions) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	opts.addr = "127.0.0.1:0"
	opts.ready = func(addr string) { ready <- addr }
	go func() { done <- serve(ctx, dsn, opts) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	select {
	case addr := <-ready:
		return addr
	case err := <-done:
		t.Fatalf("serve stopped: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not start")
	}
	return ""
}

// spans waits until the exporter holds a span that ok accepts, and
// returns all it holds.
func spans(t *testing.T, exp *tracetest.InMemoryExporter, ok func(tracetest.SpanStub) bool) tracetest.SpanStubs {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		all := exp.GetSpans()
		for _, s := range all {
			if ok(s) {
				return all
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no such span among %d: %v", len(all), names(all))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func names(ss tracetest.SpanStubs) []string {
	var out []string
	for _, s := range ss {
		out = append(out, s.Name+" ("+s.InstrumentationScope.Name+")")
	}
	return out
}

// children returns the spans whose parent is p.
func children(ss tracetest.SpanStubs, p tracetest.SpanStub) tracetest.SpanStubs {
	var out tracetest.SpanStubs
	for _, s := range ss {
		if s.Parent.SpanID() == p.SpanContext.SpanID() && s.SpanContext.TraceID() == p.SpanContext.TraceID() {
			out = append(out, s)
		}
	}
	return out
}

// statements returns the statement spans below p: the store's own on
// SQLite, pgx's (through otelpgx, a pipelined batch with a span per
// statement) on PostgreSQL.
func statements(ss tracetest.SpanStubs, p tracetest.SpanStub) tracetest.SpanStubs {
	var out tracetest.SpanStubs
	for _, c := range children(ss, p) {
		if scope := c.InstrumentationScope.Name; scope == "github.com/flowsnap/flowsnap/store" || strings.Contains(scope, "otelpgx") {
			switch {
			case strings.HasPrefix(c.Name, "batch"), strings.Contains(c.Name, "acquire"):
				out = append(out, statements(ss, c)...)
			case c.Name != "connect" && c.Name != "prepare":
				out = append(out, c)
			}
		}
	}
	return out
}

func attr(s tracetest.SpanStub, key string) (string, bool) {
	for _, a := range s.Attributes {
		if string(a.Key) == key {
			return a.Value.Emit(), true
		}
	}
	return "", false
}

func TestTracesFollowAnOperationIntoItsStatements(t *testing.T) {
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		addr, exp, out, _ := tracedServer(t, d)
		post := func(body string, header map[string]string) *http.Response {
			t.Helper()
			req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/graphql", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			for k, v := range header {
				req.Header.Set(k, v)
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			return res
		}
		// A client's trace continues: the server's spans are in its trace,
		// below its span.
		const traceID, parentID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
		res := post(`{"query":"query Dash { position { revision } runs(ids: [\"traced-1\", \"nope\"]) { __typename ... on Run { id status } } }"}`,
			map[string]string{"traceparent": "00-" + traceID + "-" + parentID + "-01", "X-Request-Id": "req-trace-1"})
		if res.StatusCode != 200 || res.Header.Get("X-Request-Id") != "req-trace-1" {
			t.Fatalf("status %d, X-Request-Id %q", res.StatusCode, res.Header.Get("X-Request-Id"))
		}
		all := spans(t, exp, func(s tracetest.SpanStub) bool { return s.Name == "POST /graphql" })
		var server, op tracetest.SpanStub
		for _, s := range all {
			switch s.Name {
			case "POST /graphql":
				server = s
			case "query Dash":
				op = s
			}
		}
		if server.SpanContext.TraceID().String() != traceID || server.Parent.SpanID().String() != parentID || !server.Parent.IsRemote() {
			t.Fatalf("server span %s in trace %s below %s: the traceparent was not continued",
				server.Name, server.SpanContext.TraceID(), server.Parent.SpanID())
		}
		if op.Parent.SpanID() != server.SpanContext.SpanID() || op.SpanContext.TraceID() != server.SpanContext.TraceID() {
			t.Fatalf("operation span %q is not the server span's child: spans %v", op.Name, names(all))
		}
		if id, _ := attr(server, "http.request.header.x-request-id"); id != "req-trace-1" {
			t.Errorf("server span's request id %q", id)
		}
		for key, want := range map[string]string{"graphql.operation.name": "Dash", "graphql.operation.type": "query", "flowsnap.outcome": "ok"} {
			if got, _ := attr(op, key); got != want {
				t.Errorf("operation span %s = %q, want %q", key, got, want)
			}
		}
		for _, key := range []string{"flowsnap.position.revision", "flowsnap.position.source", "flowsnap.cost", "flowsnap.statements"} {
			if v, ok := attr(op, key); !ok || v == "" || v == "0" {
				t.Errorf("operation span %s = %q", key, v)
			}
		}
		stmts := statements(all, op)
		if len(stmts) == 0 {
			t.Fatalf("no statement span below the operation: %v", names(all))
		}
		read := false
		for _, s := range stmts {
			q, _ := attr(s, "db.query.text")
			if q == "" {
				t.Errorf("statement span %q has no db.query.text", s.Name)
			}
			read = read || strings.Contains(q, "flows_runs")
		}
		if !read {
			t.Errorf("no statement span below the operation reads flows_runs: %v", names(stmts))
		}
		// The operation's log line carries the request id and trace id.
		var logged bool
		for _, line := range strings.Split(out.String(), "\n") {
			if strings.Contains(line, "msg=graphql ") && strings.Contains(line, "operation=Dash") {
				logged = strings.Contains(line, "traceId="+traceID) && strings.Contains(line, "requestId=req-trace-1") &&
					strings.Contains(line, "spanId="+op.SpanContext.SpanID().String())
				if !logged {
					t.Errorf("operation log line lacks the ids: %s", line)
				}
			}
		}
		if !logged {
			t.Errorf("no operation log line:\n%s", out.String())
		}

		// Without a traceparent an operation is a trace of its own; with
		// an id no client may send, the request gets one of its own.
		for _, bad := range []string{strings.Repeat("x", telemetry.MaxRequestIDLen+1), "caf\u00e9"} {
			res = post(`{"query":"{ position { revision } }"}`, map[string]string{"X-Request-Id": bad})
			if id := res.Header.Get("X-Request-Id"); len(id) != 32 || id == bad {
				t.Errorf("X-Request-Id %q for a request that sent %q", id, bad)
			}
		}
		exp.Reset()
		res = post(`{"query":"query Other { position { revision } }"}`, nil)
		if id := res.Header.Get("X-Request-Id"); len(id) != 32 {
			t.Errorf("X-Request-Id %q for a request that sent none", id)
		}
		all = spans(t, exp, func(s tracetest.SpanStub) bool { return s.Name == "POST /graphql" })
		var other tracetest.SpanStub
		ops := 0
		for _, s := range all {
			if s.Name == "query Other" {
				other = s
				ops++
			}
		}
		if ops != 1 || other.SpanContext.TraceID().String() == traceID || other.Parent.IsRemote() {
			t.Fatalf("%d operation spans, trace %s: %v", ops, other.SpanContext.TraceID(), names(all))
		}
		// The operation's trace is a tree with the request's span at its
		// root.
		inTrace := map[trace.SpanID]bool{}
		for _, s := range all {
			if s.SpanContext.TraceID() == other.SpanContext.TraceID() {
				inTrace[s.SpanContext.SpanID()] = true
			}
		}
		roots := 0
		for _, s := range all {
			switch {
			case s.SpanContext.TraceID() != other.SpanContext.TraceID():
			case !s.Parent.IsValid():
				roots++
				if s.Name != "POST /graphql" {
					t.Errorf("the operation's trace has root %s", s.Name)
				}
			case !inTrace[s.Parent.SpanID()]:
				t.Errorf("span %s's parent is not in the operation's trace", s.Name)
			}
		}
		if roots != 1 || len(statements(all, other)) == 0 {
			t.Errorf("the operation's trace has %d roots and %d statement spans below the operation", roots, len(statements(all, other)))
		}
	})
}

func TestTracesOfASubscriptionHaveASpanPerEvent(t *testing.T) {
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		addr, exp, out, w := tracedServer(t, d)
		// subscribe opens the subscription and returns its events' data;
		// nil when the server's watcher has not read the store yet
		// (UNAVAILABLE), which a client tries again after.
		subscribe := func(ctx context.Context) <-chan json.RawMessage {
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/graphql",
				strings.NewReader(`{"query":"subscription Watch { run(id: \"traced-1\") { __typename ... on Run { id status } } }"}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "text/event-stream")
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			got := make(chan json.RawMessage, 10)
			go func() {
				defer res.Body.Close()
				defer close(got)
				sc := bufio.NewScanner(res.Body)
				for sc.Scan() {
					if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
						got <- json.RawMessage(data)
					}
				}
			}()
			return got
		}
		wait := func(got <-chan json.RawMessage) json.RawMessage {
			t.Helper()
			select {
			case ev := <-got:
				return ev
			case <-time.After(20 * time.Second):
				t.Fatalf("no event:\n%s", out.String())
			}
			return nil
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		got := subscribe(ctx)
		for first := wait(got); strings.Contains(string(first), "UNAVAILABLE"); first = wait(got) {
			cancel()
			time.Sleep(20 * time.Millisecond)
			ctx, cancel = context.WithCancel(context.Background())
			defer cancel()
			got = subscribe(ctx)
		}
		// A change makes a second event.
		if err := w.Start(context.Background(), "traced-1", workerOwner); err != nil {
			t.Fatal(err)
		}
		if ev := wait(got); !strings.Contains(string(ev), "RUNNING") {
			t.Fatalf("second event %s", ev)
		}
		cancel()
		// The subscription's request span ends once the server has seen
		// the client go: its events are its children.
		all := spans(t, exp, func(s tracetest.SpanStub) bool {
			return s.Name == "POST /graphql" && len(children(exp.GetSpans(), s)) >= 2
		})
		var server tracetest.SpanStub
		var evs tracetest.SpanStubs
		for _, s := range all {
			if s.Name != "POST /graphql" {
				continue
			}
			var mine tracetest.SpanStubs
			for _, c := range children(all, s) {
				if c.Name == "subscription event run" {
					if ended, _ := attr(c, "flowsnap.subscription.ended"); ended != "true" {
						mine = append(mine, c)
					}
				}
			}
			if len(mine) > len(evs) {
				server, evs = s, mine
			}
		}
		if len(evs) != 2 {
			t.Fatalf("%d event spans below the request's span for 2 events: %v", len(evs), names(all))
		}
		for i, ev := range evs {
			if len(statements(all, ev)) == 0 {
				t.Errorf("event %d: no statement span below it", i)
			}
			if rev, ok := attr(ev, "flowsnap.position.revision"); !ok || rev == "0" {
				t.Errorf("event %d: position revision %q", i, rev)
			}
			if len(ev.Events) == 0 || ev.Events[0].Name != "read" {
				t.Errorf("event %d: no read event on its span", i)
			}
		}
		if evs[0].SpanContext.TraceID() != server.SpanContext.TraceID() {
			t.Errorf("the events are not in the request's trace")
		}
	})
}

var workerOwner = vocab.Owner{HostID: "host-1", PID: 4242, Nonce: "nonce-1"}
