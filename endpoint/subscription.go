package endpoint

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/flowsnap/flowsnap/endpoint/record"
	"github.com/flowsnap/flowsnap/fault"
	"github.com/flowsnap/flowsnap/graph"
	"github.com/flowsnap/flowsnap/live"
	"github.com/flowsnap/flowsnap/plan"
	"github.com/flowsnap/flowsnap/snapshot"
)

// subscription serves one subscription operation: it takes a place from
// the watcher (or refuses), logs its start and end, and reads each event in
// a snapshot of its own.
func subscription(ctx context.Context, next graphql.OperationHandler, reader *snapshot.Reader, planner *plan.Planner, opts Options) graphql.ResponseHandler {
	if opts.Live == nil {
		return refuseOperation(ctx, fault.Errorf(fault.BadUserInput, "this server does not serve subscriptions"))
	}
	sub, err := opts.Live.Subscribe()
	if err != nil {
		return refuseOperation(ctx, err)
	}
	min, err := minRevision(ctx)
	if err != nil {
		sub.Close()
		return refuseOperation(ctx, err)
	}
	st := live.NewStream(sub, min)
	present := graph.Presenter()
	ctx = live.WithStream(ctx, st)
	name, field := operationName(ctx)
	start := time.Now()
	var events atomic.Int64
	startAttrs := []slog.Attr{slog.String("operation", name), slog.String("field", field), slog.Int("open", opts.Live.Open())}
	if p, ok := principalOf(ctx, opts); ok {
		startAttrs = append(startAttrs, p)
	}
	opts.Logger.LogAttrs(ctx, slog.LevelInfo, "subscription start", startAttrs...)
	var once sync.Once
	end := func(why string) {
		once.Do(func() {
			sub.Close()
			opts.Logger.LogAttrs(ctx, slog.LevelInfo, "subscription end", slog.String("operation", name),
				slog.String("field", field), slog.String("reason", why), slog.Int64("events", events.Load()),
				slog.Duration("duration", time.Since(start)))
		})
	}
	stopWatch := context.AfterFunc(ctx, func() { end("client gone") })
	rh := next(ctx)
	return func(ctx context.Context) *graphql.Response {
		ctx, span := startEvent(ctx, opts.Tracer, name, field)
		ectx, rd := reader.Begin(ctx)
		defer rd.End()
		ectx = planner.Begin(ectx, reader, nil)
		st.Lend(ectx, rd)
		resp := rh(ectx)
		rd.End()
		var err error
		if resp != nil {
			err = st.TakeErr()
		}
		endEvent(span, rd, resp, err)
		if resp == nil {
			stopWatch()
			why := "complete"
			select {
			case <-sub.Done():
				why = "server shutting down"
			default:
				if ctx.Err() != nil {
					why = "client gone"
				}
			}
			end(why)
			return nil
		}
		if err != nil {
			ge := present(ctx, err)
			ge.Path = ast.Path{ast.PathName(field)}
			resp.Errors = append(gqlerror.List{ge}, resp.Errors...)
		}
		if pos, ok := rd.Position(); ok {
			if resp.Extensions == nil {
				resp.Extensions = map[string]any{}
			}
			resp.Extensions["position"] = pos
			st.Sent(pos.Revision)
		}
		events.Add(1)
		sub.Sent()
		if opts.OnOperation != nil {
			opts.OnOperation(rd)
		}
		return resp
	}
}

// refuseOperation answers an operation refused before it runs with err
// and nothing else, and records the refusal for the request's count and
// log line.
func refuseOperation(ctx context.Context, err error) graphql.ResponseHandler {
	code, msg := fault.CodeOf(err), fault.MessageOf(err)
	record.Of(ctx).Refuse(record.ReasonOf(code), code, msg)
	return graphql.OneShot(&graphql.Response{Errors: gqlerror.List{{
		Message:    msg,
		Extensions: map[string]any{"code": string(code)},
	}}})
}

func operationName(ctx context.Context) (name, field string) {
	oc := graphql.GetOperationContext(ctx)
	if oc == nil || oc.Operation == nil {
		return "", ""
	}
	name = oc.OperationName
	if name == "" {
		name = oc.Operation.Name
	}
	for _, sel := range graphql.CollectFields(oc, oc.Operation.SelectionSet, []string{"Subscription"}) {
		return name, sel.Name
	}
	return name, ""
}

func isSubscription(ctx context.Context) bool {
	oc := graphql.GetOperationContext(ctx)
	return oc != nil && oc.Operation != nil && oc.Operation.Operation == ast.Subscription
}

// liftDeadlines lifts the server's read and write deadlines from
// subscription requests (WebSocket upgrades, SSE): they are meant to bound
// a request, and a stream lives as long as its client wants. An SSE
// request's body is still read under the read deadline, which is lifted
// only once the body is whole: else a client trickling a body would hold
// its connection for as long as it likes.
func liftDeadlines(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if streaming(r) {
			rc := http.NewResponseController(w)
			_ = rc.SetWriteDeadline(time.Time{})
			if r.Method == http.MethodPost {
				r.Body = &liftAtEOF{ReadCloser: r.Body, lift: func() { _ = rc.SetReadDeadline(time.Time{}) }}
			} else {
				_ = rc.SetReadDeadline(time.Time{})
			}
		}
		next.ServeHTTP(w, r)
	})
}

// liftAtEOF calls lift once its body has been read to the end.
type liftAtEOF struct {
	io.ReadCloser
	lift func()
	once sync.Once
}

func (b *liftAtEOF) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		b.once.Do(b.lift)
	}
	return n, err
}
