package endpoint_test

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/prometheus/client_golang/prometheus"
	_ "modernc.org/sqlite"

	"github.com/flowsnap/flowsnap/endpoint"
	"github.com/flowsnap/flowsnap/engine"
	"github.com/flowsnap/flowsnap/live"
	"github.com/flowsnap/flowsnap/snapshot"
	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/storetest"
	"github.com/flowsnap/flowsnap/store/vocab"
)

// liveEnv is a store with the engine's writer on it, served with
// subscriptions by a watcher of its own.
type liveEnv struct {
	t       *testing.T
	dsn     string
	db      *store.DB
	w       *engine.Writer
	reader  *snapshot.Reader
	watcher *live.Watcher
	url     string
	stop    context.CancelFunc
	stopped chan struct{}
	logs    *syncBuffer

	mu    sync.Mutex
	ticks []int // statements of each watcher tick
}

var liveOwner = vocab.Owner{HostID: "host-l", PID: 77, Nonce: "nonce-l"}

// liveFixture creates runs ids and serves the store. The reader's store is
// opened read-only, as flowsnap serve does, with a PostgreSQL
// application_name of its own so that its sessions can be found.
func liveFixture(t *testing.T, d store.Dialect, wopts live.Options, gopts endpoint.Options, ids ...string) *liveEnv {
	t.Helper()
	dsn := storetest.DSN(t, d)
	e := &liveEnv{t: t, dsn: dsn, db: storetest.OpenDSN(t, dsn, true), logs: &syncBuffer{}}
	e.w = engine.NewWriter(e.db, nil)
	ctx := context.Background()
	must(t, e.w.Do(ctx, func(tx *engine.Tx) error {
		for _, id := range ids {
			if err := tx.CreateRun(ctx, engine.NewRun{ID: id, FlowName: "live"}); err != nil {
				return err
			}
		}
		return nil
	}))
	rdsn := dsn
	if d == store.Postgres {
		u, err := url.Parse(dsn)
		must(t, err)
		q := u.Query()
		q.Set("application_name", e.appName())
		u.RawQuery = q.Encode()
		rdsn = u.String()
	}
	e.reader = snapshot.NewReader(storetest.OpenReader(t, rdsn))
	if wopts.Interval == 0 {
		wopts.Interval = 20 * time.Millisecond
	}
	wopts.OnTick = func(n int) {
		e.mu.Lock()
		e.ticks = append(e.ticks, n)
		e.mu.Unlock()
	}
	e.watcher = live.New(e.reader, wopts)
	wctx, stop := context.WithCancel(ctx)
	e.stop, e.stopped = stop, make(chan struct{})
	go func() {
		defer close(e.stopped)
		_ = e.watcher.Run(wctx)
	}()
	t.Cleanup(func() { stop(); <-e.stopped })
	select {
	case <-e.watcher.Ready():
	case <-time.After(30 * time.Second):
		t.Fatal("the watcher did not read the store's revision")
	}
	gopts.Live = e.watcher
	gopts.Logger = slog.New(slog.NewTextHandler(e.logs, nil))
	srv := httptest.NewServer(endpoint.NewHandler(e.reader, gopts))
	t.Cleanup(srv.Close)
	e.url = srv.URL
	return e
}

func (e *liveEnv) appName() string {
	return "flowsnap_live_" + fmt.Sprintf("%x", []byte(e.t.Name()))[:20]
}

// syncBuffer is a log destination safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b.Reset()
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// event is one subscription payload: a GraphQL response.
type event struct {
	Data   map[string]json.RawMessage `json:"data"`
	Errors []struct {
		Message    string         `json:"message"`
		Extensions map[string]any `json:"extensions"`
	} `json:"errors"`
	Extensions struct {
		Position *snapshot.Position `json:"position"`
	} `json:"extensions"`
}

func (ev event) code() string {
	if len(ev.Errors) == 0 {
		return ""
	}
	c, _ := ev.Errors[0].Extensions["code"].(string)
	return c
}

// runOf decodes the run field of a run(id) event.
func (ev event) run(t *testing.T) (typename, status string, revision int64, deleted bool) {
	t.Helper()
	var v struct {
		Typename string `json:"__typename"`
		Status   string `json:"status"`
		Revision int64  `json:"revision"`
		Deleted  bool   `json:"deleted"`
	}
	if err := json.Unmarshal(ev.Data["run"], &v); err != nil {
		t.Fatalf("decoding the run of %v: %v", ev, err)
	}
	return v.Typename, v.Status, v.Revision, v.Deleted
}

