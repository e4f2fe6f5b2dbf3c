package endpoint

import (
	"bufio"
	"errors"
	"net"
	"net/http"
	"sync"

	"github.com/flowsnap/flowsnap/endpoint/record"
)

// statusWriter remembers the status written, for the refusal log line,
// and writes the record's status instead of gqlgen's when it has one.
//
// Once the request's handler has returned it writes nothing: gqlgen's SSE
// transport sends keep-alives from a goroutine of its own, which can tick
// after the stream ended, and a write or flush of a finished response
// panics the server.
type statusWriter struct {
	http.ResponseWriter
	rec    *record.Record
	status int
	wrote  bool

	mu       sync.Mutex
	finished bool
}

var errFinished = errors.New("the response is finished")

// finish makes every later write a no-op; it waits for one under way.
func (s *statusWriter) finish() {
	s.mu.Lock()
	s.finished = true
	s.mu.Unlock()
}

func (s *statusWriter) WriteHeader(code int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.finished {
		return
	}
	if s.wrote {
		s.ResponseWriter.WriteHeader(code)
		return
	}
	if status := s.rec.Status(); status != 0 {
		code = status
	}
	if code == http.StatusServiceUnavailable {
		s.Header().Set("Retry-After", "1")
	}
	s.status, s.wrote = code, true
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.finished {
		return 0, errFinished
	}
	s.wrote = true
	return s.ResponseWriter.Write(b)
}

func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

func (s *statusWriter) Flush() { _ = s.FlushError() }

// FlushError flushes as Flush does, and says whether the flush failed (a
// stream's write deadline passed, its client went): what
// http.ResponseController.Flush returns.
//
// A writer between it and the connection may swallow the error (gzip's
// Flush returns none): once they have flushed, the connection's own writer
// is flushed too, which writes nothing more but reports a write that
// failed or missed its deadline.
func (s *statusWriter) FlushError() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.finished {
		return errFinished
	}
	if err := http.NewResponseController(s.ResponseWriter).Flush(); err != nil {
		return err
	}
	w := s.ResponseWriter
	for {
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			break
		}
		w = u.Unwrap()
	}
	if f, ok := w.(interface{ FlushError() error }); ok && w != s.ResponseWriter {
		return f.FlushError()
	}
	return nil
}

// Hijack hands a WebSocket upgrade the connection underneath.
func (s *statusWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	s.status, s.wrote = http.StatusSwitchingProtocols, true
	return http.NewResponseController(s.ResponseWriter).Hijack()
}
