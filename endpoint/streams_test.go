package endpoint_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/flowsnap/flowsnap/endpoint"
	"github.com/flowsnap/flowsnap/engine"
	"github.com/flowsnap/flowsnap/live"
	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/storetest"
)

// smallReceiveBuffer makes a dialed socket's receive buffer small, so that
// a client that reads nothing stops the server's writes after a few KiB.
func smallReceiveBuffer(_, _ string, c syscall.RawConn) error {
	return c.Control(func(fd uintptr) {
		_ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
	})
}

// dialerFrom dials from ip, a loopback address: each is a client of its
// own to the per-client limits. small shrinks the receive buffer.
func dialerFrom(ip string, small bool) *net.Dialer {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 10 * time.Second}
	if small {
		d.Control = smallReceiveBuffer
	}
	return d
}

// clientFrom is an HTTP client whose connections come from ip.
func clientFrom(ip string, small bool) *http.Client {
	return &http.Client{Transport: &http.Transport{DialContext: dialerFrom(ip, small).DialContext}}
}

// rawSSE posts an SSE subscription on a TCP connection of its own from ip
// and reads nothing of its answer.
func rawSSE(t *testing.T, addr, ip, query string) net.Conn {
	t.Helper()
	conn, err := dialerFrom(ip, true).Dial("tcp", addr)
	must(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	body, _ := json.Marshal(map[string]any{"query": query})
	_, err = fmt.Fprintf(conn, "POST /graphql HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: text/event-stream\r\nContent-Length: %d\r\n\r\n%s", addr, len(body), body)
	must(t, err)
	return conn
}

// statusOf reads the status line of a raw request's answer, and for a
// refusal its body's first KiB.
func statusOf(t *testing.T, conn net.Conn) (status int, head string) {
	t.Helper()
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	defer func() { _ = conn.SetReadDeadline(time.Time{}) }()
	r := bufio.NewReader(conn)
	line, err := r.ReadString('\n')
	if err != nil {
		t.Fatalf("reading the status line: %v", err)
	}
	if _, err := fmt.Sscanf(line, "HTTP/1.1 %d", &status); err != nil {
		t.Fatalf("status line %q: %v", line, err)
	}
	if status != http.StatusOK {
		buf := make([]byte, 1024)
		n, _ := r.Read(buf)
		head = string(buf[:n])
	}
	return status, head
}

const positionSubscription = `subscription { position { revision } }`

// TestOneClientCannotTakeEveryStream opens 1,000 SSE streams from one
// client that never reads them: it gets its share of places, the rest are
// refused before their stream begins, and another client still subscribes
// over both transports.
func TestOneClientCannotTakeEveryStream(t *testing.T) {
	t.Parallel()
	e := liveFixture(t, store.SQLite, live.Options{}, endpoint.Options{MaxConnectionsPerClient: 10}, "r1")
	addr := strings.TrimPrefix(e.url, "http://")
	conns := make([]net.Conn, 1000)
	for i := range conns {
		conns[i] = rawSSE(t, addr, "127.0.0.1", positionSubscription)
	}
	opened, refused := 0, 0
	for _, c := range conns {
		switch status, head := statusOf(t, c); status {
		case http.StatusOK:
			opened++
		case http.StatusServiceUnavailable:
			if !strings.Contains(head, "SUBSCRIPTION_LIMIT") || !strings.Contains(head, "this client already holds 10 streams") {
				t.Fatalf("a refusal without its code and reason: %q", head)
			}
			refused++
		default:
			t.Fatalf("status %d", status)
		}
	}
	if opened != 10 || refused != 990 {
		t.Fatalf("%d streams opened and %d refused, want 10 and 990", opened, refused)
	}
	other := clientFrom("127.0.0.2", false)
	s := postSSEVia(t, e.url, other, map[string]any{"query": positionSubscription})
	if ev := next(t, s.events); ev.code() != "" || ev.Extensions.Position == nil {
		t.Fatalf("another client over SSE: %+v", ev)
	}
	ws, _ := dialWSVia(t, e.url, other).subscribe("p", positionSubscription, nil)
	if ev := next(t, ws); ev.code() != "" || ev.Extensions.Position == nil {
		t.Fatalf("another client over WebSocket: %+v", ev)
	}
}

// TestStreamsAreBoundedInAll refuses the stream past MaxConnections, from
// any client and over either transport, before it is upgraded.
func TestStreamsAreBoundedInAll(t *testing.T) {
	t.Parallel()
	e := liveFixture(t, store.SQLite, live.Options{}, endpoint.Options{MaxConnections: 2}, "r1")
	dialWSVia(t, e.url, clientFrom("127.0.0.2", false))
	s := postSSEVia(t, e.url, clientFrom("127.0.0.3", false), map[string]any{"query": positionSubscription})
	next(t, s.events)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(e.url, "http")+"/graphql",
		&websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}, HTTPClient: clientFrom("127.0.0.4", false)})
	if err == nil || resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("a third stream over WebSocket: %v, %+v; want 503", err, resp)
	}
	over := postSSEVia(t, e.url, clientFrom("127.0.0.4", false), map[string]any{"query": positionSubscription})
	if over.status != http.StatusServiceUnavailable {
		t.Fatalf("a third stream over SSE: status %d, want 503", over.status)
	}
	waitClosed(t, over.done, "the refused stream's end")
	if !strings.Contains(e.logs.String(), "the server already serves 2 streams") {
		t.Errorf("the refusal is not logged with its reason:\n%s", e.logs.String())
	}
}