// wsClient speaks graphql-transport-ws over one WebSocket connection.
type wsClient struct {
	t     testing.TB
	conn  *websocket.Conn
	mu    sync.Mutex
	subs  map[string]chan event
	done  map[string]chan struct{}
	pings chan struct{}
	errs  map[string][]json.RawMessage
}

type wsMessage struct {
	ID      string          `json:"id,omitempty"`
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload,omitempty"`
}

// dialWS opens a connection, initialises it and reads its messages in the
// background until the test ends.
func dialWS(t testing.TB, base string) *wsClient {
	t.Helper()
	return dialWSVia(t, base, nil)
}

// dialWSVia dials as dialWS does, through client (nil: the default).
func dialWSVia(t testing.TB, base string, client *http.Client) *wsClient {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(base, "http")+"/graphql",
		&websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}, HTTPClient: client})
	if err != nil {
		t.Fatalf("dialing: %v", err)
	}
	if got := resp.Header.Get("Sec-WebSocket-Protocol"); got != "graphql-transport-ws" {
		t.Fatalf("the server chose subprotocol %q", got)
	}
	conn.SetReadLimit(1 << 24)
	c := &wsClient{t: t, conn: conn, subs: map[string]chan event{}, done: map[string]chan struct{}{},
		pings: make(chan struct{}, 100), errs: map[string][]json.RawMessage{}}
	c.send(wsMessage{Type: "connection_init", Payload: json.RawMessage(`{}`)})
	var ack wsMessage
	c.read(ctx, &ack)
	if ack.Type != "connection_ack" {
		t.Fatalf("got %q, want connection_ack", ack.Type)
	}
	go c.loop()
	t.Cleanup(func() { _ = conn.Close(websocket.StatusNormalClosure, "") })
	return c
}

func (c *wsClient) send(m wsMessage) {
	b, _ := json.Marshal(m)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.conn.Write(ctx, websocket.MessageText, b); err != nil {
		c.t.Errorf("writing to the WebSocket: %v", err)
	}
}

func (c *wsClient) read(ctx context.Context, m *wsMessage) bool {
	_, b, err := c.conn.Read(ctx)
	if err != nil {
		return false
	}
	if err := json.Unmarshal(b, m); err != nil {
		c.t.Errorf("decoding %s: %v", b, err)
		return false
	}
	return true
}

func (c *wsClient) loop() {
	for {
		var m wsMessage
		if !c.read(context.Background(), &m) {
			c.mu.Lock()
			for id, d := range c.done {
				close(d)
				delete(c.done, id)
			}
			c.mu.Unlock()
			return
		}
		c.mu.Lock()
		switch m.Type {
		case "next":
			var ev event
			if err := json.Unmarshal(m.Payload, &ev); err != nil {
				c.t.Errorf("decoding %s: %v", m.Payload, err)
			}
			ch := c.subs[m.ID]
			c.mu.Unlock()
			ch <- ev
			continue
		case "error":
			c.errs[m.ID] = append(c.errs[m.ID], m.Payload)
			fallthrough
		case "complete":
			if d := c.done[m.ID]; d != nil {
				close(d)
				delete(c.done, m.ID)
			}
		case "ping":
			select {
			case c.pings <- struct{}{}:
			default:
			}
			c.mu.Unlock()
			c.send(wsMessage{Type: "pong"})
			continue
		}
		c.mu.Unlock()
	}
}

// subscribe starts a subscription and returns its events and a channel
// closed when it completes.
func (c *wsClient) subscribe(id, query string, vars map[string]any) (<-chan event, <-chan struct{}) {
	ch, done := make(chan event, 1000), make(chan struct{})
	c.mu.Lock()
	c.subs[id], c.done[id] = ch, done
	c.mu.Unlock()
	payload, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	c.send(wsMessage{ID: id, Type: "subscribe", Payload: payload})
	return ch, done
}

// sseStream is one subscription over Server-Sent Events.
type sseStream struct {
	events chan event
	done   chan struct{} // closed at "event: complete" or the end of the body
	pings  chan struct{}
	cancel context.CancelFunc
	header http.Header
	status int
}

// subscribeSSE posts a subscription that accepts text/event-stream and
// reads its events in the background.
func subscribeSSE(t *testing.T, base, query string, vars map[string]any) *sseStream {
	t.Helper()
	return postSSE(t, base, map[string]any{"query": query, "variables": vars})
}

