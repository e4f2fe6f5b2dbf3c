package graph

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/executor"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/flowsnap/flowsnap/fault"
	"github.com/flowsnap/flowsnap/live"
	"github.com/flowsnap/flowsnap/snapshot"
)

// record follows one HTTP request through the endpoint: the first reason it
// was refused for (or failed with), so that the request is counted once by
// that reason and logged in one line at its end.
type record struct {
	mu      sync.Mutex
	reason  string
	code    fault.Code
	message string
	cause   string
	name    string
	// release, when set, gives back the document slot the request holds.
	release func()
	// status, when set, is the HTTP status the response goes out with,
	// whatever gqlgen chose (a busy server answers 503).
	status int
	// digest and header, set for a GET query, let its answer carry an ETag.
	digest string
	header http.Header
	// report, set for a WebSocket connection, counts and logs a refusal
	// when its response is sent: a connection carries many operations,
	// and lasts as long as its client wants.
	report func(refusal)
	// body, set by a direct answer, is the response body to send in place
	// of the one gqlgen's transport writes (see answerBody); only a request
	// that serve hands to gqlgen, answered in one body, takes one.
	body      []byte
	takesBody bool
}

// setBody keeps the body a direct answer wrote, for serve to send, and
// reports whether it will: false for a response that goes out otherwise
// (a query over a WebSocket or an event stream).
func (r *record) setBody(b []byte) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.takesBody {
		return false
	}
	r.body = b
	return true
}

// answersInOneBody says the request is answered in one HTTP body, which a
// direct answer may write (see setBody).
func (r *record) answersInOneBody() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.takesBody = true
}

// takeBody returns the body a direct answer wrote, once.
func (r *record) takeBody() []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	b := r.body
	r.body = nil
	return b
}

// refusal is what a record holds about one refused request or operation.
type refusal struct {
	reason, message, cause, name string
	code                         fault.Code
}

type recordKey struct{}

// recordOf returns the record of ctx's request; a throwaway one outside a
// request, so callers need not check.
func recordOf(ctx context.Context) *record {
	if r, ok := ctx.Value(recordKey{}).(*record); ok {
		return r
	}
	return &record{}
}

// refuse keeps the first reason given; later ones are consequences.
func (r *record) refuse(reason string, code fault.Code, message string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.reason == "" {
		r.reason, r.code, r.message = reason, code, clip(message)
	}
}

func (r *record) setCause(cause string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cause == "" {
		r.cause = clip(cause)
	}
}

func (r *record) refused() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.reason != ""
}

// take returns the refusal the record holds and clears it, so that the
// next operation of a connection starts afresh.
func (r *record) take() refusal {
	r.mu.Lock()
	defer r.mu.Unlock()
	f := refusal{reason: r.reason, message: r.message, cause: r.cause, name: r.name, code: r.code}
	r.reason, r.message, r.cause, r.name, r.code = "", "", "", "", ""
	return f
}

// answered reports the refusal of the response just sent on a WebSocket
// connection, if there is one; for other requests the endpoint reports it
// when the request ends.
func (r *record) answered() {
	r.mu.Lock()
	report := r.report
	r.mu.Unlock()
	if report == nil {
		return
	}
	if f := r.take(); f.reason != "" {
		report(f)
	}
}

// maxMessage bounds a message shown to a client or logged: a parse error
// quotes a token of the document, and a token can be a megabyte string.
const maxMessage = 300

func clip(s string) string {
	if len(s) <= maxMessage {
		return s
	}
	cut := maxMessage
	for cut > 0 && s[cut]&0xC0 == 0x80 { // keep UTF-8 whole
		cut--
	}
	return s[:cut] + "…"
}

// reasonOf maps an error code met while answering to a refusal reason.
func reasonOf(code fault.Code) string {
	switch code {
	case fault.PersistenceFailed:
		return "store"
	case fault.Timeout:
		return "timeout"
	case fault.DecodeFailed:
		return "decode"
	case fault.Internal:
		return "internal"
	case fault.ComplexityLimit:
		return "complexity"
	case live.SubscriptionLimit:
		return "subscriptions"
	default:
		return "input"
	}
}

