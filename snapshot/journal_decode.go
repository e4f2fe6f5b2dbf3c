package snapshot

import (
	"fmt"
	"slices"
	"strings"

	"github.com/flowsnap/flowsnap/fault"
	"github.com/flowsnap/flowsnap/store/vocab"
)

// The journal's rows are scanned as plain values and checked against the
// shapes of the journal tables as a run's are (see rawRun): a row that breaks its
// shape yields a DECODE_FAILED error naming the run and the row, and no
// half-decoded value.

// rawStep holds a step read (stepColumns) as the driver returned it.
type rawStep struct {
	runID, stepID, typ, created, state, maxAttempts, wake, eventName, timeout, resolved, parent any
	lastState, lastEnded, lastNext, attempts                                                    any
	event                                                                                       rawInbound
}

func (w *rawStep) dest() []any {
	return append([]any{&w.runID, &w.stepID, &w.typ, &w.created, &w.state, &w.maxAttempts, &w.wake,
		&w.eventName, &w.timeout, &w.resolved, &w.parent,
		&w.lastState, &w.lastEnded, &w.lastNext, &w.attempts}, w.event.dest()...)
}

// decode turns a scanned step into a *RunStep, *SleepStep or *WaitStep.
func (w *rawStep) decode() (Step, error) {
	var d decodeError
	base := StepBase{
		RunID:        d.ident("run_id", w.runID),
		ID:           d.ident("step_id", w.stepID),
		CreatedAt:    Millis(d.natural("created_at_ms", w.created)),
		ParentStepID: d.optIdent("parent_step_id", w.parent),
	}
	if base.ParentStepID != nil && *base.ParentStepID == base.ID {
		d.fail("it is its own parent step")
	}
	base.Type = vocab.StepType(d.text("type", w.typ))
	attempts := d.natural("its attempt count", w.attempts)
	claimed := w.event.id != nil
	var step Step
	switch base.Type {
	case vocab.StepRun:
		if w.state != nil || w.wake != nil || w.eventName != nil || w.timeout != nil || w.resolved != nil {
			d.fail("it is a run step but has a state, wake time, event name, timeout or resolution of its own")
		}
		s := &RunStep{StepBase: base, AttemptCount: attempts}
		if w.maxAttempts != nil {
			n := d.natural("max_attempts", w.maxAttempts)
			if n < 1 {
				d.fail("max_attempts is below 1")
			}
			s.MaxAttempts = &n
		}
		s.State = StepPending
		if w.lastState != nil {
			switch vocab.AttemptState(d.text("the latest attempt's state", w.lastState)) {
			case vocab.AttemptStarted:
				s.State = StepRunning
			case vocab.AttemptSucceeded:
				s.State, s.ResolvedAt = StepSucceeded, d.optMillis("the latest attempt's ended_at_ms", w.lastEnded)
			case vocab.AttemptFailed:
				if w.lastNext != nil {
					s.State, s.NextAttemptAt = StepRetrying, d.optMillis("the latest attempt's next_attempt_at_ms", w.lastNext)
				} else {
					s.State, s.ResolvedAt = StepFailed, d.optMillis("the latest attempt's ended_at_ms", w.lastEnded)
				}
			default:
				d.fail("its latest attempt's state is not one of started, succeeded, failed")
			}
			if s.State.Resolved() && s.ResolvedAt == nil {
				d.fail("its latest attempt ended without an end time")
			}
		}
		step = s
	case vocab.StepSleep:
		if w.maxAttempts != nil || w.eventName != nil || w.timeout != nil {
			d.fail("it is a sleep step but has max_attempts, an event name or a timeout")
		}
		if w.wake == nil {
			d.fail("it is a sleep step without a wake time")
		}
		s := &SleepStep{StepBase: base, WakeAt: Millis(d.natural("target_wake_at_ms", w.wake))}
		s.State, s.ResolvedAt = d.resolution(w.state, w.resolved, map[StepState]bool{StepWaiting: false, StepElapsed: true})
		step = s
	case vocab.StepWait:
		if w.maxAttempts != nil || w.wake != nil {
			d.fail("it is a wait step but has max_attempts or a wake time")
		}
		if w.eventName == nil {
			d.fail("it is a wait step without an event name")
		}
		s := &WaitStep{StepBase: base, EventName: d.ident("event_name", w.eventName), TimeoutAt: d.optMillis("timeout_at_ms", w.timeout)}
		s.State, s.ResolvedAt = d.resolution(w.state, w.resolved, map[StepState]bool{StepWaiting: false, StepSatisfied: true, StepTimedOut: true})
		if s.State == StepTimedOut && s.TimeoutAt == nil {
			d.fail("it timed out without a timeout")
		}
		if claimed {
			// A broken claimed event fails the step's claimedEvent, not
			// the step: the step's own row is sound.
			s.claimed, s.claimErr = w.event.decode()
		}
		step = s
	default:
		d.fail("type is not one of run, sleep, wait")
	}
	if base.Type != vocab.StepRun && attempts != 0 {
		d.fail("it has attempts, but only run steps are attempted")
	}
	if claimed && base.Type != vocab.StepWait {
		d.fail("an inbound event is claimed by it, but only wait steps claim events")
	}
	if d.msg != "" {
		runID, _ := toText(w.runID)
		stepID, _ := toText(w.stepID)
		return nil, d.of(runID, "step %s of run %s", vocab.Quote(stepID), vocab.Quote(runID))
	}
	return step, nil
}