// postSSE posts a subscription request of any body, as subscribeSSE does.
func postSSE(t *testing.T, base string, request map[string]any) *sseStream {
	t.Helper()
	return postSSEVia(t, base, http.DefaultClient, request)
}

// postSSEVia posts as postSSE does, through client.
func postSSEVia(t *testing.T, base string, client *http.Client, request map[string]any) *sseStream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	body, _ := json.Marshal(request)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/graphql", bytes.NewReader(body))
	must(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := client.Do(req)
	if err != nil {
		cancel()
		t.Fatalf("posting the subscription: %v", err)
	}
	s := &sseStream{events: make(chan event, 1000), done: make(chan struct{}), pings: make(chan struct{}, 100), cancel: cancel, header: resp.Header, status: resp.StatusCode}
	t.Cleanup(cancel)
	go func() {
		defer close(s.done)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<24)
		var name string
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				name = strings.TrimPrefix(line, "event: ")
				if name == "complete" {
					return
				}
			case strings.HasPrefix(line, "data: ") && name == "next":
				var ev event
				if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &ev); err != nil {
					t.Errorf("decoding %s: %v", line, err)
				}
				s.events <- ev
			case line == ": ping":
				select {
				case s.pings <- struct{}{}:
				default:
				}
			}
		}
	}()
	return s
}

// next waits for the next event.
func next(t testing.TB, ch <-chan event) event {
	t.Helper()
	select {
	case ev := <-ch:
		return ev
	case <-time.After(30 * time.Second):
		t.Fatal("no event within 30s")
	}
	return event{}
}

// nextUntil returns the first event that ok accepts, checking on the way
// that revisions only grow.
func nextUntil(t *testing.T, ch <-chan event, last *int64, ok func(event) bool) event {
	t.Helper()
	for {
		ev := next(t, ch)
		if ev.Extensions.Position == nil {
			t.Fatalf("an event without extensions.position: %+v", ev)
		}
		if rev := ev.Extensions.Position.Revision; rev <= *last {
			t.Fatalf("an event at revision %d after one at %d", rev, *last)
		}
		*last = ev.Extensions.Position.Revision
		if ok(ev) {
			return ev
		}
	}
}

func waitClosed(t *testing.T, done <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not happen within 30s", what)
	}
}

const runSubscription = `subscription($id: ID!) { run(id: $id) { __typename
  ... on Run { id status revision children(first: 5) { edges { node { ... on Run { id } } } } }
  ... on MissingRun { id deleted deletedAtRevision } } }`

func TestSubscriptionsOverWebSocket(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		e := liveFixture(t, d, live.Options{}, endpoint.Options{KeepAlive: 500 * time.Millisecond}, "r1", "other")
		ctx := context.Background()
		c := dialWS(t, e.url)
		positions, _ := c.subscribe("p", `subscription { position { source revision } }`, nil)
		runs, runDone := c.subscribe("r", runSubscription, map[string]any{"id": "r1"})

		// Both emit at once.
		var lastPos, lastRun int64
		first := nextUntil(t, positions, &lastPos, func(event) bool { return true })
		var p snapshot.Position
		must(t, json.Unmarshal(first.Data["position"], &p))
		if p != *first.Extensions.Position {
			t.Fatalf("position %+v, extensions.position %+v", p, *first.Extensions.Position)
		}
		ev := nextUntil(t, runs, &lastRun, func(event) bool { return true })
		if typ, status, _, _ := ev.run(t); typ != "Run" || status != "PENDING" {
			t.Fatalf("first run event: %s %s", typ, status)
		}

		// Another run's change moves the position, not r1.
		must(t, e.w.Start(ctx, "other", liveOwner))
		nextUntil(t, positions, &lastPos, func(ev event) bool { return ev.Extensions.Position.Revision >= lastPos })
		// r1 changes: its stream follows, at the run's new revision.
		must(t, e.w.Start(ctx, "r1", liveOwner))
		ev = nextUntil(t, runs, &lastRun, func(event) bool { return true })
		typ, status, rev, _ := ev.run(t)
		if typ != "Run" || status != "RUNNING" {
			t.Fatalf("after Start: %s %s (%+v)", typ, status, ev)
		}
		if rev > ev.Extensions.Position.Revision {
			t.Fatalf("run revision %d beyond the event's position %d", rev, ev.Extensions.Position.Revision)
		}
		// Deleted: a MissingRun with deleted true.
		must(t, e.w.Delete(ctx, "r1"))
		ev = nextUntil(t, runs, &lastRun, func(event) bool { return true })
		if typ, _, _, deleted := ev.run(t); typ != "MissingRun" || !deleted {
			t.Fatalf("after Delete: %+v", ev)
		}
		// Only r1's changes reach its stream: changing another run sends
		// nothing more.
		must(t, e.w.Complete(ctx, "other", json.RawMessage(`{}`)))
		nextUntil(t, positions, &lastPos, func(ev event) bool { return true })
		select {
		case ev := <-runs:
			t.Fatalf("an event for a change of another run: %+v", ev)
		case <-time.After(200 * time.Millisecond):
		}
		// Keep-alives while idle.
		select {
		case <-c.pings:
		case <-time.After(10 * time.Second):
			t.Fatal("no keep-alive ping")
		}
		// The client ends a subscription.
		c.send(wsMessage{ID: "r", Type: "complete"})
		deadline := time.Now().Add(10 * time.Second)
		for e.watcher.Open() != 1 {
			if time.Now().After(deadline) {
				t.Fatalf("%d subscriptions open after the client completed one, want 1", e.watcher.Open())
			}
			time.Sleep(10 * time.Millisecond)
		}
		_ = runDone
	})
}

