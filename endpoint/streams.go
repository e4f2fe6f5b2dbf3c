package endpoint

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/flowsnap/flowsnap/access"
	"github.com/flowsnap/flowsnap/endpoint/record"
	"github.com/flowsnap/flowsnap/fault"
)

// Streams (WebSocket connections and server-sent event streams) hold a
// goroutine, a socket and buffers for as long as their client likes, so
// they are bounded the way requests are by their deadline
// (docs/contract.md#subscriptions): so many at once, so many for one
// client, each write within a deadline, and so many subscriptions for one
// client.

// places counts what clients hold (streams, subscriptions): at most total
// in all (0 for no bound of its own) and perClient for one client.
type places struct {
	what      string
	total     int
	perClient int
	mu        sync.Mutex
	open      int
	byClient  map[string]int
}

func newPlaces(what string, total, perClient int) *places {
	return &places{what: what, total: total, perClient: perClient, byClient: map[string]int{}}
}

// take takes a place for client, or fails with SUBSCRIPTION_LIMIT; the
// place is given back by calling leave, once.
func (p *places) take(client string) (leave func(), err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.total > 0 && p.open >= p.total {
		return nil, fault.Errorf(fault.SubscriptionLimit, "the server already serves %d %s, the most it may; try again later", p.total, p.what)
	}
	if p.byClient[client] >= p.perClient {
		return nil, fault.Errorf(fault.SubscriptionLimit, "this client already holds %d %s, the most one client may", p.perClient, p.what)
	}
	p.open++
	p.byClient[client]++
	var once sync.Once
	return func() {
		once.Do(func() {
			p.mu.Lock()
			defer p.mu.Unlock()
			p.open--
			if p.byClient[client]--; p.byClient[client] <= 0 {
				delete(p.byClient, client)
			}
		})
	}, nil
}

type clientKey struct{}

// clientOf names the client a request comes from, for the per-client
// limits: its principal's name when it carries one (authentication is on),
// else its remote address without the port. Behind a proxy every client
// has the proxy's address: turn authentication on, or raise the limits.
func clientOf(ctx context.Context) string {
	if p := access.FromContext(ctx); p != access.Everyone {
		return "principal " + p.Name
	}
	if addr, ok := ctx.Value(clientKey{}).(string); ok {
		return addr
	}
	return "address unknown"
}

// withRemoteAddr returns ctx carrying the host of remote, a request's
// RemoteAddr, for clientOf.
func withRemoteAddr(ctx context.Context, remote string) context.Context {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	return context.WithValue(ctx, clientKey{}, "address "+host)
}

// stream serves a request that opens a stream, within the streams' places:
// one past them is refused, 503 SUBSCRIPTION_LIMIT, before it is upgraded
// or its stream begins. An SSE stream's writes are each given
// StreamWriteTimeout; one that misses it ends the stream (cancel ends the
// request's context). A WebSocket connection's writes get theirs from its
// connection (websocket.go).
func (e *endpoint) stream(w http.ResponseWriter, r *http.Request, cancel context.CancelFunc) {
	ctx := withRemoteAddr(r.Context(), r.RemoteAddr)
	leave, err := e.opts.streams.take(clientOf(ctx))
	if err != nil {
		code, msg := fault.CodeOf(err), fault.MessageOf(err)
		record.Of(ctx).Refuse(record.ReasonOf(code), code, msg)
		w.Header().Set("Retry-After", "5")
		writeError(w, responseMedia(r), http.StatusServiceUnavailable, code, msg)
		return
	}
	defer leave()
	if r.Header.Get("Upgrade") == "" {
		w = &deadlineWriter{ResponseWriter: w, rc: http.NewResponseController(w), timeout: e.opts.StreamWriteTimeout, fail: cancel}
	}
	e.next.ServeHTTP(w, r.WithContext(ctx))
}

// deadlineWriter gives each write and flush of a stream a deadline of its
// own; the first that fails calls fail. The transport writes from more than
// one goroutine (events, keep-alives) under a lock of its own.
type deadlineWriter struct {
	http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
	fail    func()
}

func (d *deadlineWriter) Write(p []byte) (int, error) {
	_ = d.rc.SetWriteDeadline(time.Now().Add(d.timeout))
	n, err := d.ResponseWriter.Write(p)
	if err != nil {
		d.fail()
	}
	return n, err
}

func (d *deadlineWriter) Flush() {
	_ = d.rc.SetWriteDeadline(time.Now().Add(d.timeout))
	if err := d.rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
		d.fail()
	}
}

func (d *deadlineWriter) Unwrap() http.ResponseWriter { return d.ResponseWriter }
