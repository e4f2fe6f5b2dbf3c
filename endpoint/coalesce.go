package endpoint

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"sync"
)

// CoalescingListener wraps the connections ln accepts so that an answer
// (answerCached) goes to its client in one write, headers and body
// together. net/http writes a response through a buffer of 4 KiB: a body
// larger than that left in two writes to the connection, each a system
// call and, over loopback or a LAN, a packet and a wakeup of the reader;
// the second cost a server about 10 µs of CPU per answer of 10 to 35 KB.
// The server must also set WithConn as its ConnContext.
func CoalescingListener(ln net.Listener) net.Listener { return coalescingListener{ln} }

type coalescingListener struct{ net.Listener }

func (l coalescingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &coalescingConn{Conn: c}, nil
}

// WithConn is an http.Server's ConnContext that lets a handler find the
// connection CoalescingListener accepted, under TLS or not.
func WithConn(ctx context.Context, c net.Conn) context.Context {
	if t, ok := c.(*tls.Conn); ok {
		c = t.NetConn()
	}
	if cc, ok := c.(*coalescingConn); ok {
		return context.WithValue(ctx, coalescingKey{}, cc)
	}
	return ctx
}

type coalescingKey struct{}

// coalescingConn keeps what is written to it while held, and writes it in
// one call when released. Only a handler of an HTTP/1 request holds it,
// on the connection's own goroutine, which makes every write to it.
type coalescingConn struct {
	net.Conn
	held *[]byte
}

// heldBuffers keep what held connections are written.
var heldBuffers = sync.Pool{New: func() any { return new([]byte) }}

func (c *coalescingConn) Write(p []byte) (int, error) {
	if c.held != nil {
		*c.held = append(*c.held, p...)
		return len(p), nil
	}
	return c.Conn.Write(p)
}

// ReadFrom keeps net/http's copy of a file to the connection a copy by
// the kernel where the connection can make one.
func (c *coalescingConn) ReadFrom(r io.Reader) (int64, error) {
	if c.held != nil {
		return io.Copy(writerOnly{c}, r)
	}
	return io.Copy(c.Conn, r)
}

// CloseWrite keeps net/http's half-close of a connection it is done with.
func (c *coalescingConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return c.Conn.Close()
}

type writerOnly struct{ io.Writer }

func (c *coalescingConn) hold() {
	c.held = heldBuffers.Get().(*[]byte)
}

// release writes what was held, in one call.
func (c *coalescingConn) release() {
	b := c.held
	c.held = nil
	if len(*b) > 0 {
		// An error is the next read's to find, as net/http finds it.
		_, _ = c.Conn.Write(*b)
	}
	if cap(*b) <= maxHeldAnswer {
		*b = (*b)[:0]
		heldBuffers.Put(b)
	}
}

// minHeldAnswer and maxHeldAnswer bound the answers sent in one write: a
// smaller one leaves in one with its headers anyway, and a larger one
// would be copied once more for little.
const (
	minHeldAnswer = 3 << 10
	maxHeldAnswer = 256 << 10
)

// sendWhole writes body, the whole response's, and sends it with its
// headers in one write to the connection where it can (see
// CoalescingListener).
func sendWhole(w http.ResponseWriter, r *http.Request, body []byte) {
	c, _ := r.Context().Value(coalescingKey{}).(*coalescingConn)
	if c == nil || r.ProtoMajor != 1 || len(body) < minHeldAnswer || len(body) > maxHeldAnswer {
		_, _ = w.Write(body)
		return
	}
	c.hold()
	defer c.release()
	_, _ = w.Write(body)
	_ = http.NewResponseController(w).Flush()
}