func TestSubscriptionsOverSSE(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		e := liveFixture(t, d, live.Options{}, endpoint.Options{KeepAlive: 50 * time.Millisecond}, "r1", "kid")
		ctx := context.Background()
		must(t, e.w.AddChild(ctx, "r1", "kid", 0))
		s := subscribeSSE(t, e.url, runSubscription, map[string]any{"id": "r1"})
		if ct := s.header.Get("Content-Type"); ct != "text/event-stream" {
			t.Fatalf("Content-Type %q", ct)
		}
		var last int64
		ev := nextUntil(t, s.events, &last, func(event) bool { return true })
		if !strings.Contains(string(ev.Data["run"]), `"kid"`) {
			t.Fatalf("the run's children are not in its event: %s", ev.Data["run"])
		}
		must(t, e.w.Start(ctx, "r1", liveOwner))
		ev = nextUntil(t, s.events, &last, func(event) bool { return true })
		if _, status, _, _ := ev.run(t); status != "RUNNING" {
			t.Fatalf("after Start: %+v", ev)
		}
		select {
		case <-s.pings:
		case <-time.After(10 * time.Second):
			t.Fatal("no keep-alive comment")
		}
		// Positions too.
		p := subscribeSSE(t, e.url, `subscription { position { revision } }`, nil)
		var lastPos int64
		nextUntil(t, p.events, &lastPos, func(event) bool { return true })
		must(t, e.w.Complete(ctx, "r1", json.RawMessage(`{}`)))
		nextUntil(t, p.events, &lastPos, func(event) bool { return true })
		ev = nextUntil(t, s.events, &last, func(event) bool { return true })
		if _, status, _, _ := ev.run(t); status != "COMPLETED" {
			t.Fatalf("after Complete: %+v", ev)
		}
	})
}

