package endpoint

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/extension"
	"github.com/99designs/gqlgen/graphql/handler/lru"
	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
	"go.opentelemetry.io/otel/trace"

	"github.com/flowsnap/flowsnap/endpoint/record"
	"github.com/flowsnap/flowsnap/fault"
	"github.com/flowsnap/flowsnap/graph"
	"github.com/flowsnap/flowsnap/plan"
	"github.com/flowsnap/flowsnap/snapshot"
)

// NewHandler returns the GraphQL endpoint over reader: POST and GET (GET runs
// queries only), answering application/graphql-response+json or
// application/json as the client accepts, with automatic persisted queries
// (the client sends the query's SHA-256 in extensions.persistedQuery). Each operation reads in one
// snapshot transaction, opened at its first read and ended when its response
// is complete; the response carries the position in extensions.position.
func NewHandler(reader *snapshot.Reader, opts Options) http.Handler {
	opts = opts.withDefaults()
	opts.streams = newPlaces("streams", opts.MaxConnections, opts.MaxConnectionsPerClient)
	opts.subscriptions = newPlaces("subscriptions", 0, opts.MaxSubscriptionsPerClient)
	opts.events = make(chan struct{}, opts.MaxEvents)
	es := graph.NewSchema(reader)
	planner := plan.New(es.Schema()).WithRootArgs(graph.RootArgs(es))
	srv := handler.New(es)
	addLiveTransports(srv, opts)
	srv.AddTransport(transport.GET{})
	srv.AddTransport(transport.POST{})
	queries := lru.New[*ast.QueryDocument](1000)
	srv.SetQueryCache(queries)
	// Persisted queries let a dashboard send a hash instead of its query,
	// which keeps GET URLs short and cacheable. The guard comes after, to
	// measure the query the hash stands for.
	srv.Use(extension.AutomaticPersistedQuery{Cache: lru.New[string](1000)})
	pool := newParsePool(opts)
	guard := newDocumentGuard(opts, queries, pool, es.Schema())
	srv.Use(guard)
	srv.SetParserTokenLimit(opts.MaxTokens)
	srv.SetValidationRulesFn(cappedRules(opts.MaxErrors))
	srv.SetErrorPresenter(graph.Presenter())
	srv.SetRecoverFunc(graph.Recoverer(opts.Logger))
	if !opts.DisableIntrospection {
		srv.Use(extension.Introspection{})
	}
	shape := shapeLimit{es: es, opts: opts, source: reader.Source, plain: plainCosts(es)}
	srv.Use(shape)
	srv.AroundOperations(func(ctx context.Context, next graphql.OperationHandler) graphql.ResponseHandler {
		rh := operation(ctx, next, reader, planner, opts)
		return func(ctx context.Context) *graphql.Response {
			resp := rh(ctx)
			// An operation refused before it runs answers here, without
			// the response middleware.
			record.Of(ctx).Answered()
			return resp
		}
	})
	srv.AroundResponses(func(ctx context.Context, next graphql.ResponseHandler) *graphql.Response {
		// Parsing and validation are over once a response is made.
		record.Of(ctx).ReleaseSlot()
		resp := capErrors(next(ctx), opts.MaxErrors)
		record.Of(ctx).Answered()
		return resp
	})
	return liftDeadlines(&endpoint{next: withMinRevisionHeader(srv), reader: reader, planner: planner, opts: opts, pool: pool, guard: guard, texts: newQueryTexts(), limiter: newLogLimiter(10),
		shape: shape, cached: newCachedExecutor(es, opts), recover: graph.Recoverer(opts.Logger)})
}

// addLiveTransports adds the subscription transports. They come before GET
// and POST, which would otherwise take their requests: a WebSocket upgrade
// is a GET, and an SSE request a POST of JSON that accepts
// text/event-stream.
func addLiveTransports(srv *handler.Server, opts Options) {
	var init transport.WebsocketInitFunc
	if opts.Authenticator != nil {
		init = wsInit(opts)
	}
	srv.AddTransport(transport.Websocket{
		Implementation:   websocketConns{opts: opts},
		PayloadReadLimit: &opts.MaxBodyBytes,
		InitFunc:         dropInitPayload(init),
		// graphql-transport-ws keeps alive with ping messages, which the
		// client answers with pong: a client that stops answering is gone.
		PingPongInterval: opts.KeepAlive,
		// The older graphql-ws subprotocol has keep-alive messages.
		KeepAlivePingInterval: opts.KeepAlive,
		InitTimeout:           30 * time.Second,
	})
	srv.AddTransport(transport.SSE{KeepAlivePingInterval: opts.KeepAlive})
}