// TestSubscriptionsAreBoundedPerClient lets one client hold
// MaxSubscriptionsPerClient subscriptions over all its streams, and
// another client its own.
func TestSubscriptionsAreBoundedPerClient(t *testing.T) {
	t.Parallel()
	e := liveFixture(t, store.SQLite, live.Options{}, endpoint.Options{MaxSubscriptionsPerClient: 2}, "r1")
	c := dialWS(t, e.url)
	a, _ := c.subscribe("a", positionSubscription, nil)
	b, _ := c.subscribe("b", positionSubscription, nil)
	next(t, a)
	next(t, b)
	over, overDone := c.subscribe("c", positionSubscription, nil)
	if ev := next(t, over); ev.code() != "SUBSCRIPTION_LIMIT" || !strings.Contains(ev.Errors[0].Message, "this client already holds 2 subscriptions") {
		t.Fatalf("a third subscription over the same connection: %+v", ev)
	}
	waitClosed(t, overDone, "the refused subscription's complete")
	s := subscribeSSE(t, e.url, positionSubscription, nil)
	if ev := next(t, s.events); ev.code() != "SUBSCRIPTION_LIMIT" {
		t.Fatalf("a third subscription over SSE: %+v", ev)
	}
	other := postSSEVia(t, e.url, clientFrom("127.0.0.2", false), map[string]any{"query": positionSubscription})
	if ev := next(t, other.events); ev.code() != "" {
		t.Fatalf("another client's subscription: %+v", ev)
	}
}