// TestAThousandSubscribersShareEachTick holds 1,000 subscriptions (500 on
// position, 500 on 50 runs) while the engine writes, and counts the
// statements of every watcher tick, however many subscribe: one for the
// revision, one for the changed run ids when it moved, and, when the tick
// before found nothing new, the revision read alone first (three at most).
func TestAThousandSubscribersShareEachTick(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		ids := make([]string, 50)
		for i := range ids {
			ids[i] = fmt.Sprintf("run-%02d", i)
		}
		e := liveFixture(t, d, live.Options{MaxSubscriptions: 1000}, endpoint.Options{MaxSubscriptionsPerClient: 1000}, ids...)
		ctx := context.Background()
		type sub struct {
			ch    <-chan event
			runID string
		}
		var subs []sub
		for c := range 10 {
			conn := dialWS(t, e.url)
			for k := range 100 {
				id := fmt.Sprintf("s%d-%d", c, k)
				if k%2 == 0 {
					ch, _ := conn.subscribe(id, `subscription { position { revision } }`, nil)
					subs = append(subs, sub{ch: ch})
				} else {
					runID := ids[(c*50+k/2)%len(ids)]
					ch, _ := conn.subscribe(id, `subscription($id: ID!) { run(id: $id) { ... on Run { status } } }`, map[string]any{"id": runID})
					subs = append(subs, sub{ch: ch, runID: runID})
				}
			}
		}
		for _, s := range subs {
			next(t, s.ch)
		}
		if n := e.watcher.Open(); n != 1000 {
			t.Fatalf("%d subscriptions open, want 1000", n)
		}
		e.mu.Lock()
		e.ticks = nil
		e.mu.Unlock()

		changed := ids[:5]
		for _, id := range changed {
			must(t, e.w.Start(ctx, id, liveOwner))
		}
		want := e.revision(t)
		for _, s := range subs {
			if s.runID != "" && !contains(changed, s.runID) {
				continue
			}
			for {
				ev := next(t, s.ch)
				if s.runID != "" {
					if !strings.Contains(string(ev.Data["run"]), "RUNNING") {
						t.Fatalf("run %s: %s", s.runID, ev.Data["run"])
					}
					break
				}
				if ev.Extensions.Position.Revision >= want {
					break
				}
			}
		}
		for _, s := range subs {
			if s.runID != "" && !contains(changed, s.runID) {
				select {
				case ev := <-s.ch:
					t.Fatalf("run %s did not change but its subscriber got %+v", s.runID, ev)
				default:
				}
			}
		}
		e.mu.Lock()
		ticks := append([]int(nil), e.ticks...)
		e.mu.Unlock()
		moved := 0
		for _, n := range ticks {
			if n > 3 {
				t.Fatalf("a tick with 1,000 subscribers ran %d statements, want at most 3 (ticks: %v)", n, ticks)
			}
			if n >= 2 {
				moved++
			}
		}
		if moved == 0 {
			t.Fatalf("no tick read the changed run ids (ticks: %v)", ticks)
		}
		t.Logf("%d ticks while 1,000 subscribers were served, %d of them read changes; statements per tick: %v", len(ticks), moved, ticks)
	})
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// revision reads the store's revision through the writer's handle.
func (e *liveEnv) revision(t *testing.T) int64 {
	t.Helper()
	return e.position(t).Revision
}

// position reads the store's position through the writer's handle.
func (e *liveEnv) position(t *testing.T) snapshot.Position {
	t.Helper()
	ctx := context.Background()
	tx, err := e.db.BeginRead(ctx)
	must(t, err)
	defer tx.Rollback(ctx)
	var p snapshot.Position
	must(t, tx.QueryRow(ctx, `SELECT source, revision FROM flows_run_source WHERE singleton = 1`).Scan(&p.Source, &p.Revision))
	return p
}

func TestSubscriptionBounds(t *testing.T) {
	t.Parallel()
	e := liveFixture(t, store.SQLite, live.Options{MaxSubscriptions: 2}, endpoint.Options{}, "r1")
	c := dialWS(t, e.url)
	a, _ := c.subscribe("a", `subscription { position { revision } }`, nil)
	b, bDone := c.subscribe("b", `subscription { position { revision } }`, nil)
	next(t, a)
	next(t, b)

	t.Run("beyond max-subscriptions the next one gets SUBSCRIPTION_LIMIT", func(t *testing.T) {
		over, overDone := c.subscribe("c", `subscription { position { revision } }`, nil)
		ev := next(t, over)
		if ev.code() != string(live.SubscriptionLimit) || !strings.Contains(ev.Errors[0].Message, "2 subscriptions") {
			t.Fatalf("got %+v, want a %s error that says the limit", ev, live.SubscriptionLimit)
		}
		waitClosed(t, overDone, "the refused subscription's complete")
		s := subscribeSSE(t, e.url, `subscription { position { revision } }`, nil)
		if ev := next(t, s.events); ev.code() != string(live.SubscriptionLimit) {
			t.Fatalf("over SSE: got %+v", ev)
		}
		waitClosed(t, s.done, "the refused SSE stream's end")
	})
	t.Run("a place freed is taken again", func(t *testing.T) {
		c.send(wsMessage{ID: "b", Type: "complete"})
		waitClosed(t, bDone, "b's end")
		deadline := time.Now().Add(10 * time.Second)
		for e.watcher.Open() != 1 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		d, dDone := c.subscribe("d", `subscription { position { revision } }`, nil)
		if ev := next(t, d); ev.code() != "" || ev.Extensions.Position == nil {
			t.Fatalf("got %+v, want a position", ev)
		}
		c.send(wsMessage{ID: "d", Type: "complete"})
		waitClosed(t, dDone, "d's end")
		for e.watcher.Open() != 1 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
	})
	t.Run("a malformed id is BAD_USER_INPUT", func(t *testing.T) {
		s := subscribeSSE(t, e.url, `subscription { run(id: "") { __typename } }`, nil)
		if ev := next(t, s.events); ev.code() != "BAD_USER_INPUT" {
			t.Fatalf("got %+v", ev)
		}
		waitClosed(t, s.done, "the refused stream's end")
	})
}