// logLimiter lets through at most burst lines per reason in each second, so
// a store that is down (every request failing) or a flood of bad requests
// logs a few lines a second, each saying how many were left out before it.
type logLimiter struct {
	mu    sync.Mutex
	burst int
	now   func() time.Time
	slots map[string]*logSlot
}

type logSlot struct {
	second     int64
	lines      int
	suppressed int
}

func newLogLimiter(burst int) *logLimiter {
	return &logLimiter{burst: burst, now: time.Now, slots: map[string]*logSlot{}}
}

// allow reports whether a line for reason may be written now, and how many
// lines for it were left out since the last one written.
func (l *logLimiter) allow(reason string) (bool, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.slots[reason]
	if s == nil {
		s = &logSlot{}
		l.slots[reason] = s
	}
	sec := l.now().Unix()
	if sec != s.second {
		s.second, s.lines = sec, 0
	}
	if s.lines >= l.burst {
		s.suppressed++
		return false, 0
	}
	s.lines++
	n := s.suppressed
	s.suppressed = 0
	return true, n
}

// endpoint is the HTTP side of /graphql around gqlgen's server: it bounds
// the request (its time, from the first byte read, covering parse and
// validation; its body), refuses what is not a GraphQL request with a code
// and without echoing it, and counts and logs every refusal once.
type endpoint struct {
	next    http.Handler
	reader  *snapshot.Reader
	opts    Options
	pool    *parsePool
	guard   documentGuard
	limiter *logLimiter
	// shape, cached and recover serve queries whose document is cached
	// (answerCached).
	shape   shapeLimit
	cached  *executor.Executor
	recover graphql.RecoverFunc
}

func (e *endpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	// The deadline covers the whole request; the client leaving cancels it.
	// A subscription's stream (WebSocket or server-sent events) lasts as
	// long as it is wanted: its operations get their deadlines one by one.
	ctx, cancel := r.Context(), context.CancelFunc(func() {})
	if !streaming(r) {
		ctx, cancel = context.WithTimeout(ctx, e.opts.Timeout)
	}
	defer cancel()
	rec := &record{}
	// Deferred: a slot kept by a request that panicked would be lost to
	// every request after it.
	defer rec.releaseSlot()
	ctx = context.WithValue(ctx, recordKey{}, rec)
	r = r.WithContext(ctx)
	sw := &statusWriter{ResponseWriter: w, status: http.StatusOK, rec: rec}
	defer sw.finish()
	if r.Header.Get("Upgrade") != "" {
		rec.report = func(f refusal) { e.log(ctx, f, r, http.StatusSwitchingProtocols, time.Since(start)) }
	}
	switch status, msg, params := e.check(sw, r); {
	case status == answered:
	case status != 0:
		reason, code := "transport", fault.BadUserInput
		switch status {
		case http.StatusRequestEntityTooLarge, http.StatusRequestURITooLong:
			reason = "size"
		case http.StatusServiceUnavailable:
			reason, code = "timeout", fault.Timeout
			if rec.busy() {
				reason = "busy"
			}
		}
		rec.refuse(reason, code, msg)
		writeError(sw, responseMedia(r), status, code, msg)
	case streaming(r):
		e.next.ServeHTTP(sw, r)
	case r.Method == http.MethodGet:
		digest := requestDigest(r)
		if !e.notModified(ctx, sw, r, digest) {
			rec.digest, rec.header = digest, sw.Header()
			e.serve(sw, r)
		}
	default:
		if !e.answerCached(sw, r, params) {
			e.serve(sw, r)
		}
	}
	e.done(ctx, rec, r, sw.status, time.Since(start))
}

// serve hands one operation's request to gqlgen, answering its request
// errors as GraphQL over HTTP asks (see requestErrorWriter).
func (e *endpoint) serve(w http.ResponseWriter, r *http.Request) {
	rec := recordOf(r.Context())
	rec.answersInOneBody()
	rw := &requestErrorWriter{ResponseWriter: w, rec: rec}
	e.next.ServeHTTP(rw, r)
	rw.finish()
}

// streaming reports whether r opens a stream of responses, as the
// transports decide it: a WebSocket upgrade, or a POST that accepts server-
// sent events. A GET that lists text/event-stream among the types it
// accepts, as urql's queries do, is one query answered once.
func streaming(r *http.Request) bool {
	return r.Header.Get("Upgrade") != "" ||
		r.Method == http.MethodPost && strings.Contains(r.Header.Get("Accept"), "text/event-stream")
}

