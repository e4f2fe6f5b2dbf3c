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

// coalescingConn, while held, keeps back the writes of a buffer's size or
// less (copied) and sends them with the next larger one, in one vectored
// write to a TCP connection (writev), or when released: net/http writes an
// answer past its buffer as the buffer's first 4 KiB, headers included,
// then the rest, from the answer itself. Only what is kept back is copied,
// so that a held answer costs a buffer of a few KiB, not one of its size.
// Under TLS the records are written as they come, those of 4 KiB or less
// kept back likewise. Only a handler of an HTTP/1 request holds it, on the
// connection's own goroutine, which makes every write to it.
type coalescingConn struct {
	net.Conn
	holding bool
	// kept is the write kept back, when there is one.
	kept *[]byte
}

// keptBuffers hold the writes kept back.
var keptBuffers = sync.Pool{New: func() any { return new([]byte) }}

func (c *coalescingConn) Write(p []byte) (int, error) {
	if !c.holding {
		return c.Conn.Write(p)
	}
	if len(p) <= bufferedWrite && (c.kept == nil || len(*c.kept)+len(p) <= maxKeptWrite) {
		if c.kept == nil {
			c.kept = keptBuffers.Get().(*[]byte)
			*c.kept = (*c.kept)[:0]
		}
		*c.kept = append(*c.kept, p...)
		return len(p), nil
	}
	if c.kept == nil {
		return c.Conn.Write(p)
	}
	err := c.sendKeptAnd(p)
	if err != nil {
		return 0, err
	}
	return len(p), nil
}

// sendKeptAnd sends the write kept back and p in one write: vectored on a
// TCP connection, copied after it on any other.
func (c *coalescingConn) sendKeptAnd(p []byte) error {
	kept := c.kept
	c.kept = nil
	defer giveKept(kept)
	if tcp, ok := c.Conn.(*net.TCPConn); ok {
		bufs := net.Buffers{*kept, p}
		_, err := bufs.WriteTo(tcp)
		return err
	}
	*kept = append(*kept, p...)
	_, err := c.Conn.Write(*kept)
	return err
}

func giveKept(b *[]byte) {
	if cap(*b) <= 2*maxKeptWrite {
		*b = (*b)[:0]
		keptBuffers.Put(b)
	}
}

// bufferedWrite is the most net/http writes to a connection from its
// buffer, and maxKeptWrite the most kept back at once.
const (
	bufferedWrite = 4 << 10
	maxKeptWrite  = 16 << 10
)

// ReadFrom keeps net/http's copy of a file to the connection a copy by
// the kernel where the connection can make one.
func (c *coalescingConn) ReadFrom(r io.Reader) (int64, error) {
	if c.holding {
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

func (c *coalescingConn) hold() { c.holding = true }

// release sends the write kept back, if any, and writes through again.
func (c *coalescingConn) release() {
	c.holding = false
	if kept := c.kept; kept != nil {
		c.kept = nil
		// An error is the next read's to find, as net/http finds it.
		_, _ = c.Conn.Write(*kept)
		giveKept(kept)
	}
}

// minHeldAnswer and maxHeldAnswer bound the answers sent in one write: a
// smaller one leaves in one with its headers anyway, and a larger one
// takes more writes than a vectored write saves.
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