// TestNoReadIsHeldBetweenEvents lets 6 subscribers (fewer than the
// reader's connections, so that a held read shows here rather than as a
// pool running dry) wait after their
// events and looks for a read transaction they might hold: an idle in
// transaction session on PostgreSQL, a snapshot that keeps a SQLite
// checkpoint from resetting the WAL. The watcher's own tick opens a short
// transaction every 20ms, so the test asks for one clean look among many; a
// subscriber holding its read would spoil every look.
func TestNoReadIsHeldBetweenEvents(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		e := liveFixture(t, d, live.Options{}, endpoint.Options{}, "r1", "r2")
		ctx := context.Background()
		c := dialWS(t, e.url)
		var chans []<-chan event
		for i := range 6 {
			if i%2 == 0 {
				ch, _ := c.subscribe(fmt.Sprint(i), `subscription { position { revision } }`, nil)
				chans = append(chans, ch)
			} else {
				ch, _ := c.subscribe(fmt.Sprint(i), runSubscription, map[string]any{"id": "r1"})
				chans = append(chans, ch)
			}
		}
		for _, ch := range chans {
			next(t, ch)
		}
		must(t, e.w.Start(ctx, "r1", liveOwner))
		for _, ch := range chans {
			next(t, ch)
		}
		clean := false
		for range 200 {
			if d == store.Postgres {
				var idle, sessions int64
				must(t, e.db.Write(ctx, func(tx store.Tx) error {
					return tx.QueryRow(ctx, `SELECT count(*) FILTER (WHERE state LIKE 'idle in transaction%'), count(*)
						FROM pg_stat_activity WHERE application_name = $1`, e.appName()).Scan(&idle, &sessions)
				}))
				if sessions == 0 {
					t.Fatal("no session of the reader found: the check would see nothing")
				}
				clean = idle == 0
			} else {
				clean = e.walResets(t)
			}
			if clean {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		if !clean {
			t.Fatal("a read transaction stayed open while the subscribers waited")
		}
	})
}

