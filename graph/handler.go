package graph

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"runtime"
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

	"github.com/flowsnap/flowsnap/fault"
	"github.com/flowsnap/flowsnap/live"
	"github.com/flowsnap/flowsnap/snapshot"
)

// Options are the limits and switches of the GraphQL endpoint. Zero values
// mean the defaults of DefaultOptions.
type Options struct {
	// Timeout bounds one operation, its read transaction included.
	Timeout time.Duration
	// ComplexityLimit bounds an operation's cost: roughly the number of
	// fields it can return, with connections costing first × their
	// selection and batches len(ids) × theirs.
	ComplexityLimit int
	// MaxDepth bounds how deeply fields nest.
	MaxDepth int
	// MaxAliases bounds how many aliased fields an operation has.
	MaxAliases int
	// MaxTokens bounds how many tokens the parser reads.
	MaxTokens int
	// MaxBodyBytes bounds a request body (and a GET query string).
	MaxBodyBytes int64
	// MaxNodes bounds a document's size as written: its fields, inline
	// fragments, fragment spreads and directives, in total.
	MaxNodes int
	// MaxFields bounds the fields of a document once every fragment spread
	// is expanded.
	MaxFields int
	// MaxSameName bounds how many fields of one response name a selection
	// set may hold (spreads merged in): the overlapping-fields check of
	// validation compares each pair of them.
	MaxSameName int
	// MaxVariablesBytes bounds a request's variables as sent.
	MaxVariablesBytes int
	// MaxParsing bounds how many documents not in the query cache are
	// parsed and validated at once (large bodies read and decoded too).
	MaxParsing int
	// MaxParsingQueue bounds how many requests wait for one of those
	// slots; past it a request is refused at once, 503 TIMEOUT.
	MaxParsingQueue int
	// ParsingDutyPercent is the share of its time a parsing slot may be
	// busy: held for d, it rests d × (100 − p) / p before it is taken
	// again. 100 never rests.
	ParsingDutyPercent int
	// MaxVariableValues bounds how many values (list elements and object
	// members) a request's variables hold.
	MaxVariableValues int
	// MaxErrors bounds the errors one response carries.
	MaxErrors int
	// MaxResponseBytes bounds a response's data.
	MaxResponseBytes int
	// DisableIntrospection turns introspection off.
	DisableIntrospection bool
	// Logger receives one line per operation; nil discards.
	Logger *slog.Logger
	// Metrics, when set, counts operations.
	Metrics *Metrics
	// OnOperation, when set, is called after each operation with the read
	// it used (and after each subscription event); for tests that count
	// statements.
	OnOperation func(rd *snapshot.Read)
	// Live, when set, serves subscriptions; without it they are refused.
	Live *live.Watcher
	// KeepAlive is how often an idle subscription is sent a keep-alive
	// (a WebSocket ping message, an SSE comment).
	KeepAlive time.Duration
	// Tracer, when set, makes each operation and each subscription event
	// a span (trace.go); nil traces nothing.
	Tracer trace.Tracer
	// NoDirect leaves every operation to gqlgen's executor, which
	// otherwise answers only the queries the direct answer does not know
	// (direct.go): the same response, at a higher cost.
	NoDirect bool
}

// DefaultOptions are the limits used where Options leaves a zero.
var DefaultOptions = Options{
	Timeout:         10 * time.Second,
	ComplexityLimit: 100_000,
	MaxDepth:        16,
	MaxAliases:      200,
	MaxTokens:       20_000,
	MaxBodyBytes:    1 << 20,
	// A dashboard's largest query has a few hundred fields; these leave
	// it room twenty times over while keeping validation to milliseconds.
	MaxNodes:    5_000,
	MaxFields:   10_000,
	MaxSameName: 100,
	MaxErrors:   100,
	// 200 ids of 1,000 bytes.
	MaxVariablesBytes: 256 << 10,
	MaxParsing:        max(1, runtime.GOMAXPROCS(0)/2),
	MaxParsingQueue:   64,
	// Held for as long as it rests: the slots' work takes at most half of
	// their CPUs.
	ParsingDutyPercent: 30,
	// Ten times a batch of 200 ids.
	MaxVariableValues: 2_000,
	MaxResponseBytes:  32 << 20,
	KeepAlive:         15 * time.Second,
}

