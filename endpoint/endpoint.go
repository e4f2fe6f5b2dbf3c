package endpoint

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/executor"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/flowsnap/flowsnap/access"
	"github.com/flowsnap/flowsnap/endpoint/record"
	"github.com/flowsnap/flowsnap/fault"
	"github.com/flowsnap/flowsnap/graph"
	"github.com/flowsnap/flowsnap/plan"
	"github.com/flowsnap/flowsnap/snapshot"
)

// endpoint is the HTTP side of /graphql around gqlgen's server: it bounds
// the request (its time, from the first byte read, covering parse and
// validation; its body), refuses what is not a GraphQL request with a code
// and without echoing it, and counts and logs every refusal once.
type endpoint struct {
	next    http.Handler
	reader  *snapshot.Reader
	planner *plan.Planner
	opts    Options
	pool    *parsePool
	guard   documentGuard
	texts   *queryTexts
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
	var ctx context.Context
	var cancel context.CancelFunc
	if streaming(r) {
		// Cancelled when a write to the stream misses its deadline.
		ctx, cancel = context.WithCancel(r.Context())
	} else {
		ctx, cancel = context.WithTimeout(r.Context(), e.opts.Timeout)
	}
	defer cancel()
	rec := &record.Record{}
	// Deferred: a slot kept by a request that panicked would be lost to
	// every request after it.
	defer rec.ReleaseSlot()
	ctx = record.With(ctx, rec)
	r = r.WithContext(ctx)
	// The answer's content type, and its status, depend on Accept; a GET
	// answer is a snapshot of a store that moves on, which a cache keeps
	// only to revalidate it by its ETag (docs/contract.md#client-conventions).
	w.Header().Add("Vary", "Accept")
	if r.Method == http.MethodGet && r.Header.Get("Upgrade") == "" {
		w.Header().Set("Cache-Control", "no-cache")
	}
	sw := &statusWriter{ResponseWriter: w, status: http.StatusOK, rec: rec}
	defer sw.finish()
	if r.Header.Get("Upgrade") != "" {
		rec.SetReport(func(f record.Refusal) { e.log(ctx, f, r, http.StatusSwitchingProtocols, time.Since(start)) })
	}
	if e.opts.Authenticator != nil {
		p, err := e.authenticate(r)
		if err != nil {
			refuseUnauthenticated(sw, r, rec, err)
			e.done(ctx, rec, r, sw.status, time.Since(start))
			return
		}
		if p != nil {
			rec.SetPrincipal(p.Name)
			ctx = access.NewContext(ctx, p)
			if streaming(r) {
				ctx = recheck(ctx, e.opts, r.Header.Get("Authorization"))
			}
			r = r.WithContext(ctx)
		}
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
			if rec.Busy() {
				reason = "busy"
			}
		}
		rec.Refuse(reason, code, msg)
		writeError(sw, responseMedia(r), status, code, msg)
	case streaming(r):
		e.stream(sw, r, cancel)
	case r.Method == http.MethodGet:
		digest := requestDigest(r)
		if !e.notModified(ctx, sw, r, digest) {
			rec.TagWith(digest, sw.Header())
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
	rec := record.Of(r.Context())
	rec.AnswersInOneBody()
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

// done counts and logs a refused request (what a WebSocket connection's
// operations did not report already); served ones are logged by finish,
// once per operation.
func (e *endpoint) done(ctx context.Context, rec *record.Record, r *http.Request, status int, took time.Duration) {
	if f := rec.Take(); f.Reason != "" {
		e.log(ctx, f, r, status, took)
	}
}

// log counts a refusal and logs it, within the log rate limit.
func (e *endpoint) log(ctx context.Context, f record.Refusal, r *http.Request, status int, took time.Duration) {
	if e.opts.Metrics != nil {
		e.opts.Metrics.refuse(f.Reason)
	}
	ok, suppressed := e.limiter.allow(f.Reason)
	if !ok {
		return
	}
	attrs := []slog.Attr{
		slog.String("reason", f.Reason), slog.String("code", string(f.Code)),
		slog.String("message", f.Message), slog.Int("status", status),
		slog.String("method", r.Method), slog.Duration("duration", took),
	}
	if f.Name != "" {
		attrs = append(attrs, slog.String("operation", f.Name))
	}
	if f.Principal != "" {
		attrs = append(attrs, slog.String("principal", f.Principal))
	}
	if f.Cause != "" {
		attrs = append(attrs, slog.String("cause", f.Cause))
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
		return http.StatusMethodNotAllowed, fmt.Sprintf("method %s is not allowed: use POST, or GET for queries", record.Clip(r.Method)), params
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
			writeRequestError(w, r, graph.Presenter()(r.Context(), gqlErr))
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
	query, ok := e.texts.text(raw)
	if !ok || query == "" {
		return nil
	}
	if _, ok := e.guard.cache.Get(ctx, query); ok {
		return nil
	}
	return e.guard.prescan(ctx, query)
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