// capErrors keeps the first max errors of resp and says how many more
// there were.
func capErrors(resp *graphql.Response, max int) *graphql.Response {
	if resp == nil || len(resp.Errors) <= max {
		return resp
	}
	more := len(resp.Errors) - max
	resp.Errors = append(resp.Errors[:max:max], &gqlerror.Error{
		Message:    fmt.Sprintf("%d more errors left out", more),
		Extensions: map[string]any{"code": resp.Errors[0].Extensions["code"]},
	})
	return resp
}

// operation runs one operation in one read transaction with its own loaders
// and deadline, and ends the transaction as soon as the response is made.
// The deadline is put on the context that executes the fields, not on the
// one gqlgen hands back to the transport: a response handler that finds its
// context done answers nothing at all, where a client needs a TIMEOUT error.
func operation(ctx context.Context, next graphql.OperationHandler, reader *snapshot.Reader, planner *plan.Planner, opts Options) graphql.ResponseHandler {
	if isSubscription(ctx) {
		return subscription(ctx, next, reader, planner, opts)
	}
	q, err := beginQuery(ctx, reader, planner, opts)
	if err != nil {
		return refuseOperation(ctx, err)
	}
	rh := next(q.ctx)
	// A transport that streams calls the response handler until it
	// returns nil: the direct answer is tried on the first call only, and
	// a query it answered answers nothing more.
	tried, answeredDirectly := false, false
	return func(ctx context.Context) *graphql.Response {
		if answeredDirectly {
			return nil
		}
		dctx, cancel := context.WithDeadline(ctx, q.deadline)
		defer cancel()
		var resp *graphql.Response
		var framed []byte
		if !opts.NoDirect && !tried {
			tried = true
			if resp, framed = plan.AnswerDirect(dctx, q.rd); resp != nil {
				answeredDirectly = true
				// What the executor's response middleware does for an
				// answer without errors.
				record.Of(ctx).ReleaseSlot()
			}
		}
		if resp == nil {
			resp = rh(dctx)
		}
		return q.respond(ctx, dctx, resp, framed)
	}
}

// query is one query operation under way: its read, with the operation's
// loaders and least revision, and its deadline.
type query struct {
	// ctx carries the read and the loaders.
	ctx             context.Context
	rd              *snapshot.Read
	start, deadline time.Time
	opts            Options
	ended           sync.Once
	// cached says the endpoint answers it itself (answerCached).
	cached bool
	// span is the operation's, nil when tracing is off.
	span trace.Span
}

// beginQuery begins the read of the query operation in ctx, at or after
// its least revision (see minRevision), which is all it can fail on; it
// reads nothing yet.
func beginQuery(ctx context.Context, reader *snapshot.Reader, planner *plan.Planner, opts Options) (*query, error) {
	start := time.Now()
	ctx, span := startOperation(ctx, opts.Tracer)
	ctx, rd := reader.Begin(ctx)
	min, err := minRevision(ctx)
	if err != nil {
		rd.End()
		endSpan(span, rd, nil, string(fault.CodeOf(err)))
		return nil, err
	}
	rd.AtLeast(min)
	ctx = planner.Begin(ctx, reader, rd)
	if oc := graphql.GetOperationContext(ctx); oc != nil {
		record.Of(ctx).SetName(oc.OperationName)
	}
	return &query{ctx: ctx, rd: rd, start: start, deadline: start.Add(opts.Timeout), opts: opts, span: span}, nil
}

