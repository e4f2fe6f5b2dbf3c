package endpoint

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/executor"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/validator"

	"github.com/flowsnap/flowsnap/endpoint/record"
	"github.com/flowsnap/flowsnap/graph"
	"github.com/flowsnap/flowsnap/jsonwire"
	"github.com/flowsnap/flowsnap/plan"
)

// A query whose document is in the query cache was parsed, measured and
// validated when it was first sent; what is left to do for it is per
// request: its variables, its shape and cost, its read and its answer.
// gqlgen's POST transport and executor do that with much else around it: they
// decode the whole body again (the endpoint has read and checked it),
// make an operation context through the handler's extensions, set up the
// executor for the operation before the direct answer is tried, and
// marshal the answer through encoding/json: for a dashboard's polling, much
// of a request's CPU outside its read.
//
// So the endpoint answers a POSTed query whose document it has cached
// itself (answerCached), with the pieces the gqlgen path runs: the
// variables coerced by gqlparser as the executor coerces them, the same
// shape and cost limits (shapeLimit), the same read and loaders
// (beginQuery), the direct answer, and, for an operation the direct answer
// does not know, gqlgen's executor dispatching the operation in that same
// read (newCachedExecutor), with the handler's error presenter, recovery
// and error cap. Everything else — a document not cached, a persisted query, an
// error in the request, a subscription — goes the gqlgen way, which reports
// it; nothing is read or written before that is known.

// cachedParams are the members of a POST body (see requestShape) as sent.
type cachedParams struct {
	query, operationName, variables, extensions json.RawMessage
}

// newCachedExecutor makes the executor that runs an operation the direct
// answer leaves, with the handler's error presenter, recovery and error
// cap. It has no extensions and no query cache: it is only handed
// operation contexts made already.
func newCachedExecutor(es graphql.ExecutableSchema, opts Options) *executor.Executor {
	x := executor.New(es)
	x.SetErrorPresenter(graph.Presenter())
	x.SetRecoverFunc(graph.Recoverer(opts.Logger))
	x.AroundResponses(func(ctx context.Context, next graphql.ResponseHandler) *graphql.Response {
		return capErrors(next(ctx), opts.MaxErrors)
	})
	return x
}

// answerCached answers r, a POST whose body check read as params, when its
// document is in the query cache and its operation is a query that needs
// nothing of gqlgen's handler, and reports whether it did; when it did not,
// it has read and written nothing.
func (e *endpoint) answerCached(w http.ResponseWriter, r *http.Request, params cachedParams) bool {
	oc := e.cachedOperation(r, params)
	if oc == nil {
		return false
	}
	ctx := graphql.WithOperationContext(withMinHeader(r).Context(), oc)
	if ctx.Err() != nil || e.shape.MutateOperationContext(ctx, oc) != nil {
		return false
	}
	q, err := beginQuery(ctx, e.reader, e.planner, e.opts)
	if err != nil {
		return false
	}
	// The operation runs with the request's context, whose deadline
	// (endpoint.ServeHTTP) comes before the operation's would.
	ctx, q.cached = q.ctx, true
	var resp *graphql.Response
	var framed []byte
	if !e.opts.NoDirect {
		resp, framed = plan.AnswerDirect(ctx, q.rd)
	}
	if resp == nil {
		rh, rctx := e.cached.DispatchOperation(ctx, oc)
		resp = rh(rctx)
	}
	rec := record.Of(ctx)
	rec.AnswersInOneBody()
	resp = q.respond(ctx, ctx, resp, framed)
	w.Header().Set("Content-Type", responseMedia(r))
	if body := rec.TakeBody(); body != nil {
		// With its length known, the body goes out unchunked, with its
		// headers in one write to the connection where it can.
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		sendWhole(w, r, body)
		plan.GiveBuffer(body)
		return true
	}
	b, err := json.Marshal(resp)
	if err != nil {
		// What gqlgen's transport would do with a response it cannot write.
		panic(err)
	}
	_, _ = w.Write(b)
	return true
}

// cachedOperation returns the operation context of params when its
// document is in the query cache, its operation a query, its variables
// coerce and its extensions ask for no persisted query; nil otherwise.
func (e *endpoint) cachedOperation(r *http.Request, params cachedParams) *graphql.OperationContext {
	query, ok := e.texts.text(params.query)
	if !ok || query == "" {
		return nil
	}
	doc, ok := e.guard.cache.Get(r.Context(), query)
	if !ok {
		return nil
	}
	var name string
	if !absent(params.operationName) && json.Unmarshal(params.operationName, &name) != nil {
		return nil
	}
	op := doc.Operations.ForName(name)
	if op == nil || op.Operation != ast.Query {
		return nil
	}
	var vars, ext map[string]any
	if !decodeMember(params.variables, &vars) || !decodeMember(params.extensions, &ext) {
		return nil
	}
	if _, ok := ext["persistedQuery"]; ok {
		return nil
	}
	coerced, err := validator.VariableValues(e.guard.schema, op, vars)
	if err != nil {
		return nil
	}
	return &graphql.OperationContext{
		RawQuery:               query,
		Variables:              coerced,
		OperationName:          name,
		Doc:                    doc,
		Operation:              op,
		Extensions:             ext,
		Headers:                r.Header,
		DisableIntrospection:   e.opts.DisableIntrospection,
		RecoverFunc:            e.recover,
		ResolverMiddleware:     passField,
		RootResolverMiddleware: passRootField,
	}
}

// decodeMember decodes an object member of a request as gqlgen's
// transports decode the whole request (numbers kept as json.Number);
// absent or null leaves v nil.
func decodeMember(raw json.RawMessage, v *map[string]any) bool {
	if absent(raw) {
		return true
	}
	if m, ok := jsonwire.PlainObject(raw); ok {
		*v = m
		return true
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	return dec.Decode(v) == nil
}

// passField and passRootField are the middleware of a handler without
// field middleware: each field resolves as it is.
func passField(ctx context.Context, next graphql.Resolver) (any, error) { return next(ctx) }

func passRootField(ctx context.Context, next graphql.RootResolver) graphql.Marshaler {
	return next(ctx)
}
