// Package vocab is the engine store's vocabulary: the identifier rule, the
// safe-integer bound, the enumerations the store's CHECK constraints admit
// (run statuses, step types, attempt states, result types, lifecycle event
// types), the waiting kinds, and the worker Owner. Each is defined here once;
// the CHECK constraints that enforce them in the database are in
// store/migrations/<dialect>/001_engine_store.sql, and a test holds the two
// equal in both dialects (vocab_test.go).
//
// It is a leaf: it imports only fault, so the cursor codec, the reader, the
// reference writer and the GraphQL edge all share it without pulling in a
// database driver. It knows nothing of GraphQL: the API's spelling of these
// values lives in graph/scalar.
package vocab

import (
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/flowsnap/flowsnap/fault"
)

// MaxSafe is the largest integer a JSON number, and so a JavaScript client,
// represents exactly: 2^53−1. Every timestamp, revision, pid, ordinal and
// counter of the store is in 0..MaxSafe (its CHECK constraints say
// BETWEEN 0 AND 9007199254740991).
const MaxSafe = 1<<53 - 1

// Safe reports whether n is in 0..MaxSafe.
func Safe(n int64) bool { return n >= 0 && n <= MaxSafe }

// MaxIDUnits is the most UTF-16 code units an identifier may have: what a
// JavaScript client counts as its length.
const MaxIDUnits = 1024

// The ways an identifier breaks the rule, as IDProblem says them.
const (
	idEmpty   = "must not be empty"
	idUnicode = "must be valid Unicode"
	idNUL     = "must not contain NUL"
	idLong    = "is too long (more than 1024 UTF-16 code units)"
)

// IDProblem says how s breaks the identifier rule, "" when it keeps it. An
// identifier (a run, step, attempt or event id, a flow name, a host id or
// nonce) is non-empty, valid UTF-8 (Go's decoder refuses encoded
// surrogates, so no lone surrogate passes), holds no NUL, and has at most
// MaxIDUnits UTF-16 code units. The answer is a predicate for a message:
// "run id " + IDProblem(s).
func IDProblem(s string) string {
	switch {
	case s == "":
		return idEmpty
	case !utf8.ValidString(s):
		return idUnicode
	case strings.IndexByte(s, 0) >= 0:
		return idNUL
	case len(s) > MaxIDUnits && utf16Len(s) > MaxIDUnits:
		// A UTF-8 string never has more UTF-16 units than bytes, so only a
		// long one is counted.
		return idLong
	}
	return ""
}

// ValidID reports whether s keeps the identifier rule.
func ValidID(s string) bool { return IDProblem(s) == "" }

// CheckID returns a BAD_USER_INPUT error naming what s is ("run id", "an
// id") when s breaks the identifier rule. The message never quotes s, which
// may be huge or unprintable.
func CheckID(what, s string) error {
	if p := IDProblem(s); p != "" {
		return fault.Errorf(fault.BadUserInput, "%s %s", what, p)
	}
	return nil
}

func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		n += utf16.RuneLen(r)
	}
	return n
}

// maxQuoted is how many characters of a value a message shows.
const maxQuoted = 64

// Quote quotes s (an id, a source, a token of input) for a message, cut to
// its first 64 characters and marked "…" when longer, so that a message
// stays readable whatever a client sent.
func Quote(s string) string {
	n := 0
	for i := range s {
		if n == maxQuoted {
			return strconv.Quote(s[:i]) + "…"
		}
		n++
	}
	return strconv.Quote(s)
}

// Status is a run's lifecycle status (flows_runs.status).
type Status string

// The statuses of a run.
const (
	StatusPending   Status = "pending"
	StatusRunning   Status = "running"
	StatusSuspended Status = "suspended"
	StatusCompleted Status = "completed"
	StatusFailed    Status = "failed"
	StatusCancelled Status = "cancelled"
)

// Statuses are the statuses flows_runs_status admits, in its order.
var Statuses = []Status{StatusPending, StatusRunning, StatusSuspended, StatusCompleted, StatusFailed, StatusCancelled}

// Valid reports whether s is one of Statuses.
func (s Status) Valid() bool { return slices.Contains(Statuses, s) }

// Finished reports whether a run in status s is over: completed, failed or
// cancelled. A finished run is blocked on no step.
func (s Status) Finished() bool {
	return s == StatusCompleted || s == StatusFailed || s == StatusCancelled
}