// respond completes resp, the operation's answer (framed, when set, is the
// buffer the direct answer wrote it in: see plan.AnswerDirect), made with
// dctx: a TIMEOUT error when dctx ran out before anything was answered,
// the size limit, and the cost and position in its extensions. It ends the
// read, logs the operation and hands a direct answer's body to the
// request's record (see answerBody).
func (q *query) respond(ctx, dctx context.Context, resp *graphql.Response, framed []byte) *graphql.Response {
	direct := framed != nil
	opts := q.opts
	if resp == nil && dctx.Err() != nil {
		resp = &graphql.Response{Errors: gqlerror.List{timeoutError(dctx, opts)}}
	}
	if resp != nil && len(resp.Data) > opts.MaxResponseBytes {
		msg := fmt.Sprintf("the response is larger than %d bytes", opts.MaxResponseBytes)
		record.Of(ctx).Refuse("size", fault.ComplexityLimit, msg)
		resp = &graphql.Response{Errors: gqlerror.List{{Message: msg, Extensions: map[string]any{"code": string(fault.ComplexityLimit)}}}}
	}
	var ext extensions
	if resp != nil {
		ext.cost, ext.hasCost = costOf(ctx)
		ext.pos, ext.hasPos = q.rd.Position()
		if ext.hasPos && len(resp.Errors) == 0 {
			record.Of(ctx).SetETag(func(digest string) string { return etag(ext.pos, digest) })
		}
	}
	q.ended.Do(func() {
		q.rd.End()
		q.finish(ctx, resp, direct)
	})
	if direct && len(resp.Errors) == 0 {
		if standIn := answerBody(ctx, framed, ext); standIn != nil {
			return standIn
		}
	}
	if resp != nil {
		ext.set(resp)
	}
	return resp
}

// operationOf returns the name (as the request gives it, else as the
// document does) and type of the operation in ctx; "" for what is not
// known.
func operationOf(ctx context.Context) (name, kind string) {
	if oc := graphql.GetOperationContext(ctx); oc != nil {
		name = oc.OperationName
		if oc.Operation != nil {
			kind = string(oc.Operation.Operation)
			if name == "" {
				name = oc.Operation.Name
			}
		}
	}
	return name, kind
}

// finish logs and counts the operation; direct says the direct answer
// wrote it (direct.go).
func (q *query) finish(ctx context.Context, resp *graphql.Response, direct bool) {
	rd, start, opts := q.rd, q.start, q.opts
	if opts.OnOperation != nil {
		opts.OnOperation(rd)
	}
	name, kind := operationOf(ctx)
	outcome := outcomeOf(resp)
	if q.span != nil {
		var cost *Cost
		if c, ok := costOf(ctx); ok {
			cost = &c
		}
		endSpan(q.span, rd, cost, outcome)
		// The log line names the operation's span.
		ctx = trace.ContextWithSpan(ctx, q.span)
	}
	elapsed := time.Since(start)
	attrs := []slog.Attr{
		slog.String("operation", name), slog.String("type", kind), slog.String("outcome", outcome),
		slog.Duration("duration", elapsed), slog.Int("statements", rd.Statements()),
	}
	if pos, ok := rd.Position(); ok {
		attrs = append(attrs, slog.Int64("revision", pos.Revision))
		if opts.Metrics != nil {
			opts.Metrics.revision.Set(float64(pos.Revision))
		}
	}
	if resp != nil {
		attrs = append(attrs, slog.Int("errors", len(resp.Errors)))
	}
	if direct {
		attrs = append(attrs, slog.Bool("direct", true))
	}
	if rd.RanAlone() {
		attrs = append(attrs, slog.Bool("alone", true))
	}
	if rd.EndedWithLast() {
		attrs = append(attrs, slog.Bool("endedWithLast", true))
	}
	if q.cached {
		attrs = append(attrs, slog.Bool("cached", true))
	}
	if p, ok := principalOf(ctx, opts); ok {
		attrs = append(attrs, p)
	}
	if !record.Of(ctx).Refused() {
		// A refused request is logged once, by the endpoint, with a rate
		// limit.
		opts.Logger.LogAttrs(ctx, slog.LevelInfo, "graphql", attrs...)
	}
	if opts.Metrics != nil {
		opts.Metrics.observe(name, outcome, elapsed)
	}
}

// writeError answers a request refused before gqlgen sees it, in the media
// type the client accepts.
func writeError(w http.ResponseWriter, media string, status int, code fault.Code, msg string) {
	w.Header().Set("Content-Type", media)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"errors": []map[string]any{{"message": msg, "extensions": map[string]any{"code": string(code)}}},
	})
}