// releaseSlot gives back the parsing slot the request holds, if any.
func (r *record) releaseSlot() {
	r.mu.Lock()
	release := r.release
	r.release = nil
	r.mu.Unlock()
	if release != nil {
		release()
	}
}

// done counts and logs a refused request (what a WebSocket connection's
// operations did not report already); served ones are logged by finish,
// once per operation.
func (e *endpoint) done(ctx context.Context, rec *record, r *http.Request, status int, took time.Duration) {
	if f := rec.take(); f.reason != "" {
		e.log(ctx, f, r, status, took)
	}
}

// log counts a refusal and logs it, within the log rate limit.
func (e *endpoint) log(ctx context.Context, f refusal, r *http.Request, status int, took time.Duration) {
	if e.opts.Metrics != nil {
		e.opts.Metrics.refusals.WithLabelValues(f.reason).Inc()
	}
	ok, suppressed := e.limiter.allow(f.reason)
	if !ok {
		return
	}
	attrs := []slog.Attr{
		slog.String("reason", f.reason), slog.String("code", string(f.code)),
		slog.String("message", f.message), slog.Int("status", status),
		slog.String("method", r.Method), slog.Duration("duration", took),
	}
	if f.name != "" {
		attrs = append(attrs, slog.String("operation", f.name))
	}
	if f.cause != "" {
		attrs = append(attrs, slog.String("cause", f.cause))
	}
	if suppressed > 0 {
		attrs = append(attrs, slog.Int("suppressed", suppressed))
	}
	e.opts.Logger.LogAttrs(context.WithoutCancel(ctx), slog.LevelWarn, "graphql refused", attrs...)
}

// check refuses, with a status and a message that echoes nothing of the
// request, what gqlgen's transports would answer without a code or with the
// body echoed: other methods, other content types, URL escapes that do not
// decode, preflights and WebSocket upgrades from pages on another origin,
// bodies over the limit, bodies that are not one JSON request object, and
// batches (JSON arrays) of operations. A POST body is read here,
// whole, under the limit, and handed on.
func (e *endpoint) check(w http.ResponseWriter, r *http.Request) (status int, msg string, params cachedParams) {
	// The CORS middleware answers the preflights of the origins it allows,
	// so any that reaches here is from a page on an origin not allowed.
	preflight := r.Method == http.MethodOptions && r.Header.Get("Origin") != "" && r.Header.Get("Access-Control-Request-Method") != ""
	if preflight || r.Header.Get("Upgrade") != "" && !sameOrigin(r) {
		return http.StatusForbidden, "a page on another origin may call flowsnap only when that origin is allowed (--cors-origin)", params
	}
	if streaming(r) && r.Method == http.MethodGet {
		return 0, "", params
	}
	switch r.Method {
	case http.MethodGet:
		if len(r.URL.RawQuery) > int(e.opts.MaxBodyBytes) {
			return http.StatusRequestURITooLong, fmt.Sprintf("the query string is longer than %d bytes", e.opts.MaxBodyBytes), params
		}
		q, err := url.ParseQuery(r.URL.RawQuery)
		if err != nil {
			return http.StatusBadRequest, "the query string is not valid URL encoding", params
		}
		if q.Get("query") == "" && q.Get("extensions") == "" {
			return http.StatusBadRequest, noQuery, params
		}
		return 0, "", params
	case http.MethodPost:
	default:
		w.Header().Set("Allow", "GET, POST")
		return http.StatusMethodNotAllowed, fmt.Sprintf("method %s is not allowed: use POST, or GET for queries", clip(r.Method)), params
	}
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "application/json" {
		return http.StatusUnsupportedMediaType, "a POST body must be application/json", params
	}
	tooLarge := func() string { return fmt.Sprintf("the request body is larger than %d bytes", e.opts.MaxBodyBytes) }
	if r.ContentLength > e.opts.MaxBodyBytes {
		// Refused unread; the connection is closed rather than read to
		// its end.
		w.Header().Set("Connection", "close")
		return http.StatusRequestEntityTooLarge, tooLarge(), params
	}
	if r.ContentLength < 0 || r.ContentLength > heavyBody {
		switch e.pool.take(r.Context()) {
		case slotBusy:
			busyError(r.Context())
			w.Header().Set("Connection", "close")
			return http.StatusServiceUnavailable, "the server is busy reading other large requests: retry shortly", params
		case slotEnded:
			return http.StatusServiceUnavailable, "the request waited too long to be read", params
		}
	}
	var buf bytes.Buffer
	if r.ContentLength > 0 {
		buf.Grow(int(r.ContentLength) + bytes.MinRead)
	}
	_, err = buf.ReadFrom(http.MaxBytesReader(w, r.Body, e.opts.MaxBodyBytes))
	body := buf.Bytes()
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return http.StatusRequestEntityTooLarge, tooLarge(), params
	case err != nil:
		return http.StatusBadRequest, "the request body could not be read", params
	}
	params, msg = requestShape(body, e.opts.MaxVariablesBytes, e.opts.MaxVariableValues)
	if msg != "" {
		if strings.HasPrefix(msg, "the variables") {
			return http.StatusRequestEntityTooLarge, msg, params
		}
		return http.StatusBadRequest, msg, params
	}
	if len(body) > heavyBody {
		// Decoding a large body again, as gqlgen's transport does, costs
		// more than lexing its document: a document the prescan refuses is
		// answered here.
		if gqlErr := e.prescanBody(r.Context(), params.query); gqlErr != nil {
			writeRequestError(w, r, presenter()(r.Context(), gqlErr))
			return answered, "", params
		}
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	return 0, "", params
}

