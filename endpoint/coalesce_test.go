package endpoint_test

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/flowsnap/flowsnap/endpoint"
	"github.com/flowsnap/flowsnap/store"
)

// countingListener counts the writes made to the connections it accepts.
type countingListener struct {
	net.Listener
	writes *atomic.Int64
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return countingConn{c, l.writes}, nil
}

type countingConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c countingConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}

// TestAnAnswerGoesOutInOneWrite serves answers larger than net/http's
// buffer through CoalescingListener: over HTTP/1.1 in the clear each must
// reach the connection in one write, headers and body; under TLS, and over
// HTTP/2, whose frames the server writes on a goroutine of its own, the
// answers must read as the same server answers without it.
func TestAnAnswerGoesOutInOneWrite(t *testing.T) {
	e := fixture(t, store.SQLite, endpoint.Options{})
	handler := endpoint.NewHandler(e.reader, endpoint.Options{})
	large := `{ run(id: "parent") { ... on Run { children(first: 100) { edges { cursor node { ... on Run { id status flowName createdAt } } } } } } }`
	small := `{ run(id: "parent") { ... on Run { id status } } }`

	plain := httptest.NewServer(handler)
	t.Cleanup(plain.Close)
	want := map[string][]byte{}
	for _, q := range []string{large, small} {
		_, want[q] = postRaw(t, plain.URL, q, nil)
	}
	if len(want[large]) < 8<<10 || len(want[small]) > 2<<10 {
		t.Fatalf("the answers are %d and %d bytes: not the sizes this test is about", len(want[large]), len(want[small]))
	}

	for _, mode := range []string{"http/1.1", "http/1.1 over TCP", "tls http/1.1", "tls h2"} {
		t.Run(mode, func(t *testing.T) {
			var writes atomic.Int64
			srv := httptest.NewUnstartedServer(handler)
			if mode == "http/1.1 over TCP" {
				// What is kept back goes out with the rest in one
				// vectored write, which only a TCP connection itself
				// makes (a counting one gets the two copied into one).
				srv.Listener = endpoint.CoalescingListener(srv.Listener)
			} else {
				srv.Listener = endpoint.CoalescingListener(countingListener{srv.Listener, &writes})
			}
			srv.Config.ConnContext = endpoint.WithConn
			client := &http.Client{}
			switch mode {
			case "http/1.1", "http/1.1 over TCP":
				srv.Start()
			default:
				srv.EnableHTTP2 = mode == "tls h2"
				srv.StartTLS()
				client = srv.Client()
			}
			t.Cleanup(srv.Close)
			// The first request opens the connection, and its TLS
			// handshake writes to it.
			res, err := client.Post(srv.URL, "application/json", strings.NewReader(`{"query":`+quote(small)+`}`))
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, res.Body)
			res.Body.Close()
			for range 3 {
				for _, q := range []string{large, small} {
					before := writes.Load()
					res, err := client.Post(srv.URL, "application/json", strings.NewReader(`{"query":`+quote(q)+`}`))
					if err != nil {
						t.Fatal(err)
					}
					body, err := io.ReadAll(res.Body)
					res.Body.Close()
					if err != nil {
						t.Fatal(err)
					}
					if !bytes.Equal(body, want[q]) {
						t.Fatalf("%s: %s, want %s", q, body, want[q])
					}
					n := writes.Load() - before
					switch mode {
					case "tls h2":
						if res.ProtoMajor != 2 {
							t.Fatalf("served over %s", res.Proto)
						}
					case "http/1.1 over TCP":
					case "tls http/1.1":
						// Records larger than net/http's buffer go out as
						// they come.
						t.Logf("a %d-byte answer took %d writes to the connection", len(body), n)
					default:
						if n != 1 {
							t.Errorf("a %d-byte answer took %d writes to the connection, want 1", len(body), n)
						}
					}
				}
			}
		})
	}
}

func quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	b.WriteString(strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), `"`, `\"`))
	b.WriteByte('"')
	return b.String()
}
