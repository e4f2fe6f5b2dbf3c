package endpoint

import (
	"context"
	"errors"
	"fmt"
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
// the client's and from the watcher's (or refuses), logs its start and end,
// and reads each event in a snapshot of its own. Each event is held to the
// limits of a query (docs/contract.md#subscriptions): its cost was checked
// before the first (every event has the operation's selection), and an
// event that takes longer than EventTimeout or whose data is larger than
// MaxResponseBytes is answered with the error alone (TIMEOUT,
// COMPLEXITY_LIMIT) and ends the subscription.
func subscription(ctx context.Context, next graphql.OperationHandler, reader *snapshot.Reader, planner *plan.Planner, opts Options) graphql.ResponseHandler {
	if opts.Live == nil {
		return refuseOperation(ctx, fault.Errorf(fault.BadUserInput, "this server does not serve subscriptions"))
	}
	leave, err := opts.subscriptions.take(clientOf(ctx))
	if err != nil {
		return refuseOperation(ctx, err)
	}
	sub, err := opts.Live.Subscribe()
	if err != nil {
		leave()
		return refuseOperation(ctx, err)
	}
	min, err := minRevision(ctx)
	if err != nil {
		sub.Close()
		leave()
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
			leave()
			opts.Logger.LogAttrs(ctx, slog.LevelInfo, "subscription end", slog.String("operation", name),
				slog.String("field", field), slog.String("reason", why), slog.Int64("events", events.Load()),
				slog.Duration("duration", time.Since(start)))
		})
	}
	stopWatch := context.AfterFunc(ctx, func() { end("client gone") })
	rh := next(ctx)
	// over is the code of the limit an event went over: the subscription
	// ends after that event.
	var over fault.Code
	return func(ctx context.Context) *graphql.Response {
		if over != "" {
			stopWatch()
			end("over a limit: " + string(over))
			return nil
		}
		ctx, span := startEvent(ctx, opts.Tracer, name, field)
		ectx, timer := newEventTurn(ctx, opts.EventTimeout, opts.events)
		defer timer.release()
		ectx, rd := reader.Begin(ectx)
		defer rd.End()
		ectx = planner.Begin(ectx, reader, nil)
		st.Lend(ectx, rd, timer.start, timer.rest)
		resp := rh(ectx)
		timer.stop()
		rd.End()
		var err error
		if resp != nil {
			err = st.TakeErr()
		}
		if timer.expired() {
			msg := fmt.Sprintf("the event did not finish within %s", opts.EventTimeout)
			resp, err, over = overLimit(ctx, "timeout", fault.Timeout, msg), nil, fault.Timeout
		} else if resp != nil && len(resp.Data) > opts.MaxResponseBytes {
			msg := fmt.Sprintf("the event is larger than %d bytes", opts.MaxResponseBytes)
			resp, err, over = overLimit(ctx, "size", fault.ComplexityLimit, msg), nil, fault.ComplexityLimit
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
		if pos, ok := rd.Position(); ok && over == "" {
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

// overLimit is the answer of an event over a limit: its error alone,
// recorded as a refusal for the count and the log.
func overLimit(ctx context.Context, reason string, code fault.Code, msg string) *graphql.Response {
	record.Of(ctx).Refuse(reason, code, msg)
	return &graphql.Response{Errors: gqlerror.List{{Message: msg, Extensions: map[string]any{"code": string(code)}}}}
}

// eventTurn is an event's turn to read and its deadline. Both begin when
// its read does (start, called by the stream once the change it reports
// is seen), not while the event waits for that change: then it waits for
// one of the server's event slots (MaxEvents), so that a crowd of
// subscribers reading large events leaves CPUs to queries, and its
// deadline runs from when it has one. A slot rests after an event as long
// as the event held it.
type eventTurn struct {
	ctx     context.Context
	cancel  context.CancelCauseFunc
	timeout time.Duration
	slots   chan struct{}
	mu      sync.Mutex
	t       *time.Timer
	held    bool
	began   time.Time
	stopped bool
	fired   bool
}

// errEventTimeout is the cause of an event's context that ran out of time.
var errEventTimeout = errors.New("the event ran out of time")

// newEventTurn returns ctx for an event whose turn has not begun; release
// the turn when the event is over.
func newEventTurn(ctx context.Context, timeout time.Duration, slots chan struct{}) (context.Context, *eventTurn) {
	ctx, cancel := context.WithCancelCause(ctx)
	return ctx, &eventTurn{ctx: ctx, cancel: cancel, timeout: timeout, slots: slots}
}

// start waits for an event slot, then starts the deadline.
func (e *eventTurn) start() {
	select {
	case e.slots <- struct{}{}:
	case <-e.ctx.Done():
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.stopped {
		<-e.slots
		return
	}
	e.held, e.began = true, time.Now()
	e.t = time.AfterFunc(e.timeout, e.fire)
}

func (e *eventTurn) fire() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.stopped {
		e.fired = true
		e.cancel(errEventTimeout)
	}
}

// stop stops the deadline and gives the slot back; the event's context
// stays as it is.
func (e *eventTurn) stop() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.stopped = true
	if e.t != nil {
		e.t.Stop()
	}
	if e.held {
		// The slot rests as long as it was held before another event
		// takes it: events keep at most half of MaxEvents CPUs busy.
		e.held = false
		time.AfterFunc(time.Since(e.began), func() { <-e.slots })
	}
}

// rest ends a turn whose read sent nothing (live.Unchanged: a change out
// of the principal's scope): the slot is given back as stop gives it and
// the deadline stops, for the event waits for its next change without
// either; start begins them again.
func (e *eventTurn) rest() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.t != nil {
		e.t.Stop()
		e.t = nil
	}
	if e.held {
		e.held = false
		time.AfterFunc(time.Since(e.began), func() { <-e.slots })
	}
}

// expired says the deadline passed before stop.
func (e *eventTurn) expired() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.fired
}

// release stops the turn and ends the event's context.
func (e *eventTurn) release() {
	e.stop()
	e.cancel(context.Canceled)
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
// a request, and a stream lives as long as its client wants; each of its
// writes has StreamWriteTimeout instead (endpoint.stream, websocketConn). An SSE
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