// resolution decodes the stored state of a sleep or wait step, which must
// be one of states, with resolved_at_ms set exactly for those states marks
// as resolved.
func (d *decodeError) resolution(state, resolved any, states map[StepState]bool) (StepState, *Millis) {
	if state == nil {
		d.fail("it has no state")
		return "", nil
	}
	s := StepState(d.text("state", state))
	isResolved, ok := states[s]
	if !ok {
		names := make([]string, 0, len(states))
		for k := range states {
			names = append(names, string(k))
		}
		slices.Sort(names)
		d.fail("state is not one of %s", strings.Join(names, ", "))
		return s, nil
	}
	switch {
	case isResolved && resolved == nil:
		d.fail("it is %s without a resolution time", s)
	case !isResolved && resolved != nil:
		d.fail("it is %s but has a resolution time", s)
	}
	return s, d.optMillis("resolved_at_ms", resolved)
}

// rawInbound holds an inbound event read (inboundColumns).
type rawInbound struct {
	runID, id, name, payload, created, claimedBy, claimedAt any
}

func (w *rawInbound) dest() []any {
	return []any{&w.runID, &w.id, &w.name, &w.payload, &w.created, &w.claimedBy, &w.claimedAt}
}

func (w *rawInbound) decode() (*InboundEvent, error) {
	var d decodeError
	ev := &InboundEvent{
		RunID:     d.ident("run_id", w.runID),
		ID:        d.ident("event_id", w.id),
		EventName: d.ident("event_name", w.name),
		CreatedAt: Millis(d.natural("created_at_ms", w.created)),
	}
	// NULL is no payload; the text null is a payload of JSON null.
	if w.payload != nil {
		ev.HasPayload = true
		ev.Payload = d.json("payload", w.payload)
	}
	switch {
	case w.claimedBy != nil && w.claimedAt == nil:
		d.fail("it is claimed by a step but has no claim time")
	case w.claimedBy == nil && w.claimedAt != nil:
		d.fail("it has a claim time but no claiming step")
	case w.claimedBy != nil:
		ev.ClaimedBy = d.optIdent("claimed_by", w.claimedBy)
		ev.ClaimedAt = d.optMillis("claimed_at_ms", w.claimedAt)
	}
	if d.msg != "" {
		runID, _ := toText(w.runID)
		id, _ := toText(w.id)
		return nil, d.of(runID, "inbound event %s of run %s", vocab.Quote(id), vocab.Quote(runID))
	}
	return ev, nil
}

// rawAttempt holds an attempt read (selectAttempts). The run and step ids
// are the keys the attempts were asked by, so they are plain strings.
type rawAttempt struct {
	runID, stepID                                 string
	id, started, state, ended, resultType, result any
	errorMessage, errorName, next                 any
	number                                        int64
}

func (w *rawAttempt) dest() []any {
	return []any{&w.runID, &w.stepID, &w.id, &w.started, &w.state, &w.ended, &w.resultType, &w.result,
		&w.errorMessage, &w.errorName, &w.next, &w.number}
}