func (o Options) withDefaults() Options {
	d := DefaultOptions
	if o.Timeout <= 0 {
		o.Timeout = d.Timeout
	}
	if o.ComplexityLimit <= 0 {
		o.ComplexityLimit = d.ComplexityLimit
	}
	if o.MaxDepth <= 0 {
		o.MaxDepth = d.MaxDepth
	}
	if o.MaxAliases <= 0 {
		o.MaxAliases = d.MaxAliases
	}
	if o.MaxTokens <= 0 {
		o.MaxTokens = d.MaxTokens
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = d.MaxBodyBytes
	}
	if o.MaxNodes <= 0 {
		o.MaxNodes = d.MaxNodes
	}
	if o.MaxFields <= 0 {
		o.MaxFields = d.MaxFields
	}
	if o.MaxSameName <= 0 {
		o.MaxSameName = d.MaxSameName
	}
	if o.MaxVariablesBytes <= 0 {
		o.MaxVariablesBytes = d.MaxVariablesBytes
	}
	if o.MaxParsing <= 0 {
		o.MaxParsing = d.MaxParsing
	}
	if o.MaxParsingQueue <= 0 {
		o.MaxParsingQueue = d.MaxParsingQueue
	}
	if o.ParsingDutyPercent <= 0 || o.ParsingDutyPercent > 100 {
		o.ParsingDutyPercent = d.ParsingDutyPercent
	}
	if o.MaxVariableValues <= 0 {
		o.MaxVariableValues = d.MaxVariableValues
	}
	if o.MaxErrors <= 0 {
		o.MaxErrors = d.MaxErrors
	}
	if o.MaxResponseBytes <= 0 {
		o.MaxResponseBytes = d.MaxResponseBytes
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.KeepAlive <= 0 {
		o.KeepAlive = d.KeepAlive
	}
	return o
}

// NewHandler returns the GraphQL endpoint over reader: POST and GET (GET runs
// queries only), answering application/graphql-response+json or
// application/json as the client accepts, with automatic persisted queries
// (the client sends the query's SHA-256 in extensions.persistedQuery). Each operation reads in one
// snapshot transaction, opened at its first read and ended when its response
// is complete; the response carries the position in extensions.position.
func NewHandler(reader *snapshot.Reader, opts Options) http.Handler {
	opts = opts.withDefaults()
	cfg := Config{Resolvers: &Resolver{Reader: reader}}
	setComplexity(&cfg.Complexity)
	es := NewExecutableSchema(cfg)
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
	srv.SetErrorPresenter(presenter())
	srv.SetRecoverFunc(recoverer(opts.Logger))
	if !opts.DisableIntrospection {
		srv.Use(extension.Introspection{})
	}
	srv.Use(shapeLimit{es: es, opts: opts})
	srv.AroundOperations(func(ctx context.Context, next graphql.OperationHandler) graphql.ResponseHandler {
		rh := operation(ctx, next, reader, opts)
		return func(ctx context.Context) *graphql.Response {
			resp := rh(ctx)
			// An operation refused before it runs answers here, without
			// the response middleware.
			recordOf(ctx).answered()
			return resp
		}
	})
	srv.AroundResponses(func(ctx context.Context, next graphql.ResponseHandler) *graphql.Response {
		// Parsing and validation are over once a response is made.
		recordOf(ctx).releaseSlot()
		resp := capErrors(next(ctx), opts.MaxErrors)
		recordOf(ctx).answered()
		return resp
	})
	return liftDeadlines(&endpoint{next: withMinRevisionHeader(srv), reader: reader, opts: opts, pool: pool, guard: guard, limiter: newLogLimiter(10),
		shape: shapeLimit{es: es, opts: opts}, cached: newCachedExecutor(es, opts), recover: recoverer(opts.Logger)})
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
func operation(ctx context.Context, next graphql.OperationHandler, reader *snapshot.Reader, opts Options) graphql.ResponseHandler {
	if isSubscription(ctx) {
		return subscription(ctx, next, reader, opts)
	}
	q, err := beginQuery(ctx, reader, opts)
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
		if !opts.NoDirect && !tried {
			tried = true
			if resp = answerDirect(dctx, q.rd); resp != nil {
				answeredDirectly = true
				// What the executor's response middleware does for an
				// answer without errors.
				recordOf(ctx).releaseSlot()
			}
		}
		direct := resp != nil
		if !direct {
			resp = rh(dctx)
		}
		return q.respond(ctx, dctx, resp, direct)
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
func beginQuery(ctx context.Context, reader *snapshot.Reader, opts Options) (*query, error) {
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
	ctx = context.WithValue(ctx, loadersKey{}, newLoaders(reader, rd))
	if oc := graphql.GetOperationContext(ctx); oc != nil {
		rec := recordOf(ctx)
		rec.mu.Lock()
		rec.name = clip(oc.OperationName)
		rec.mu.Unlock()
	}
	return &query{ctx: ctx, rd: rd, start: start, deadline: start.Add(opts.Timeout), opts: opts, span: span}, nil
}

// respond completes resp, the operation's answer (direct says the direct
// answer wrote it), made with dctx: a TIMEOUT error when dctx ran out
// before anything was answered, the size limit, and the cost and position
// in its extensions. It ends the read, logs the operation and hands a
// direct answer's body to the request's record (see answerBody).
func (q *query) respond(ctx, dctx context.Context, resp *graphql.Response, direct bool) *graphql.Response {
	opts := q.opts
	if resp == nil && dctx.Err() != nil {
		resp = &graphql.Response{Errors: gqlerror.List{timeoutError(dctx, opts)}}
	}
	if resp != nil && len(resp.Data) > opts.MaxResponseBytes {
		msg := fmt.Sprintf("the response is larger than %d bytes", opts.MaxResponseBytes)
		recordOf(ctx).refuse("size", fault.ComplexityLimit, msg)
		resp = &graphql.Response{Errors: gqlerror.List{{Message: msg, Extensions: map[string]any{"code": string(fault.ComplexityLimit)}}}}
	}
	var ext extensions
	if resp != nil {
		ext.cost, ext.hasCost = costOf(ctx)
		ext.pos, ext.hasPos = q.rd.Position()
		if ext.hasPos && len(resp.Errors) == 0 {
			recordOf(ctx).setETag(ext.pos)
		}
	}
	q.ended.Do(func() {
		q.rd.End()
		q.finish(ctx, resp, direct)
	})
	if direct && len(resp.Errors) == 0 {
		if standIn := answerBody(ctx, resp, ext); standIn != nil {
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
	if !recordOf(ctx).refused() {
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

// setComplexity gives connections and batches their real cost: a page costs
// its size times its selection, a batch its length times its selection.
func setComplexity(c *ComplexityRoot) {
	page := func(child int, first *int) int {
		n := snapshot.DefaultPageSize
		if first != nil && *first > 0 {
			n = *first
		}
		return 1 + n*max(child, 1)
	}
	c.Run.Children = func(child int, first *int, _ *string) int { return page(child, first) }
	c.Run.Rounds = func(child int, first *int, _ *string) int { return page(child, first) }
	c.Query.Runs = func(child int, ids []string) int { return batchCost(child, len(ids)) }
	journalComplexity(c, page)
	findComplexity(c)
}
