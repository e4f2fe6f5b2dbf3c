// Package record follows one HTTP request to /graphql through the
// endpoint: the first reason it was refused for (or failed with), so that
// the request is counted once by that reason and logged in one line at its
// end, and the few things the endpoint hands from one stage of the request
// to a later one (a parsing slot, a status, a direct answer's body).
//
// The endpoint owns the record. Code outside the endpoint — the error
// presenter, resolvers — reports to it through Reporter only.
package record

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/flowsnap/flowsnap/fault"
)

// Reporter is what code outside the endpoint may tell a request's record:
// why the request failed, and the cause behind it, which is logged and
// never shown.
type Reporter interface {
	// Refuse keeps the first reason given; later ones are consequences.
	Refuse(reason string, code fault.Code, message string)
	// SetCause keeps the first cause given.
	SetCause(cause string)
}

// ReporterOf returns the Reporter of ctx's request; one that keeps
// nothing outside a request.
func ReporterOf(ctx context.Context) Reporter { return Of(ctx) }

// Record is one request's record. Its methods are safe for concurrent use.
type Record struct {
	mu      sync.Mutex
	reason  string
	code    fault.Code
	message string
	cause   string
	name    string
	// principal names who the request authenticated as; it is not
	// cleared by Take, since it holds for every operation of a connection.
	principal string
	// release, when set, gives back the document slot the request holds.
	release func()
	// status, when set, is the HTTP status the response goes out with,
	// whatever gqlgen chose (a busy server answers 503).
	status atomic.Int32
	// digest and header, set for a GET query, let its answer carry an ETag.
	digest string
	header Header
	// report, set for a WebSocket connection, counts and logs a refusal
	// when its response is sent: a connection carries many operations,
	// and lasts as long as its client wants.
	report func(Refusal)
	// body, set by a direct answer, is the response body to send in place
	// of the one gqlgen's transport writes; only a request answered in one
	// body takes one.
	body      []byte
	takesBody bool
}

// Header is where a GET answer's ETag goes: its response's header.
type Header interface{ Set(key, value string) }

// Refusal is what a record holds about one refused request or operation.
type Refusal struct {
	Reason, Message, Cause, Name string
	Code                         fault.Code
	// Principal names who the request authenticated as, "" when no one.
	Principal string
}

type key struct{}

// With returns ctx carrying r.
func With(ctx context.Context, r *Record) context.Context {
	return context.WithValue(ctx, key{}, r)
}

// Of returns the record of ctx's request; a throwaway one outside a
// request, so callers need not check.
func Of(ctx context.Context) *Record {
	if r, ok := ctx.Value(key{}).(*Record); ok {
		return r
	}
	return &Record{}
}

// Refuse keeps the first reason given; later ones are consequences.
func (r *Record) Refuse(reason string, code fault.Code, message string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.reason == "" {
		r.reason, r.code, r.message = reason, code, Clip(message)
	}
}

// SetCause keeps the first cause given.
func (r *Record) SetCause(cause string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cause == "" {
		r.cause = Clip(cause)
	}
}

// Refused reports whether a reason was given.
func (r *Record) Refused() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.reason != ""
}

// SetName names the request's operation, for its log line.
func (r *Record) SetName(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.name = Clip(name)
}

// SetPrincipal names who the request authenticated as (a WebSocket
// connection's connection_init may say so after its upgrade), for the
// log lines of its refusals.
func (r *Record) SetPrincipal(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.principal = name
}

// Take returns the refusal the record holds and clears it, so that the
// next operation of a connection starts afresh.
func (r *Record) Take() Refusal {
	r.mu.Lock()
	defer r.mu.Unlock()
	f := Refusal{Reason: r.reason, Message: r.message, Cause: r.cause, Name: r.name, Code: r.code, Principal: r.principal}
	r.reason, r.message, r.cause, r.name, r.code = "", "", "", "", ""
	return f
}

// SetReport makes Answered report each operation's refusal with report
// (a WebSocket connection's).
func (r *Record) SetReport(report func(Refusal)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.report = report
}

// Answered reports the refusal of the response just sent on a WebSocket
// connection, if there is one; for other requests the endpoint reports it
// when the request ends.
func (r *Record) Answered() {
	if report := r.reporter(); report != nil {
		if f := r.Take(); f.Reason != "" {
			report(f)
		}
	}
}

func (r *Record) reporter() func(Refusal) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.report
}

// HoldsSlot reports whether the request holds a parsing slot.
func (r *Record) HoldsSlot() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.release != nil
}

// HoldSlot keeps release, which gives back the parsing slot the request
// took, for ReleaseSlot.
func (r *Record) HoldSlot(release func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.release = release
}

// ReleaseSlot gives back the parsing slot the request holds, if any.
func (r *Record) ReleaseSlot() {
	r.mu.Lock()
	release := r.release
	r.release = nil
	r.mu.Unlock()
	if release != nil {
		release()
	}
}

// SetBusy says the request found the parsing queue full: its response goes
// out with status.
func (r *Record) SetBusy(status int) { r.status.Store(int32(status)) }

// Busy reports whether the request was refused for a full parsing queue.
func (r *Record) Busy() bool { return r.Status() != 0 }

// Status is the status the response must go out with; 0 leaves it to
// whoever writes it.
func (r *Record) Status() int { return int(r.status.Load()) }

// TagWith says where a GET answer's ETag goes and what it is computed
// from besides the position.
func (r *Record) TagWith(digest string, header Header) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.digest, r.header = digest, header
}

// SetETag gives a complete GET answer its tag, made by tag from the
// request's digest, before the transport writes the headers.
func (r *Record) SetETag(tag func(digest string) string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.header != nil && r.digest != "" {
		r.header.Set("ETag", tag(r.digest))
	}
}

// SetBody keeps the body a direct answer wrote, for the endpoint to send,
// and reports whether it will: false for a response that goes out
// otherwise (a query over a WebSocket or an event stream).
func (r *Record) SetBody(b []byte) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.takesBody {
		return false
	}
	r.body = b
	return true
}

// AnswersInOneBody says the request is answered in one HTTP body, which a
// direct answer may write (see SetBody).
func (r *Record) AnswersInOneBody() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.takesBody = true
}

// TakeBody returns the body a direct answer wrote, once.
func (r *Record) TakeBody() []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	b := r.body
	r.body = nil
	return b
}

// maxMessage bounds a message shown to a client or logged: a parse error
// quotes a token of the document, and a token can be a megabyte string.
const maxMessage = 300

// Clip bounds s to what a message shown or logged may hold, keeping UTF-8
// whole.
func Clip(s string) string {
	if len(s) <= maxMessage {
		return s
	}
	cut := maxMessage
	for cut > 0 && s[cut]&0xC0 == 0x80 { // keep UTF-8 whole
		cut--
	}
	return s[:cut] + "…"
}

// ReasonOf maps an error code met while answering to a refusal reason.
func ReasonOf(code fault.Code) string {
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
	case fault.SubscriptionLimit:
		return "subscriptions"
	case fault.Unauthenticated:
		return "unauthenticated"
	case fault.Forbidden:
		return "forbidden"
	default:
		return "input"
	}
}