func (w *rawAttempt) decode() (*Attempt, error) {
	var d decodeError
	a := &Attempt{
		RunID:     w.runID,
		StepID:    w.stepID,
		ID:        d.ident("attempt_id", w.id),
		Number:    w.number,
		StartedAt: Millis(d.natural("started_at_ms", w.started)),
		State:     vocab.AttemptState(d.text("state", w.state)),
		EndedAt:   d.optMillis("ended_at_ms", w.ended),
	}
	switch a.State {
	case vocab.AttemptStarted:
		if w.ended != nil || w.resultType != nil || w.result != nil || w.errorMessage != nil || w.errorName != nil || w.next != nil {
			d.fail("it is started but has an end, a result or an error")
		}
	case vocab.AttemptSucceeded:
		if w.ended == nil {
			d.fail("it succeeded without an end time")
		}
		if w.errorMessage != nil || w.errorName != nil || w.next != nil {
			d.fail("it succeeded but has an error or a next attempt time")
		}
		switch {
		case w.resultType == nil:
			d.fail("it succeeded without a result type")
		default:
			rt := vocab.ResultType(d.text("result_type", w.resultType))
			a.ResultType = &rt
			switch rt {
			case vocab.ResultJSON:
				if w.result == nil {
					d.fail("its result type is json but it has no result")
				} else {
					a.Result = d.json("result_json", w.result)
				}
			case vocab.ResultNone:
				if w.result != nil {
					d.fail("its result type is none but it has a result")
				}
			default:
				d.fail("result_type is not one of json, none")
			}
		}
	case vocab.AttemptFailed:
		if w.ended == nil {
			d.fail("it failed without an end time")
		}
		if w.resultType != nil || w.result != nil {
			d.fail("it failed but has a result")
		}
		if w.errorMessage == nil {
			d.fail("it failed without an error message")
		}
		a.ErrorMessage = d.optText("error_message", w.errorMessage)
		a.ErrorName = d.optText("error_name", w.errorName)
		a.NextAttemptAt = d.optMillis("next_attempt_at_ms", w.next)
	default:
		d.fail("state is not one of started, succeeded, failed")
	}
	if d.msg != "" {
		id, _ := toText(w.id)
		return nil, d.of(w.runID, "attempt %s of step %s of run %s", vocab.Quote(id), vocab.Quote(w.stepID), vocab.Quote(w.runID))
	}
	return a, nil
}

// rawRunEvent holds an entry of the lifecycle log (runEventList).
type rawRunEvent struct {
	runID, seq, recorded, typ, reason any
}

func (w *rawRunEvent) dest() []any {
	return []any{&w.runID, &w.seq, &w.recorded, &w.typ, &w.reason}
}

func (w *rawRunEvent) decode() (*RunEvent, error) {
	var d decodeError
	ev := &RunEvent{
		RunID:      d.ident("run_id", w.runID),
		Seq:        d.natural("seq", w.seq),
		RecordedAt: Millis(d.natural("recorded_at_ms", w.recorded)),
		Type:       vocab.RunEventType(d.text("type", w.typ)),
	}
	if !slices.Contains(vocab.RunEventTypes, ev.Type) {
		d.fail("type is not one of created, started, paused, resumed, completed, failed, cancelled")
	}
	if w.reason != nil {
		if ev.Type != vocab.EventCancelled {
			d.fail("it is %s but has a cancellation reason", ev.Type)
		}
		ev.CancellationReason = d.optText("cancellation_reason", w.reason)
	}
	if d.msg != "" {
		runID, _ := toText(w.runID)
		seq, _ := toInt(w.seq)
		return nil, d.of(runID, "event %d of the log of run %s", seq, vocab.Quote(runID))
	}
	return ev, nil
}

// of is the error of a journal row of run runID that failed to decode,
// named by format and args ("step %s of run %s").
func (d *decodeError) of(runID, format string, args ...any) *fault.Error {
	return &fault.Error{Code: fault.DecodeFailed, RunID: runID,
		Message: fmt.Sprintf(format, args...) + " cannot be decoded: " + d.msg}
}