// answered is the status check returns for a request it has answered.
const answered = -1

// prescanBody prescans the query of a body, unless it is in the cache.
func (e *endpoint) prescanBody(ctx context.Context, raw json.RawMessage) *gqlerror.Error {
	query, ok := queryText(raw)
	if !ok || query == "" {
		return nil
	}
	if _, ok := e.guard.cache.Get(ctx, query); ok {
		return nil
	}
	return e.guard.prescan(ctx, query)
}

// queryText is the text of a body's query member, which requestShape
// found to be a JSON string. One without escapes is its own text: decoding
// it again would scan the whole document twice more.
func queryText(raw json.RawMessage) (string, bool) {
	if len(raw) >= 2 && raw[0] == '"' && bytes.IndexByte(raw, '\\') < 0 {
		return string(raw[1 : len(raw)-1]), true
	}
	var query string
	err := json.Unmarshal(raw, &query)
	return query, err == nil
}

// writeRequestError answers a request error as requestErrorWriter makes
// gqlgen's answers: 400 under application/graphql-response+json, 200 under
// application/json, no data entry.
func writeRequestError(w http.ResponseWriter, r *http.Request, gqlErr *gqlerror.Error) {
	media, status := responseMedia(r), http.StatusOK
	if media == mediaGraphQLResponse {
		status = http.StatusBadRequest
	}
	w.Header().Set("Content-Type", media)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"errors": gqlerror.List{gqlErr}})
}

// sameOrigin reports whether r carries no Origin (not a browser page, or
// one the CORS middleware vouched for) or one on r's own host: the rule the
// WebSocket handshake applies, checked first so that its refusal is coded,
// counted and logged like any other.
func sameOrigin(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	u, err := url.Parse(origin)
	return err == nil && u.Host != "" && strings.EqualFold(u.Host, r.Host)
}

// requestShape says what is wrong with a POST body that is not one GraphQL
// request object, in words about its shape only; else it returns the
// request's members as sent.
func requestShape(body []byte, maxVariables, maxValues int) (cachedParams, string) {
	var none cachedParams
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) > 0 && trimmed[0] == '[' {
		return none, "batched requests (a JSON array of operations) are not supported: send one operation per request"
	}
	// Counted before anything is decoded: the request object's own keys
	// and an extensions object take a few more.
	if jsonValues(body) > maxValues+16 {
		return none, fmt.Sprintf("the variables hold more than %d values", maxValues)
	}
	if !json.Valid(body) {
		return none, "the request body is not valid JSON"
	}
	req, ok := requestMembers(body)
	if !ok {
		return none, "the request body must be a JSON object with a query string"
	}
	if len(req.variables) > maxVariables {
		return none, fmt.Sprintf("the variables are larger than %d bytes", maxVariables)
	}
	kinds := []struct {
		name string
		raw  json.RawMessage
		want byte
	}{{"query", req.query, '"'}, {"operationName", req.operationName, '"'}, {"variables", req.variables, '{'}, {"extensions", req.extensions, '{'}}
	for _, k := range kinds {
		if absent(k.raw) || k.raw[0] == k.want {
			continue
		}
		if k.want == '"' {
			return none, fmt.Sprintf("%q must be a string", k.name)
		}
		return none, fmt.Sprintf("%q must be an object", k.name)
	}
	if absent(req.query) && absent(req.extensions) {
		return none, noQuery
	}
	return req, ""
}

