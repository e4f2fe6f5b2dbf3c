package live

import (
	"context"
	"errors"
	"go.opentelemetry.io/otel/trace"
	"slices"
	"sync/atomic"

	"github.com/flowsnap/flowsnap/fault"
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

// Stream is what a subscription's handler and its resolver share.
type Stream struct {
	sub   *Sub
	slots chan slot
	// sent is the latest revision an event was read at. Every event is
	// read at it or later, whichever replica answers (docs/contract.md#replicas), as is the
	// first at the request's minimum revision.
	sent atomic.Int64
	// err is the error of the event being handed over, set before the
	// value is sent: the stream runs outside the response's context, so
	// the handler adds it to the response.
	err error
}

// NewStream returns the stream of a subscription that holds sub, whose
// events are read at revision min or later.
func NewStream(sub *Sub, min int64) *Stream {
	st := &Stream{sub: sub, slots: make(chan slot, 1)}
	st.sent.Store(min)
	return st
}

// WithStream returns ctx carrying st, for Watch.
func WithStream(ctx context.Context, st *Stream) context.Context {
	return context.WithValue(ctx, streamKey{}, st)
}

// Lend offers the stream the context of the next event, which carries rd,
// not yet opened; a slot already offered and not taken stays. begin, when
// not nil, is called when the event's read begins, once the wait for a
// change is over: the event's own time starts there. rest, when not nil,
// is called when that read sent nothing (Unchanged), before the stream
// waits for the next change: the event's time stops until begin again.
func (st *Stream) Lend(ctx context.Context, rd *snapshot.Read, begin, rest func()) {
	select {
	case st.slots <- slot{ctx, rd, begin, rest}:
	default:
	}
}

// TakeErr returns the error of the event just handed over, once.
func (st *Stream) TakeErr() error {
	err := st.err
	st.err = nil
	return err
}

// Sent says an event was read at revision: no later one is read before it.
func (st *Stream) Sent(revision int64) {
	if revision > st.sent.Load() {
		st.sent.Store(revision)
	}
}

// Watch runs a subscription's stream: it reads the first event at once,
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
// A read that fails with Unchanged sends nothing: its read is restarted
// and the stream waits for a change newer than the revision it returned,
// as after an event. A subscription to a run the principal may not see
// (docs/contract.md#scopes) says so once, and its changes send nothing,
// not even when they happen.
//
// A read that says again is followed at once by the next, without waiting
// for a change (the change feed reads a burst in batches); a read that
// fails with a code in final ends the subscription after its error event.
func Watch[T any](ctx context.Context, setup func(*Sub), read func(ctx context.Context) (v T, revision int64, again bool, err error), final ...fault.Code) (<-chan T, error) {
	st, ok := ctx.Value(streamKey{}).(*Stream)
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
		event:
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
					if reset || st.sub.Failure() {
						// Read now: after a reset at whatever the store
						// holds, after a failure to send its error.
						break
					}
					if rev > last {
						sl.rd.AtLeast(rev)
						break
					}
				}
			}
			// The event's span (docs/contract.md#traces) began when its
			// slot was lent; its read begins now.
			trace.SpanFromContext(sl.ctx).AddEvent("read")
			if sl.begin != nil {
				sl.begin()
			}
			v, rev, again, err := read(sl.ctx)
			if errors.Is(err, Unchanged) {
				if sl.rest != nil {
					sl.rest()
				}
				sl.rd.Restart()
				sl.rd.AtLeast(st.sent.Load())
				last, now = max(last, rev), false
				goto event
			}
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

// Seen returns the position the watcher serving the subscription of ctx
// last read (Watcher.Seen), for an event that needs nothing else; false
// outside a subscription.
func Seen(ctx context.Context) (snapshot.Position, bool) {
	st, ok := ctx.Value(streamKey{}).(*Stream)
	if !ok {
		return snapshot.Position{}, false
	}
	return st.sub.w.Seen()
}

// Unchanged is what a subscription's read returns when its event would
// tell the client nothing it may learn: Watch then sends nothing.
var Unchanged = errors.New("live: nothing new to send")

// slot is an event's context, with the read it carries, not yet open, and
// what to call when the event begins and when it rests.
type slot struct {
	ctx   context.Context
	rd    *snapshot.Read
	begin func()
	rest  func()
}