// walResets checkpoints the SQLite store with TRUNCATE and reports whether
// it could reset the WAL, which no open read may need.
func (e *liveEnv) walResets(t *testing.T) bool {
	t.Helper()
	ctx := context.Background()
	db, err := sql.Open("sqlite", e.dsn)
	must(t, err)
	defer db.Close()
	var busy, logFrames, done int64
	must(t, db.QueryRowContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`).Scan(&busy, &logFrames, &done))
	return busy == 0 && logFrames == 0
}

func TestShutdownEndsEverySubscription(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		reg := prometheus.NewRegistry()
		m := live.NewMetrics()
		reg.MustRegister(m.Collectors()...)
		e := liveFixture(t, d, live.Options{Metrics: m}, endpoint.Options{}, "r1")
		c := dialWS(t, e.url)
		ws, wsDone := c.subscribe("p", `subscription { position { revision } }`, nil)
		s := subscribeSSE(t, e.url, runSubscription, map[string]any{"id": "r1"})
		next(t, ws)
		next(t, s.events)
		if got := gauge(t, reg, "flowsnap_live_subscribers"); got != 2 {
			t.Fatalf("flowsnap_live_subscribers = %v, want 2", got)
		}
		e.stop()
		waitClosed(t, wsDone, "the WebSocket subscription's complete")
		waitClosed(t, s.done, "the SSE stream's complete")
		c.mu.Lock()
		errs := c.errs["p"]
		c.mu.Unlock()
		if len(errs) != 0 {
			t.Fatalf("the WebSocket subscription ended with errors: %s", errs)
		}
		<-e.stopped
		if _, err := e.watcher.Subscribe(); err == nil {
			t.Fatal("a stopped watcher took a subscription")
		}
		deadline := time.Now().Add(10 * time.Second)
		for gauge(t, reg, "flowsnap_live_subscribers") != 0 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if got := gauge(t, reg, "flowsnap_live_subscribers"); got != 0 {
			t.Fatalf("flowsnap_live_subscribers = %v after shutdown, want 0", got)
		}
		logs := e.logs.String()
		if n := strings.Count(logs, `msg="subscription start"`); n != 2 {
			t.Fatalf("%d subscription start lines, want 2:\n%s", n, logs)
		}
		if n := strings.Count(logs, `reason="server shutting down"`); n != 2 {
			t.Fatalf("%d subscription end lines for the shutdown, want 2:\n%s", n, logs)
		}
		if got := counter(t, reg, "flowsnap_live_events_sent_total"); got < 2 {
			t.Fatalf("flowsnap_live_events_sent_total = %v, want at least 2", got)
		}
		if got := counter(t, reg, "flowsnap_live_watcher_tick_seconds"); got < 1 {
			t.Fatalf("no watcher tick observed")
		}
	})
}

// TestStreamsOutliveTheServersTimeouts serves with read and write timeouts
// far shorter than the streams, as flowsnap serve has, and expects events
// well after them.
func TestStreamsOutliveTheServersTimeouts(t *testing.T) {
	t.Parallel()
	e := liveFixture(t, store.SQLite, live.Options{}, endpoint.Options{}, "r1")
	srv := httptest.NewUnstartedServer(endpoint.NewHandler(e.reader, endpoint.Options{Live: e.watcher}))
	srv.Config.ReadTimeout, srv.Config.WriteTimeout = 200*time.Millisecond, 200*time.Millisecond
	srv.Start()
	t.Cleanup(srv.Close)
	s := subscribeSSE(t, srv.URL, `subscription { position { revision } }`, nil)
	c := dialWS(t, srv.URL)
	ws, _ := c.subscribe("p", `subscription { position { revision } }`, nil)
	next(t, s.events)
	next(t, ws)
	time.Sleep(600 * time.Millisecond)
	must(t, e.w.Start(context.Background(), "r1", liveOwner))
	if ev := next(t, s.events); ev.Extensions.Position == nil {
		t.Fatalf("SSE: %+v", ev)
	}
	if ev := next(t, ws); ev.Extensions.Position == nil {
		t.Fatalf("WebSocket: %+v", ev)
	}
}

// TestAStreamsBodyIsReadUnderTheReadTimeout trickles the body of a
// subscription over SSE past the server's read timeout: the stream never
// opens, where lifting the deadline before the body is read would let the
// client hold the connection as long as it likes.
func TestAStreamsBodyIsReadUnderTheReadTimeout(t *testing.T) {
	t.Parallel()
	e := liveFixture(t, store.SQLite, live.Options{}, endpoint.Options{}, "r1")
	srv := httptest.NewUnstartedServer(endpoint.NewHandler(e.reader, endpoint.Options{Live: e.watcher}))
	srv.Config.ReadTimeout = 200 * time.Millisecond
	srv.Start()
	t.Cleanup(srv.Close)
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	must(t, err)
	defer conn.Close()
	body := `{"query":"subscription { position { revision } }"}`
	_, err = fmt.Fprintf(conn, "POST /graphql HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nAccept: text/event-stream\r\nContent-Length: %d\r\n\r\n%s", len(body), body[:10])
	must(t, err)
	time.Sleep(600 * time.Millisecond)
	_, _ = io.WriteString(conn, body[10:])
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	status, _ := bufio.NewReader(conn).ReadString('\n')
	if strings.Contains(status, " 200 ") {
		t.Fatalf("a body sent past the read timeout opened a stream: %q", status)
	}
}

func gauge(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	return metricValue(t, reg, name)
}

func counter(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	return metricValue(t, reg, name)
}

// metricValue returns a gauge's or counter's value, or a histogram's count.
func metricValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	must(t, err)
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		m := mf.GetMetric()[0]
		switch {
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount())
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}

const changesSubscription = `subscription($since: SafeInt!, $source: String) { changes(since: $since, source: $source) {
  changes { runId revision deleted run { __typename ... on Run { status } } } nextRevision hasMore } }`

type feedEvent struct {
	Changes []struct {
		RunID    string `json:"runId"`
		Revision int64  `json:"revision"`
		Deleted  bool   `json:"deleted"`
	} `json:"changes"`
	NextRevision int64 `json:"nextRevision"`
	HasMore      bool  `json:"hasMore"`
}

// TestChangesResumeWithoutGapOrDuplicate follows the change feed over SSE,
// drops the connection, writes meanwhile, and resumes from the last
// nextRevision: every change arrives once, in revision order.
func TestChangesResumeWithoutGapOrDuplicate(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		e := liveFixture(t, d, live.Options{}, endpoint.Options{}, "r1", "r2", "r3")
		ctx := context.Background()
		since := e.revision(t)
		seen := map[string]int64{} // run id → latest revision received
		follow := func(s *sseStream, until int64) {
			t.Helper()
			for since < until {
				ev := next(t, s.events)
				if ev.code() != "" {
					t.Fatalf("error event: %+v", ev)
				}
				var f feedEvent
				must(t, json.Unmarshal(ev.Data["changes"], &f))
				for _, c := range f.Changes {
					if c.Revision <= since {
						t.Fatalf("change %+v at or before since %d: a duplicate", c, since)
					}
					if c.Revision <= seen[c.RunID] {
						t.Fatalf("change %+v after one at %d", c, seen[c.RunID])
					}
					seen[c.RunID] = c.Revision
				}
				if f.NextRevision < since {
					t.Fatalf("nextRevision %d went back from %d", f.NextRevision, since)
				}
				since = f.NextRevision
			}
		}
		s := subscribeSSE(t, e.url, changesSubscription, map[string]any{"since": since})
		must(t, e.w.Start(ctx, "r1", liveOwner))
		must(t, e.w.Start(ctx, "r2", liveOwner))
		follow(s, e.revision(t))
		s.cancel()
		waitClosed(t, s.done, "the dropped stream's end")

		// Written while no one listens.
		must(t, e.w.Complete(ctx, "r1", json.RawMessage(`{}`)))
		must(t, e.w.Delete(ctx, "r3"))
		source := e.position(t).Source
		s = subscribeSSE(t, e.url, changesSubscription, map[string]any{"since": since, "source": source})
		must(t, e.w.Complete(ctx, "r2", json.RawMessage(`{}`)))
		follow(s, e.revision(t))
		for _, id := range []string{"r1", "r2", "r3"} {
			var rev int64
			tx, err := e.db.BeginRead(ctx)
			must(t, err)
			must(t, tx.QueryRow(ctx, `SELECT revision FROM flows_run_changes WHERE run_id = $1`, id).Scan(&rev))
			tx.Rollback(ctx)
			if seen[id] != rev {
				t.Fatalf("run %s: last change received at %d, the store has %d", id, seen[id], rev)
			}
		}

		// Another store's source ends the subscription with SOURCE_CHANGED.
		bad := subscribeSSE(t, e.url, changesSubscription, map[string]any{"since": since, "source": strings.Repeat("0", 32)})
		if ev := next(t, bad.events); ev.code() != "SOURCE_CHANGED" {
			t.Fatalf("got %+v, want SOURCE_CHANGED", ev)
		}
		waitClosed(t, bad.done, "the SOURCE_CHANGED stream's end")
	})
}

// TestPositionEventsTakeTheWatchersPosition: a position subscription's
// first event reads the position, one statement; every event after a
// change is the position the watcher's tick read, with no statement of
// its own, and says the same position in its data and its extensions.
func TestPositionEventsTakeTheWatchersPosition(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		var mu sync.Mutex
		var stmts []int
		e := liveFixture(t, d, live.Options{}, endpoint.Options{OnOperation: func(rd *snapshot.Read) {
			mu.Lock()
			stmts = append(stmts, rd.Statements())
			mu.Unlock()
		}}, "a")
		ctx := context.Background()
		c := dialWS(t, e.url)
		positions, _ := c.subscribe("p", `subscription { position { source revision } }`, nil)
		var last int64
		for i := range 4 {
			switch {
			case i == 1:
				must(t, e.w.Start(ctx, "a", liveOwner))
			case i > 1:
				must(t, e.w.Heartbeat(ctx, "a", liveOwner.Nonce))
			}
			want, err := e.reader.Position(ctx)
			must(t, err)
			ev := nextUntil(t, positions, &last, func(ev event) bool { return ev.Extensions.Position.Revision >= want.Revision })
			var p snapshot.Position
			must(t, json.Unmarshal(ev.Data["position"], &p))
			if p != *ev.Extensions.Position || p.Source != want.Source {
				t.Fatalf("event %d: position %+v, extensions.position %+v, the store's %+v", i, p, *ev.Extensions.Position, want)
			}
		}
		mu.Lock()
		defer mu.Unlock()
		if len(stmts) < 4 || stmts[0] != 1 {
			t.Fatalf("statements per event %v: want the first to read the position alone", stmts)
		}
		for i, n := range stmts[1:] {
			if n != 0 {
				t.Errorf("event %d ran %d statements, want none (statements per event: %v)", i+1, n, stmts)
			}
		}
	})
}