// requestMembers returns the members of body, valid JSON, that a GraphQL
// request has, as encoding/json unmarshals an object into fields of those
// names: keys matched without regard to case, the last of a name winning,
// null as no object at all. ok is false when body is neither an object nor
// null. It scans body once, where encoding/json would scan it twice and
// reflect on every member.
func requestMembers(body []byte) (p cachedParams, ok bool) {
	i := skipSpace(body, 0)
	if bytes.HasPrefix(body[i:], []byte("null")) {
		return p, true
	}
	if i >= len(body) || body[i] != '{' {
		return p, false
	}
	i = skipSpace(body, i+1)
	for i < len(body) && body[i] == '"' {
		end := valueEnd(body, i)
		key := string(body[i+1 : end-1])
		if strings.IndexByte(key, '\\') >= 0 {
			_ = json.Unmarshal(body[i:end], &key)
		}
		i = skipSpace(body, skipSpace(body, end)+1) // past the colon
		vend := valueEnd(body, i)
		v := json.RawMessage(body[i:vend])
		switch {
		case strings.EqualFold(key, "query"):
			p.query = v
		case strings.EqualFold(key, "operationName"):
			p.operationName = v
		case strings.EqualFold(key, "variables"):
			p.variables = v
		case strings.EqualFold(key, "extensions"):
			p.extensions = v
		}
		i = skipSpace(body, vend)
		if i < len(body) && body[i] == ',' {
			i = skipSpace(body, i+1)
		}
	}
	return p, true
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

// valueEnd returns where the JSON value that starts at b[i] ends, b being
// valid JSON.
func valueEnd(b []byte, i int) int {
	depth, inString := 0, false
	for j := i; j < len(b); j++ {
		c := b[j]
		switch {
		case inString:
			if c == '\\' {
				j++
			} else if c == '"' {
				inString = false
				if depth == 0 {
					return j + 1
				}
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			if depth == 0 {
				return j
			}
			if depth--; depth == 0 {
				return j + 1
			}
		case depth == 0 && (c == ',' || c == ' ' || c == '\t' || c == '\r' || c == '\n'):
			return j
		}
	}
	return len(b)
}

// noQuery refuses a request with neither a query nor the extensions that
// stand for one (a persisted query's hash): it is no GraphQL request.
const noQuery = "the request has no query"

// absent reports whether a JSON member is missing or null.
func absent(raw json.RawMessage) bool { return len(raw) == 0 || string(raw) == "null" }

// jsonValues counts, without decoding, the list elements and object
// members of a JSON text, roughly (commas and openings outside strings).
func jsonValues(b []byte) int {
	n, inString := 0, false
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case inString && c == '\\':
			i++
		case c == '"':
			inString = !inString
		case inString:
		case c == ',' || c == '[' || c == '{':
			n++
		}
	}
	return n
}

// busy reports whether the request was refused for a full parsing queue.
func (r *record) busy() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.status == http.StatusServiceUnavailable
}

// statusWriter remembers the status written, for the refusal log line,
// and writes the record's status instead of gqlgen's when it has one.
//
// Once the request's handler has returned it writes nothing: gqlgen's SSE
// transport sends keep-alives from a goroutine of its own, which can tick
// after the stream ended, and a write or flush of a finished response
// panics the server.
type statusWriter struct {
	http.ResponseWriter
	rec    *record
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
	s.rec.mu.Lock()
	if s.rec.status != 0 {
		code = s.rec.status
	}
	s.rec.mu.Unlock()
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

func (s *statusWriter) Flush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.finished {
		return
	}
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Hijack hands a WebSocket upgrade the connection underneath.
func (s *statusWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	s.status, s.wrote = http.StatusSwitchingProtocols, true
	return http.NewResponseController(s.ResponseWriter).Hijack()
}
