package graph

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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

	"github.com/flowsnap/flowsnap/fault"
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
	// MaxBodyBytes bounds a request body.
	MaxBodyBytes int64
	// DisableIntrospection turns introspection off.
	DisableIntrospection bool
	// Logger receives one line per operation; nil discards.
	Logger *slog.Logger
	// Metrics, when set, counts operations.
	Metrics *Metrics
	// OnOperation, when set, is called after each operation with the read
	// it used; for tests that count statements.
	OnOperation func(rd *snapshot.Read)
}

// DefaultOptions are the limits used where Options leaves a zero.
var DefaultOptions = Options{
	Timeout:         10 * time.Second,
	ComplexityLimit: 100_000,
	MaxDepth:        16,
	MaxAliases:      200,
	MaxTokens:       20_000,
	MaxBodyBytes:    1 << 20,
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
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
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
	srv := handler.New(NewExecutableSchema(cfg))
	srv.AddTransport(transport.GET{})
	srv.AddTransport(transport.POST{})
	srv.SetQueryCache(lru.New[*ast.QueryDocument](1000))
	// Persisted queries let a dashboard send a hash instead of its query,
	// which keeps GET URLs short and cacheable.
	srv.Use(extension.AutomaticPersistedQuery{Cache: lru.New[string](1000)})
	srv.SetParserTokenLimit(opts.MaxTokens)
	srv.SetErrorPresenter(presenter(opts.Logger))
	srv.SetRecoverFunc(recoverer(opts.Logger))
	if !opts.DisableIntrospection {
		srv.Use(extension.Introspection{})
	}
	srv.Use(extension.FixedComplexityLimit(opts.ComplexityLimit))
	srv.Use(shapeLimit{maxDepth: opts.MaxDepth, maxAliases: opts.MaxAliases})
	srv.AroundOperations(func(ctx context.Context, next graphql.OperationHandler) graphql.ResponseHandler {
		return operation(ctx, next, reader, opts)
	})
	return limitBody(srv, opts.MaxBodyBytes)
}

// operation runs one operation in one read transaction with its own loaders
// and deadline, and ends the transaction as soon as the response is made.
// The deadline is put on the context that executes the fields, not on the
// one gqlgen hands back to the transport: a response handler that finds its
// context done answers nothing at all, where a client needs a TIMEOUT error.
func operation(ctx context.Context, next graphql.OperationHandler, reader *snapshot.Reader, opts Options) graphql.ResponseHandler {
	start := time.Now()
	deadline := start.Add(opts.Timeout)
	ctx, rd := reader.Begin(ctx)
	ctx = context.WithValue(ctx, loadersKey{}, newLoaders(reader))
	var once sync.Once
	end := func(ctx context.Context, resp *graphql.Response) {
		once.Do(func() {
			rd.End()
			finish(ctx, rd, resp, start, opts)
		})
	}
	rh := next(ctx)
	return func(ctx context.Context) *graphql.Response {
		dctx, cancel := context.WithDeadline(ctx, deadline)
		defer cancel()
		resp := rh(dctx)
		if resp == nil && dctx.Err() != nil {
			resp = &graphql.Response{Errors: gqlerror.List{{
				Message:    fmt.Sprintf("the operation did not finish within %s", opts.Timeout),
				Extensions: map[string]any{"code": string(fault.Timeout)},
			}}}
		}
		if resp != nil {
			if pos, ok := rd.Position(); ok {
				if resp.Extensions == nil {
					resp.Extensions = map[string]any{}
				}
				resp.Extensions["position"] = pos
			}
		}
		end(ctx, resp)
		return resp
	}
}

// finish logs and counts one operation.
func finish(ctx context.Context, rd *snapshot.Read, resp *graphql.Response, start time.Time, opts Options) {
	if opts.OnOperation != nil {
		opts.OnOperation(rd)
	}
	name, kind := "", ""
	if oc := graphql.GetOperationContext(ctx); oc != nil {
		name = oc.OperationName
		if oc.Operation != nil {
			kind = string(oc.Operation.Operation)
			if name == "" {
				name = oc.Operation.Name
			}
		}
	}
	outcome := "ok"
	if resp != nil && len(resp.Errors) > 0 {
		outcome = "error"
		if code, ok := resp.Errors[0].Extensions["code"].(string); ok {
			outcome = code
		}
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
	opts.Logger.LogAttrs(ctx, slog.LevelInfo, "graphql", attrs...)
	if opts.Metrics != nil {
		opts.Metrics.observe(name, outcome, elapsed)
	}
}

// limitBody refuses request bodies over max bytes with 413 and a GraphQL
// error, instead of letting the transport read (and echo) whatever it gets.
func limitBody(next http.Handler, max int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil && r.Method == http.MethodPost {
			body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, max))
			var tooBig *http.MaxBytesError
			switch {
			case errors.As(err, &tooBig):
				writeError(w, http.StatusRequestEntityTooLarge, fault.BadUserInput,
					fmt.Sprintf("the request body is larger than %d bytes", max))
				return
			case err != nil:
				writeError(w, http.StatusBadRequest, fault.BadUserInput, "the request body could not be read")
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		if r.Method == http.MethodGet && len(r.URL.RawQuery) > int(max) {
			writeError(w, http.StatusRequestURITooLong, fault.BadUserInput,
				fmt.Sprintf("the query string is longer than %d bytes", max))
			return
		}
		next.ServeHTTP(w, r)
	})
}

func writeError(w http.ResponseWriter, status int, code fault.Code, msg string) {
	w.Header().Set("Content-Type", "application/json")
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
		return 1 + n*child
	}
	c.Run.Children = func(child int, first *int, _ *string) int { return page(child, first) }
	c.Run.Rounds = func(child int, first *int, _ *string) int { return page(child, first) }
	c.Query.Runs = func(child int, ids []string) int { return 1 + len(ids)*child }
	journalComplexity(c, page)
}