// StepType is the kind of a journal step (flows_steps.type).
type StepType string

// The kinds of step.
const (
	// StepRun runs code; its lifecycle is in its attempts.
	StepRun StepType = "run"
	// StepSleep waits until a wake time.
	StepSleep StepType = "sleep"
	// StepWait waits for an inbound event of a name, maybe until a timeout.
	StepWait StepType = "wait"
)

// StepTypes are the types flows_steps_type admits, in its order.
var StepTypes = []StepType{StepRun, StepSleep, StepWait}

// AttemptState is where an attempt of a run step stands
// (flows_step_attempts.state): started, then succeeded or failed.
type AttemptState string

// The states of an attempt.
const (
	AttemptStarted   AttemptState = "started"
	AttemptSucceeded AttemptState = "succeeded"
	AttemptFailed    AttemptState = "failed"
)

// AttemptStates are the states flows_step_attempts_state admits, in its
// order.
var AttemptStates = []AttemptState{AttemptStarted, AttemptSucceeded, AttemptFailed}

// ResultType says what a succeeded attempt returned
// (flows_step_attempts.result_type): a JSON value (which may be JSON null)
// or nothing at all. The two differ for the flow that replays the step, so
// they stay apart all the way to the client.
type ResultType string

// The result types.
const (
	ResultJSON ResultType = "json"
	ResultNone ResultType = "none"
)

// ResultTypes are the result types flows_step_attempts_shape admits.
var ResultTypes = []ResultType{ResultJSON, ResultNone}

// RunEventType is the type of an entry of a run's lifecycle log
// (flows_run_events.type).
type RunEventType string

// The lifecycle events.
const (
	EventCreated   RunEventType = "created"
	EventStarted   RunEventType = "started"
	EventPaused    RunEventType = "paused"
	EventResumed   RunEventType = "resumed"
	EventCompleted RunEventType = "completed"
	EventFailed    RunEventType = "failed"
	EventCancelled RunEventType = "cancelled"
)

// RunEventTypes are the types flows_run_events_type admits, in its order.
var RunEventTypes = []RunEventType{EventCreated, EventStarted, EventPaused, EventResumed, EventCompleted, EventFailed, EventCancelled}

// WaitingKind classifies a run's waiting reason, which is free text: see
// KindOf.
type WaitingKind string

// The kinds of waiting.
const (
	WaitingTimer    WaitingKind = "timer"
	WaitingSignal   WaitingKind = "signal"
	WaitingApproval WaitingKind = "approval"
	WaitingQuota    WaitingKind = "quota"
	WaitingHuman    WaitingKind = "human"
	WaitingOther    WaitingKind = "other"
)

// WaitingKinds are every kind KindOf answers.
var WaitingKinds = []WaitingKind{WaitingTimer, WaitingSignal, WaitingApproval, WaitingQuota, WaitingHuman, WaitingOther}

// Valid reports whether k is one of WaitingKinds.
func (k WaitingKind) Valid() bool { return slices.Contains(WaitingKinds, k) }

// OwnKindReasons are the waiting reasons that are kinds of their own;
// SignalReasons those whose kind is signal. Any other reason is other. The
// index flows_runs_by_waiting_kind (and store.WaitingKindExpr, which queries
// must spell as it does) classifies reasons the same way.
var (
	OwnKindReasons = []string{"timer", "approval", "quota", "human"}
	SignalReasons  = []string{"event", "signal"}
)

// KindOf returns the kind of a waiting reason: timer, approval, quota and
// human are kinds of their own, event and signal are signal, anything else
// is other.
func KindOf(reason string) WaitingKind {
	switch {
	case slices.Contains(OwnKindReasons, reason):
		return WaitingKind(reason)
	case slices.Contains(SignalReasons, reason):
		return WaitingSignal
	}
	return WaitingOther
}

// Owner is a worker process: the one running a run, holding a claim, or
// acknowledging a cancellation. Its JSON is the owner object of
// flows_runs.cancel_acknowledgement_json; the nonce tells apart two
// processes that reuse a pid.
type Owner struct {
	HostID string `json:"hostId"`
	PID    int64  `json:"pid"`
	Nonce  string `json:"nonce"`
}
