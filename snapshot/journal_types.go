package snapshot

import (
	"encoding/json"

	"github.com/flowsnap/flowsnap/store/vocab"
)

// StepState is where a step stands. Sleep and wait steps store theirs; a
// run step's is derived from its latest attempt by (start time, attempt
// id): none yet is pending, a started one running, a failed one with a
// next attempt time retrying, and otherwise the attempt's outcome.
type StepState string

// The states of a step. Pending, running, retrying and waiting are
// unresolved: the run cannot get past the step yet.
const (
	StepPending   StepState = "pending"
	StepRunning   StepState = "running"
	StepRetrying  StepState = "retrying"
	StepSucceeded StepState = "succeeded"
	StepFailed    StepState = "failed"
	StepWaiting   StepState = "waiting"
	StepElapsed   StepState = "elapsed"
	StepSatisfied StepState = "satisfied"
	StepTimedOut  StepState = "timed_out"
)

// StepStates are every state a step can be in.
var StepStates = []StepState{StepPending, StepRunning, StepRetrying, StepSucceeded, StepFailed, StepWaiting, StepElapsed, StepSatisfied, StepTimedOut}

// Resolved reports whether a step in state s is over: succeeded, failed for
// good, elapsed, satisfied or timed out.
func (s StepState) Resolved() bool {
	switch s {
	case StepPending, StepRunning, StepRetrying, StepWaiting:
		return false
	}
	return true
}

// StepKey names a step: steps are keyed by run.
type StepKey struct {
	RunID  string
	StepID string
}

// Step is one step of a run's journal: a *RunStep, *SleepStep or
// *WaitStep.
type Step interface {
	// Base returns what every kind of step has.
	Base() *StepBase
}

// StepBase is what every kind of step has.
type StepBase struct {
	RunID string
	ID    string
	Type  vocab.StepType
	State StepState
	// CreatedAt is when the step was added to the journal; steps are
	// listed by (CreatedAt, ID).
	CreatedAt Millis
	// ResolvedAt is when the step was resolved: for a run step the end of
	// the attempt that succeeded or failed for good, for a sleep or wait
	// the time the engine recorded. Nil while unresolved.
	ResolvedAt *Millis
	// ParentStepID is the run step that encloses this one, if any.
	ParentStepID *string
}

// Base returns b.
func (b *StepBase) Base() *StepBase { return b }

// Key returns the step's key.
func (b *StepBase) Key() StepKey { return StepKey{RunID: b.RunID, StepID: b.ID} }

// RunStep is a step that runs code, once per attempt.
type RunStep struct {
	StepBase
	// MaxAttempts bounds the attempts; nil means unbounded.
	MaxAttempts *int64
	// AttemptCount is how many attempts the step has had.
	AttemptCount int64
	// NextAttemptAt is when the step is retried, while it is retrying: the
	// next attempt time of its latest attempt.
	NextAttemptAt *Millis
}

// SleepStep is a step that waits until WakeAt.
type SleepStep struct {
	StepBase
	WakeAt Millis
}

// WaitStep is a step that waits for an inbound event named EventName, until
// TimeoutAt when it has one.
type WaitStep struct {
	StepBase
	EventName string
	TimeoutAt *Millis

	claimed  *InboundEvent
	claimErr error
}

// ClaimedEvent returns the inbound event the step claimed, nil when it has
// claimed none, or the DECODE_FAILED error of that event's row. It is read
// with the step, in the same statement.
func (w *WaitStep) ClaimedEvent() (*InboundEvent, error) { return w.claimed, w.claimErr }

// Attempt is one attempt of a run step.
type Attempt struct {
	RunID  string
	StepID string
	ID     string
	// Number is the attempt's place among its step's attempts by (start
	// time, attempt id), from 1.
	Number    int64
	State     vocab.AttemptState
	StartedAt Millis
	EndedAt   *Millis
	// ResultType is set exactly when the attempt succeeded; Result holds
	// the returned JSON when it is ResultJSON (the text null for a
	// returned null) and is nil otherwise.
	ResultType *vocab.ResultType
	Result     json.RawMessage
	// ErrorName and ErrorMessage say how a failed attempt failed;
	// ErrorMessage is set exactly when it failed.
	ErrorName    *string
	ErrorMessage *string
	// NextAttemptAt is when a failed attempt's step is retried; nil when
	// it is not.
	NextAttemptAt *Millis
}

// InboundEvent is an event sent to a run for its wait steps.
type InboundEvent struct {
	RunID     string
	ID        string
	EventName string
	// HasPayload is false for an event sent without a payload; Payload is
	// then nil. An event whose payload is JSON null has HasPayload true and
	// Payload the text null.
	HasPayload bool
	Payload    json.RawMessage
	CreatedAt  Millis
	// ClaimedBy is the wait step that claimed the event, ClaimedAt when;
	// both nil while it is unclaimed.
	ClaimedBy *string
	ClaimedAt *Millis
}

// RunEvent is one entry of a run's lifecycle log.
type RunEvent struct {
	RunID      string
	Seq        int64
	Type       vocab.RunEventType
	RecordedAt Millis
	// CancellationReason is set only on a cancelled entry, and not always
	// there.
	CancellationReason *string
}

// StepPage is one page of a run's steps, read at the read's position.
type StepPage struct {
	Anchor   string
	Edges    []StepEdge
	PageInfo PageInfo
}

// StepEdge is one step of a page: Step, or Err when its row cannot be
// decoded. The cursor is valid either way.
type StepEdge struct {
	Cursor string
	Step   Step
	Err    error
}

// InboundEventPage is one page of the events sent to a run.
type InboundEventPage struct {
	Anchor   string
	Edges    []InboundEventEdge
	PageInfo PageInfo
}

// InboundEventEdge is one inbound event of a page, or the DECODE_FAILED
// error of its row.
type InboundEventEdge struct {
	Cursor string
	Event  *InboundEvent
	Err    error
}

// RunEventPage is one page of a run's lifecycle log.
type RunEventPage struct {
	Anchor   string
	Edges    []RunEventEdge
	PageInfo PageInfo
}

// RunEventEdge is one entry of a page, or the DECODE_FAILED error of its
// row.
type RunEventEdge struct {
	Cursor string
	Event  *RunEvent
	Err    error
}
