package graph

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/flowsnap/flowsnap/fault"
	"github.com/flowsnap/flowsnap/live"
	"github.com/flowsnap/flowsnap/snapshot"
)

// A subscription is served by two goroutines that meet once per event. The
// transport calls the operation's response handler for each event; the
// handler lends the resolver's stream an event context that carries a read
// of its own, not yet opened (a slot), and waits. The stream waits for the
// watcher to report a change it serves, then reads the event's root value
// in that context and hands it over; gqlgen resolves the rest of the
// selection in the same context, so the whole event is one snapshot, and
// the handler ends the read as soon as the event is made. Between events no
// read is open. A slow consumer takes its next slot late, and by then the
// watcher's notifications have coalesced: it gets the latest state, and
// nothing queues.

type streamKey struct{}

// stream is what a subscription's handler and its resolver share.
type stream struct {
	sub   *live.Sub
	slots chan slot
	// sent is the latest revision an event was read at. Every event is
	// read at it or later, whichever replica answers (SPEC §9), as is the
	// first at the request's minimum revision.
	sent atomic.Int64
	// err is the error of the event being handed over, set before the
	// value is sent: the stream runs outside the response's context, so
	// the handler adds it to the response.
	err error
}

// subscription serves one subscription operation: it takes a place from
// the watcher (or refuses), logs its start and end, and reads each event in
// a snapshot of its own.
func subscription(ctx context.Context, next graphql.OperationHandler, reader *snapshot.Reader, opts Options) graphql.ResponseHandler {
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
	st := &stream{sub: sub, slots: make(chan slot, 1)}
	st.sent.Store(min)
	present := presenter()
	ctx = context.WithValue(ctx, streamKey{}, st)
	name, field := operationName(ctx)
	start := time.Now()
	var events atomic.Int64
	opts.Logger.LogAttrs(ctx, slog.LevelInfo, "subscription start", slog.String("operation", name),
		slog.String("field", field), slog.Int("open", opts.Live.Open()))
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
		ectx = context.WithValue(ectx, loadersKey{}, newLoaders(reader, nil))
		select {
		case st.slots <- slot{ectx, rd}:
		default:
		}
		resp := rh(ectx)
		rd.End()
		if span != nil {
			outcome := outcomeOf(resp)
			if st.err != nil {
				outcome = string(fault.CodeOf(st.err))
			}
			if resp == nil {
				// No event: the subscription ended while this one waited.
				span.SetAttributes(attribute.Bool("flowsnap.subscription.ended", true))
			}
			endSpan(span, rd, nil, outcome)
		}
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
		if st.err != nil {
			ge := present(ctx, st.err)
			ge.Path = ast.Path{ast.PathName(field)}
			resp.Errors = append(gqlerror.List{ge}, resp.Errors...)
			st.err = nil
		}
		if pos, ok := rd.Position(); ok {
			if resp.Extensions == nil {
				resp.Extensions = map[string]any{}
			}
			resp.Extensions["position"] = pos
			if pos.Revision > st.sent.Load() {
				st.sent.Store(pos.Revision)
			}
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
	recordOf(ctx).refuse(reasonOf(code), code, msg)
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

// watch runs a subscription's stream: it reads the first event at once,
// then one whenever the watcher reports a change newer than the last event
// (by the revision read returns), until the client goes, the server shuts
// down or, after an error event, the subscription ends. read reads the
// event's value in the context it is given and says its revision.
//
// An event is read at the revision the watcher reported or later, and
// never before one already sent: with replicas, the next read may land on
// a copy that lags (it then waits as a request with a minimum revision
// does). A store restored to an earlier revision cannot be read at the
// one already sent; the SOURCE_CHANGED error event ends the subscription,
// and the client resyncs.
//
// A read that says again is followed at once by the next, without waiting
// for a change (the change feed reads a burst in batches); a read that
// fails with a code in final ends the subscription after its error event.
func watch[T any](ctx context.Context, setup func(*live.Sub), read func(ctx context.Context) (v T, revision int64, again bool, err error), final ...fault.Code) (<-chan T, error) {
	st, ok := ctx.Value(streamKey{}).(*stream)
	if !ok {
		return nil, fault.Errorf(fault.Internal, "a subscription without a stream")
	}
	setup(st.sub)
	if from := st.sub.From(); from > st.sent.Load() {
		st.sent.Store(from)
	}
	final = append(final, fault.SourceChanged)
	out := make(chan T)
	go func() {
		defer close(out)
		last, now := int64(0), true
		for {
			var sl slot
			select {
			case sl = <-st.slots:
			case <-ctx.Done():
				return
			case <-st.sub.Done():
				return
			}
			// Every read of the stream is in a slot taken here: the one
			// place to keep it from going back in time.
			sl.rd.AtLeast(st.sent.Load())
			if !now {
				// Wait for a change newer than what was sent.
				for {
					select {
					case <-st.sub.Changed():
					case <-ctx.Done():
						return
					case <-st.sub.Done():
						return
					}
					rev, reset := st.sub.Take()
					if reset {
						break
					}
					if rev > last {
						sl.rd.AtLeast(rev)
						break
					}
				}
			}
			// The event's span began when its slot was lent; its read
			// begins now.
			trace.SpanFromContext(sl.ctx).AddEvent("read")
			v, rev, again, err := read(sl.ctx)
			st.err = err
			now = again && err == nil
			if err == nil {
				last = rev
			}
			select {
			case out <- v:
			case <-ctx.Done():
				return
			}
			if err != nil && slices.Contains(final, fault.CodeOf(err)) {
				return
			}
		}
	}()
	return out, nil
}

// slot is an event's context, with the read it carries, not yet open.
type slot struct {
	ctx context.Context
	rd  *snapshot.Read
}

// revisionOf is the revision of the change a snapshot shows: a run's
// revision, a deletion's, or 0 for an id that never existed.
func revisionOf(snap snapshot.Snapshot) int64 {
	switch s := snap.(type) {
	case *snapshot.Run:
		return s.Revision
	case *snapshot.Missing:
		if s.DeletedAtRevision != nil {
			return *s.DeletedAtRevision
		}
	}
	return 0
}

func isSubscription(ctx context.Context) bool {
	oc := graphql.GetOperationContext(ctx)
	return oc != nil && oc.Operation != nil && oc.Operation.Operation == ast.Subscription
}

// addLiveTransports adds the subscription transports. They come before GET
// and POST, which would otherwise take their requests: a WebSocket upgrade
// is a GET, and an SSE request a POST of JSON that accepts
// text/event-stream.
func addLiveTransports(srv *handler.Server, opts Options) {
	srv.AddTransport(transport.Websocket{
		// graphql-transport-ws keeps alive with ping messages, which the
		// client answers with pong: a client that stops answering is gone.
		PingPongInterval: opts.KeepAlive,
		// The older graphql-ws subprotocol has keep-alive messages.
		KeepAlivePingInterval: opts.KeepAlive,
		InitTimeout:           30 * time.Second,
	})
	srv.AddTransport(transport.SSE{KeepAlivePingInterval: opts.KeepAlive})
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

// changesBatch is the most changes one event of Subscription.changes
// carries; a larger burst comes as several events, one after the other.
var changesBatch = snapshot.MaxChangesSize
