package endpoint

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/coder/websocket"
)

// closeBadRequest is the close code, in graphql-ws's conventions, of a
// connection whose connection_init is larger than MaxInitBytes.
const closeBadRequest = 4400

// websocketConns accepts WebSocket connections for gqlgen's transport with
// the connection's limits (docs/contract.md#subscriptions): its first
// message, the connection_init, at most MaxInitBytes (4400 beyond), the
// later ones at most MaxBodyBytes; pings answered at most
// MaxPingsPerSecond a second, in a burst of as many (past it the
// connection is read no faster); each write within StreamWriteTimeout,
// past which the connection is closed and its place freed.
type websocketConns struct{ opts Options }

var _ transport.WebsocketImplementation = websocketConns{}

func (i websocketConns) Accept(w http.ResponseWriter, r *http.Request, options transport.WebsocketAcceptOptions) (transport.WebsocketConn, error) {
	for key, values := range options.ResponseHeader {
		for _, v := range values {
			w.Header().Add(key, v)
		}
	}
	conn, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: slices.Clone(options.Subprotocols)})
	if err != nil {
		return nil, err
	}
	return &websocketConn{conn: conn, opts: i.opts, readLimit: i.opts.MaxBodyBytes,
		pings: newBucket(i.opts.MaxPingsPerSecond)}, nil
}

// websocketConn is one connection, as gqlgen's transport uses it: one
// goroutine reads (NextReader), any may write.
type websocketConn struct {
	conn *websocket.Conn
	opts Options
	// inited says the first message was read.
	inited    bool
	readLimit int64
	pings     *bucket

	mu       sync.Mutex
	deadline *time.Timer
	closing  bool
}

var (
	_ transport.WebsocketConn          = (*websocketConn)(nil)
	_ transport.WebsocketReadLimiter   = (*websocketConn)(nil)
	_ transport.WebsocketReadDeadliner = (*websocketConn)(nil)
)

// errClosedByLimit ends the transport's reading when the connection closed
// itself over a limit.
var errClosedByLimit = errors.New("the connection went over a limit")

// NextReader returns the next message. The first is read up to one byte
// past MaxInitBytes only; a ping over the rate waits its turn.
func (c *websocketConn) NextReader() (int, io.Reader, error) {
	if !c.inited {
		typ, r, err := c.conn.Reader(context.Background())
		if err != nil {
			return int(typ), nil, c.readError(err)
		}
		data, err := io.ReadAll(io.LimitReader(r, int64(c.opts.MaxInitBytes)+1))
		if err != nil {
			return int(typ), nil, c.readError(err)
		}
		if len(data) > c.opts.MaxInitBytes {
			_ = c.WriteClose(closeBadRequest, fmt.Sprintf("the connection_init message is larger than %d bytes", c.opts.MaxInitBytes))
			return int(typ), nil, errClosedByLimit
		}
		c.inited = true
		c.conn.SetReadLimit(c.readLimit)
		return int(typ), bytes.NewReader(data), nil
	}
	typ, data, err := c.conn.Read(context.Background())
	if err != nil {
		return int(typ), nil, c.readError(err)
	}
	if isPing(data) {
		// Past the burst a ping waits for its turn, and so does the
		// connection's next message: the client's writes wait in turn,
		// and a flood costs what MaxPingsPerSecond pings do.
		time.Sleep(c.pings.reserve(time.Now()))
	}
	return int(typ), bytes.NewReader(data), nil
}

// readError is what the transport needs to hear of err: that the peer
// closed, which it does not report as an error.
func (c *websocketConn) readError(err error) error {
	switch websocket.CloseStatus(err) {
	case websocket.StatusNormalClosure, websocket.StatusNoStatusRcvd:
		return transport.ErrWebsocketClosed
	}
	return err
}

// isPing says whether a message is a graphql-transport-ws ping, looking no
// further than needed: other messages rarely hold the word.
func isPing(data []byte) bool {
	if len(data) > 256 || !bytes.Contains(data, []byte("ping")) {
		return false
	}
	var m struct {
		Type string `json:"type"`
	}
	return json.Unmarshal(data, &m) == nil && m.Type == "ping"
}

// WriteJSON writes v within StreamWriteTimeout; a write that misses it
// closes the connection (the library closes a connection whose write's
// context ends).
func (c *websocketConn) WriteJSON(v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.opts.StreamWriteTimeout)
	defer cancel()
	return c.conn.Write(ctx, websocket.MessageText, data)
}

// WriteClose closes the connection with code and reason, without waiting
// for the peer's answer: the close handshake runs on its own, bounded by
// the library.
func (c *websocketConn) WriteClose(code int, reason string) error {
	c.mu.Lock()
	c.stopDeadline()
	if c.closing {
		c.mu.Unlock()
		return nil
	}
	c.closing = true
	c.mu.Unlock()
	go func() { _ = c.conn.Close(websocket.StatusCode(code), reason) }()
	return nil
}

// Close closes the connection at once, unless WriteClose began closing it.
func (c *websocketConn) Close() error {
	c.mu.Lock()
	c.stopDeadline()
	closing := c.closing
	c.mu.Unlock()
	if closing {
		return nil
	}
	return c.conn.CloseNow()
}

func (c *websocketConn) Subprotocol() string { return c.conn.Subprotocol() }

// SetReadLimit sets the limit of every message after the first.
func (c *websocketConn) SetReadLimit(limit int64) {
	if limit > 0 {
		c.readLimit = limit
	}
}

// SetReadDeadline closes the connection at t unless moved (a missing
// pong); the zero time clears it.
func (c *websocketConn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stopDeadline()
	if !t.IsZero() {
		c.deadline = time.AfterFunc(time.Until(t), func() { _ = c.conn.CloseNow() })
	}
	return nil
}

// stopDeadline is called with c.mu held.
func (c *websocketConn) stopDeadline() {
	if c.deadline != nil {
		c.deadline.Stop()
		c.deadline = nil
	}
}

// bucket allows n events a second, in bursts of up to n.
type bucket struct {
	n      float64
	tokens float64
	last   time.Time
}

func newBucket(n int) *bucket { return &bucket{n: float64(n), tokens: float64(n)} }

// reserve takes a token at now and returns how long to wait for it: 0 while
// the burst lasts.
func (b *bucket) reserve(now time.Time) time.Duration {
	if !b.last.IsZero() {
		b.tokens = min(b.n, b.tokens+now.Sub(b.last).Seconds()*b.n)
	}
	b.last = now
	b.tokens--
	if b.tokens >= 0 {
		return 0
	}
	return time.Duration(-b.tokens / b.n * float64(time.Second))
}

// dropInitPayload runs init, when set, on a connection's connection_init
// payload, then empties the payload: what a connection keeps for its life
// is the context init returned (a principal), never the payload sent.
func dropInitPayload(init transport.WebsocketInitFunc) transport.WebsocketInitFunc {
	return func(ctx context.Context, payload transport.InitPayload) (context.Context, *transport.InitPayload, error) {
		var ack *transport.InitPayload
		var err error
		if init != nil {
			ctx, ack, err = init(ctx, payload)
		}
		clear(payload)
		return ctx, ack, err
	}
}