// TestANeverReadingStreamIsDroppedAtItsWriteDeadline serves a change feed
// far larger than the sockets' buffers to a client that reads nothing: its
// stream is dropped once a write waits StreamWriteTimeout, and its place
// (the client's only one) is free again.
func TestANeverReadingStreamIsDroppedAtItsWriteDeadline(t *testing.T) {
	t.Parallel()
	e := liveFixture(t, store.SQLite, live.Options{}, endpoint.Options{}, "r1")
	ctx := context.Background()
	must(t, e.w.Do(ctx, func(tx *engine.Tx) error {
		for i := range 3000 {
			if err := tx.CreateRun(ctx, engine.NewRun{ID: fmt.Sprintf("run-%04d-%s", i, strings.Repeat("x", 60)), FlowName: "a-flow-with-a-long-name"}); err != nil {
				return err
			}
		}
		return nil
	}))
	srv := httptest.NewUnstartedServer(endpoint.NewHandler(e.reader, endpoint.Options{Live: e.watcher,
		StreamWriteTimeout: time.Second, MaxConnectionsPerClient: 1}))
	srv.Config.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetWriteBuffer(4096)
		}
		return ctx
	}
	srv.Start()
	t.Cleanup(srv.Close)
	const feed = `subscription { changes(since: 0) { nextRevision changes { runId revision run { ... on Run { id flowName status createdAt } } } } }`
	addr := srv.Listener.Addr().String()
	refusedThenFreed := func(t *testing.T) {
		t.Helper()
		if s := postSSEVia(t, srv.URL, http.DefaultClient, map[string]any{"query": positionSubscription}); s.status != http.StatusServiceUnavailable {
			t.Fatalf("while the stream holds the client's place: status %d, want 503", s.status)
		}
		deadline := time.Now().Add(20 * time.Second)
		for {
			s := postSSEVia(t, srv.URL, http.DefaultClient, map[string]any{"query": positionSubscription})
			if s.status == http.StatusOK {
				if ev := next(t, s.events); ev.code() != "" {
					t.Fatalf("the place freed: %+v", ev)
				}
				s.cancel()
				waitClosed(t, s.done, "the stream's end")
				return
			}
			if time.Now().After(deadline) {
				t.Fatal("the never-reading stream still holds its place after 20s")
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	t.Run("over SSE", func(t *testing.T) {
		conn := rawSSE(t, addr, "127.0.0.1", feed)
		defer conn.Close()
		// The stream began (reading its first few KiB, no more).
		if status, head := statusOf(t, conn); status != http.StatusOK {
			t.Fatalf("status %d: %s", status, head)
		}
		refusedThenFreed(t)
	})
	t.Run("over WebSocket", func(t *testing.T) {
		dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		// The server frees the place of the SSE subtest's last stream after
		// its client saw the stream end: until then a dial is refused.
		var conn *websocket.Conn
		for {
			c, res, err := websocket.Dial(dctx, "ws"+strings.TrimPrefix(srv.URL, "http")+"/graphql",
				&websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}, HTTPClient: clientFrom("127.0.0.1", true)})
			if err == nil {
				conn = c
				break
			}
			if res == nil || res.StatusCode != http.StatusServiceUnavailable || dctx.Err() != nil {
				t.Fatal(err)
			}
			time.Sleep(50 * time.Millisecond)
		}
		defer conn.CloseNow()
		must(t, conn.Write(dctx, websocket.MessageText, []byte(`{"type":"connection_init"}`)))
		if _, ack, err := conn.Read(dctx); err != nil || !strings.Contains(string(ack), "connection_ack") {
			t.Fatalf("init: %s, %v", ack, err)
		}
		sub, _ := json.Marshal(map[string]any{"id": "1", "type": "subscribe", "payload": map[string]any{"query": feed}})
		must(t, conn.Write(dctx, websocket.MessageText, sub))
		refusedThenFreed(t)
	})
}

// wsRaw dials a graphql-transport-ws connection that the test drives
// message by message.
func wsRaw(t *testing.T, base string) *websocket.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(base, "http")+"/graphql",
		&websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}})
	must(t, err)
	conn.SetReadLimit(1 << 24)
	t.Cleanup(func() { _ = conn.CloseNow() })
	return conn
}

// readUntilClosed reads until the connection closes and returns its close
// status (-1 when it did not close within 30s).
func readUntilClosed(t *testing.T, conn *websocket.Conn) (websocket.StatusCode, []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var got []string
	for {
		_, b, err := conn.Read(ctx)
		if err != nil {
			return websocket.CloseStatus(err), got
		}
		got = append(got, string(b))
	}
}

func TestAConnectionInitIsSmall(t *testing.T) {
	t.Parallel()
	e := liveFixture(t, store.SQLite, live.Options{}, endpoint.Options{}, "r1")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	initOf := func(n int) []byte {
		b, _ := json.Marshal(map[string]any{"type": "connection_init", "payload": map[string]any{"authorization": "Bearer " + strings.Repeat("x", n)}})
		return b
	}
	t.Run("one of 16 KiB or less is taken", func(t *testing.T) {
		conn := wsRaw(t, e.url)
		msg := initOf(16<<10 - 100)
		if len(msg) > 16<<10 {
			t.Fatalf("the message is %d bytes", len(msg))
		}
		must(t, conn.Write(ctx, websocket.MessageText, msg))
		if _, ack, err := conn.Read(ctx); err != nil || !strings.Contains(string(ack), "connection_ack") {
			t.Fatalf("got %s, %v; want connection_ack", ack, err)
		}
	})
	t.Run("a larger one closes the connection with 4400", func(t *testing.T) {
		conn := wsRaw(t, e.url)
		must(t, conn.Write(ctx, websocket.MessageText, initOf(1<<20-100)))
		status, got := readUntilClosed(t, conn)
		if status != 4400 || len(got) != 0 {
			t.Fatalf("closed with %d after %q, want 4400 and no message", status, got)
		}
	})
	t.Run("a later message may be as large as a request body", func(t *testing.T) {
		conn := wsRaw(t, e.url)
		must(t, conn.Write(ctx, websocket.MessageText, []byte(`{"type":"connection_init"}`)))
		if _, ack, err := conn.Read(ctx); err != nil || !strings.Contains(string(ack), "connection_ack") {
			t.Fatalf("init: %s, %v", ack, err)
		}
		query := positionSubscription + strings.Repeat(" ", 100<<10)
		sub, _ := json.Marshal(map[string]any{"id": "1", "type": "subscribe", "payload": map[string]any{"query": query}})
		must(t, conn.Write(ctx, websocket.MessageText, sub))
		_, b, err := conn.Read(ctx)
		if err != nil || !strings.Contains(string(b), `"next"`) || !strings.Contains(string(b), "revision") {
			t.Fatalf("got %s, %v; want an event", b, err)
		}
	})
}

// TestPingsBeyondTheRateWaitTheirTurn floods a connection with pings: the
// burst is answered at once, the rest no faster than the rate, and none is
// lost; the connection's next message waits behind them.
func TestPingsBeyondTheRateWaitTheirTurn(t *testing.T) {
	t.Parallel()
	e := liveFixture(t, store.SQLite, live.Options{}, endpoint.Options{MaxPingsPerSecond: 5}, "r1")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	conn := wsRaw(t, e.url)
	must(t, conn.Write(ctx, websocket.MessageText, []byte(`{"type":"connection_init"}`)))
	if _, ack, err := conn.Read(ctx); err != nil || !strings.Contains(string(ack), "connection_ack") {
		t.Fatalf("init: %s, %v", ack, err)
	}
	pongs := make(chan time.Time, 100)
	go func() {
		for {
			_, b, err := conn.Read(ctx)
			if err != nil {
				close(pongs)
				return
			}
			if strings.Contains(string(b), `"pong"`) {
				pongs <- time.Now()
			}
		}
	}()
	for range 5 {
		must(t, conn.Write(ctx, websocket.MessageText, []byte(`{"type":"ping"}`)))
	}
	for i := range 5 {
		if _, ok := <-pongs; !ok {
			t.Fatalf("the connection ended before pong %d of the burst", i)
		}
	}
	sent := time.Now()
	for range 10 {
		must(t, conn.Write(ctx, websocket.MessageText, []byte(`{"type":"ping"}`)))
	}
	var within int
	for i := range 10 {
		at, ok := <-pongs
		if !ok {
			t.Fatalf("the connection ended after %d of the flood's pongs", i)
		}
		if at.Sub(sent) < time.Second {
			within++
		}
	}
	// Five a second, and one for the clock's grain.
	if within > 6 {
		t.Errorf("%d pongs within a second of a flood past the burst, want at most 6", within)
	}
	// Another connection of the same client is not held back by it.
	c := dialWS(t, e.url)
	ws, _ := c.subscribe("p", positionSubscription, nil)
	if ev := next(t, ws); ev.code() != "" {
		t.Fatalf("another connection: %+v", ev)
	}
}

// subscribeBoth starts the subscription over WebSocket and over SSE.
func subscribeBoth(t *testing.T, base, query string) map[string]struct {
	events <-chan event
	done   <-chan struct{}
} {
	ws, wsDone := dialWS(t, base).subscribe("s", query, nil)
	s := subscribeSSE(t, base, query, nil)
	return map[string]struct {
		events <-chan event
		done   <-chan struct{}
	}{"WebSocket": {ws, wsDone}, "SSE": {s.events, s.done}}
}

func TestAnEventOverALimitEndsItsSubscription(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Run("an event larger than max-response-bytes is COMPLEXITY_LIMIT", func(t *testing.T) {
			e := liveFixture(t, d, live.Options{}, endpoint.Options{MaxResponseBytes: 2000}, "r1")
			since := e.revision(t)
			streams := subscribeBoth(t, e.url, fmt.Sprintf(`subscription { changes(since: %d) { nextRevision changes { runId revision } } }`, since))
			for name, s := range streams {
				if ev := next(t, s.events); ev.code() != "" {
					t.Fatalf("%s: the first, small event: %+v", name, ev)
				}
			}
			ctx := context.Background()
			must(t, e.w.Do(ctx, func(tx *engine.Tx) error {
				for i := range 100 {
					if err := tx.CreateRun(ctx, engine.NewRun{ID: fmt.Sprintf("big-%03d", i), FlowName: "live"}); err != nil {
						return err
					}
				}
				return nil
			}))
			for name, s := range streams {
				ev := next(t, s.events)
				if ev.code() != "COMPLEXITY_LIMIT" || !strings.Contains(ev.Errors[0].Message, "larger than 2000 bytes") || len(ev.Data) != 0 {
					t.Fatalf("%s: the large event: %+v", name, ev)
				}
				waitClosed(t, s.done, name+": the subscription's end")
			}
		})
		t.Run("an event over its time is TIMEOUT", func(t *testing.T) {
			e := liveFixture(t, d, live.Options{}, endpoint.Options{EventTimeout: time.Microsecond}, "r1")
			ctx := context.Background()
			must(t, e.w.Do(ctx, func(tx *engine.Tx) error {
				for i := range 1000 {
					if err := tx.CreateRun(ctx, engine.NewRun{ID: fmt.Sprintf("slow-%04d", i), FlowName: "live"}); err != nil {
						return err
					}
				}
				return nil
			}))
			streams := subscribeBoth(t, e.url, `subscription { changes(since: 0) { nextRevision changes { runId revision run { ... on Run { id status } } } } }`)
			for name, s := range streams {
				ev := next(t, s.events)
				if ev.code() != "TIMEOUT" || !strings.Contains(ev.Errors[0].Message, "did not finish within 1µs") {
					t.Fatalf("%s: %+v", name, ev)
				}
				waitClosed(t, s.done, name+": the subscription's end")
			}
			if !strings.Contains(e.logs.String(), "over a limit: TIMEOUT") {
				t.Errorf("the subscription's end does not say why:\n%s", e.logs.String())
			}
		})
	})
}

// TestEverySubscriptionFieldIsCosted refuses, over both transports, a
// subscription of each field whose events would cost more than the limit,
// and serves the same field with a selection within it.
func TestEverySubscriptionFieldIsCosted(t *testing.T) {
	t.Parallel()
	e := liveFixture(t, store.SQLite, live.Options{}, endpoint.Options{ComplexityLimit: 50}, "r1")
	for _, c := range []struct{ field, over, within string }{
		// An event of position is one object: only a selection past the
		// limit costs more.
		{"position", `position { revision ` + aliases(60) + ` }`, `position { revision }`},
		{"run", `run(id: "r1") { ... on Run { children(first: 100) { nodes { __typename } } } }`, `run(id: "r1") { __typename }`},
		// An event of changes is up to 1,000 of them: any selection of
		// one costs more than 50.
		{"changes", `changes(since: 0) { nextRevision }`, ``},
	} {
		// Refused before it runs, over WebSocket it is the error message
		// of graphql-transport-ws, which ends the operation.
		ws := dialWS(t, e.url)
		_, done := ws.subscribe("s", `subscription { `+c.over+` }`, nil)
		waitClosed(t, done, c.field+": the refused subscription's end")
		ws.mu.Lock()
		var errs string
		for _, e := range ws.errs["s"] {
			errs += string(e)
		}
		ws.mu.Unlock()
		if !strings.Contains(errs, "COMPLEXITY_LIMIT") {
			t.Errorf("%s over WebSocket: %s, want COMPLEXITY_LIMIT", c.field, errs)
		}
		s := subscribeSSE(t, e.url, `subscription { `+c.over+` }`, nil)
		if ev := next(t, s.events); ev.code() != "COMPLEXITY_LIMIT" {
			t.Errorf("%s over SSE: %+v, want COMPLEXITY_LIMIT", c.field, ev)
		}
		if c.within == "" {
			continue
		}
		for name, s := range subscribeBoth(t, e.url, `subscription { `+c.within+` }`) {
			if ev := next(t, s.events); ev.code() != "" {
				t.Errorf("%s within the limit over %s: %+v", c.field, name, ev)
			}
		}
	}
}

// aliases is n aliased fields of Position.
func aliases(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "r%d: revision ", i)
	}
	return b.String()
}

// String shows an event as its JSON, for failure messages.
func (ev event) String() string {
	b, _ := json.Marshal(ev)
	return string(b)
}
