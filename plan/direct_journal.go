package plan

import (
	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/flowsnap/flowsnap/graph/scalar"
	"github.com/flowsnap/flowsnap/jsonwire"
	"github.com/flowsnap/flowsnap/snapshot"
)

// The direct answer's writing of a run's journal (graph/journal.graphqls):
// its steps, current step, inbound events and lifecycle log, and every
// type they lead to. Each read asks the journal's loaders with the keys
// the field's resolver builds (fields.go), which the read-ahead asked for
// already. What the executor answers with an error — a row that does not
// decode (DECODE_FAILED on its element), a payload the principal may not
// read (FORBIDDEN), a bad argument or cursor — makes the direct answer
// give up, and the executor then answers the operation.

// journal writes Run.steps, Run.currentStep, Run.inboundEvents or
// Run.events of r.
func (w *directWriter) journal(f graphql.CollectedField, r *snapshot.Run) bool {
	j := w.l.journal()
	if f.Name == "currentStep" {
		// Keyed by the run itself, as the read-ahead asked (CurrentSteps).
		s, err := j.current.one(w.ctx, r)
		return err == nil && w.step(f.Selections, s)
	}
	a := w.l.argsOf(f, w.oc)
	first, after := a.int("first"), a.string("after")
	if a.bad {
		return false
	}
	key := journalPageKeys([]*snapshot.Run{r}, first, after)[0]
	switch f.Name {
	case "steps":
		p, err := j.steps.one(w.ctx, key)
		return err == nil && p != nil &&
			journalPage(w, f.Selections, "StepConnection", "StepEdge", p.Edges, &p.PageInfo, stepCursor, stepNode)
	case "inboundEvents":
		p, err := j.inbound.one(w.ctx, key)
		return err == nil && p != nil &&
			journalPage(w, f.Selections, "InboundEventConnection", "InboundEventEdge", p.Edges, &p.PageInfo, inboundCursor, inboundNode)
	case "events":
		p, err := j.runEvents.one(w.ctx, key)
		return err == nil && p != nil &&
			journalPage(w, f.Selections, "RunEventConnection", "RunEventEdge", p.Edges, &p.PageInfo, runEventCursor, runEventNode)
	}
	return false
}

// journalPage writes a page of the journal, a connection of type conn
// whose edges, of type edge, each have a cursor and a node that node
// writes (false on the node's own error).
func journalPage[E any](w *directWriter, sel ast.SelectionSet, conn, edge string, edges []E, info *snapshot.PageInfo,
	cursor func(*E) string, node func(*directWriter, ast.SelectionSet, *E) bool,
) bool {
	fields, ok := w.collect(sel, conn)
	return ok && w.object(fields, func(f graphql.CollectedField) bool {
		switch f.Name {
		case "__typename":
			w.b = jsonwire.AppendQuoted(w.b, conn)
		case "edges":
			w.b = append(w.b, '[')
			for i := range edges {
				if i > 0 {
					w.b = append(w.b, ',')
				}
				if !journalEdge(w, f.Selections, edge, &edges[i], cursor, node) {
					return false
				}
			}
			w.b = append(w.b, ']')
		case "nodes":
			w.b = append(w.b, '[')
			for i := range edges {
				if i > 0 {
					w.b = append(w.b, ',')
				}
				if !node(w, f.Selections, &edges[i]) {
					return false
				}
			}
			w.b = append(w.b, ']')
		case "pageInfo":
			return w.pageInfo(f.Selections, info)
		default:
			return false
		}
		return true
	})
}

func journalEdge[E any](w *directWriter, sel ast.SelectionSet, typ string, e *E,
	cursor func(*E) string, node func(*directWriter, ast.SelectionSet, *E) bool,
) bool {
	fields, ok := w.collect(sel, typ)
	return ok && w.object(fields, func(f graphql.CollectedField) bool {
		switch f.Name {
		case "__typename":
			w.b = jsonwire.AppendQuoted(w.b, typ)
		case "cursor":
			w.b = jsonwire.AppendQuoted(w.b, cursor(e))
		case "node":
			return node(w, f.Selections, e)
		default:
			return false
		}
		return true
	})
}

func stepCursor(e *snapshot.StepEdge) string            { return e.Cursor }
func inboundCursor(e *snapshot.InboundEventEdge) string { return e.Cursor }
func runEventCursor(e *snapshot.RunEventEdge) string    { return e.Cursor }
func stepNode(w *directWriter, sel ast.SelectionSet, e *snapshot.StepEdge) bool {
	return e.Err == nil && w.step(sel, e.Step)
}

func inboundNode(w *directWriter, sel ast.SelectionSet, e *snapshot.InboundEventEdge) bool {
	return e.Err == nil && w.inboundEvent(sel, e.Event)
}

func runEventNode(w *directWriter, sel ast.SelectionSet, e *snapshot.RunEventEdge) bool {
	if e.Err != nil {
		return false
	}
	if e.Event == nil {
		w.b = append(w.b, "null"...)
		return true
	}
	return w.runEvent(sel, e.Event)
}

// step writes a Step, of whichever kind; null for none.
func (w *directWriter) step(sel ast.SelectionSet, s snapshot.Step) bool {
	switch s := s.(type) {
	case nil:
	case *snapshot.RunStep:
		if s != nil {
			return w.runStep(sel, s)
		}
	case *snapshot.SleepStep:
		if s != nil {
			return w.sleepStep(sel, s)
		}
	case *snapshot.WaitStep:
		if s != nil {
			return w.waitStep(sel, s)
		}
	default:
		return false
	}
	w.b = append(w.b, "null"...)
	return true
}

func (w *directWriter) runStep(sel ast.SelectionSet, s *snapshot.RunStep) bool {
	fields, ok := w.collect(sel, "RunStep")
	return ok && w.object(fields, func(f graphql.CollectedField) bool {
		switch f.Name {
		case "maxAttempts":
			w.b = appendOptInt(w.b, s.MaxAttempts)
		case "attemptCount":
			w.b = scalar.AppendSafeInt(w.b, s.AttemptCount)
		case "nextAttemptAt":
			w.b = appendOptDateTime(w.b, s.NextAttemptAt)
		case "attempts":
			return w.attempts(f, s)
		default:
			return w.stepBase(f, "RunStep", &s.StepBase)
		}
		return true
	})
}

func (w *directWriter) sleepStep(sel ast.SelectionSet, s *snapshot.SleepStep) bool {
	fields, ok := w.collect(sel, "SleepStep")
	return ok && w.object(fields, func(f graphql.CollectedField) bool {
		if f.Name == "wakeAt" {
			w.b = scalar.AppendDateTime(w.b, s.WakeAt)
			return true
		}
		return w.stepBase(f, "SleepStep", &s.StepBase)
	})
}

func (w *directWriter) waitStep(sel ast.SelectionSet, s *snapshot.WaitStep) bool {
	fields, ok := w.collect(sel, "WaitStep")
	return ok && w.object(fields, func(f graphql.CollectedField) bool {
		switch f.Name {
		case "eventName":
			w.b = jsonwire.AppendQuoted(w.b, s.EventName)
		case "timeoutAt":
			w.b = appendOptDateTime(w.b, s.TimeoutAt)
		case "claimedEvent":
			ev, err := s.ClaimedEvent()
			return err == nil && w.inboundEvent(f.Selections, ev)
		default:
			return w.stepBase(f, "WaitStep", &s.StepBase)
		}
		return true
	})
}

// stepBase writes a field every kind of step has, on a step of type typ.
func (w *directWriter) stepBase(f graphql.CollectedField, typ string, b *snapshot.StepBase) bool {
	switch f.Name {
	case "__typename":
		w.b = jsonwire.AppendQuoted(w.b, typ)
	case "id":
		w.b = jsonwire.AppendQuoted(w.b, b.ID)
	case "type":
		scalar.MarshalStepType(b.Type).MarshalGQL(w)
	case "state":
		scalar.MarshalStepState(b.State).MarshalGQL(w)
	case "createdAt":
		w.b = scalar.AppendDateTime(w.b, b.CreatedAt)
	case "resolvedAt":
		w.b = appendOptDateTime(w.b, b.ResolvedAt)
	case "parentStepId":
		w.b = appendOptQuoted(w.b, b.ParentStepID)
	case "parentStep":
		key, ok := parentStepKey(b)
		if !ok {
			w.b = append(w.b, "null"...)
			return true
		}
		// The key ParentSteps asks for; a step of a page was primed
		// with it.
		s, err := w.l.journal().step.one(w.ctx, key)
		return err == nil && w.step(f.Selections, s)
	default:
		return false
	}
	return true
}

// attempts writes RunStep.attempts of s: the key Attempts asks for.
func (w *directWriter) attempts(f graphql.CollectedField, s *snapshot.RunStep) bool {
	a := w.l.argsOf(f, w.oc)
	last := a.int("last")
	if a.bad {
		return false
	}
	list, err := w.l.journal().attempts.one(w.ctx, newAttemptsKey(s.Key(), last))
	if err != nil {
		return false
	}
	w.b = append(w.b, '[')
	for i, r := range list {
		if i > 0 {
			w.b = append(w.b, ',')
		}
		if r.Err != nil {
			return false
		}
		if r.Value == nil {
			w.b = append(w.b, "null"...)
			continue
		}
		if !w.attempt(f.Selections, r.Value) {
			return false
		}
	}
	w.b = append(w.b, ']')
	return true
}

func (w *directWriter) attempt(sel ast.SelectionSet, at *snapshot.Attempt) bool {
	fields, ok := w.collect(sel, "Attempt")
	return ok && w.object(fields, func(f graphql.CollectedField) bool {
		switch f.Name {
		case "__typename":
			w.b = jsonwire.AppendQuoted(w.b, "Attempt")
		case "id":
			w.b = jsonwire.AppendQuoted(w.b, at.ID)
		case "number":
			w.b = scalar.AppendSafeInt(w.b, at.Number)
		case "state":
			scalar.MarshalAttemptState(at.State).MarshalGQL(w)
		case "startedAt":
			w.b = scalar.AppendDateTime(w.b, at.StartedAt)
		case "endedAt":
			w.b = appendOptDateTime(w.b, at.EndedAt)
		case "resultType":
			if at.ResultType == nil {
				w.b = append(w.b, "null"...)
				return true
			}
			scalar.MarshalResultType(*at.ResultType).MarshalGQL(w)
		case "result":
			if !w.payloads {
				return false
			}
			w.b = jsonwire.AppendJSON(w.b, at.Result)
		case "errorName":
			if !w.payloads {
				return false
			}
			w.b = appendOptQuoted(w.b, at.ErrorName)
		case "errorMessage":
			if !w.payloads {
				return false
			}
			w.b = appendOptQuoted(w.b, at.ErrorMessage)
		case "nextAttemptAt":
			w.b = appendOptDateTime(w.b, at.NextAttemptAt)
		default:
			return false
		}
		return true
	})
}

// inboundEvent writes an InboundEvent; null for none.
func (w *directWriter) inboundEvent(sel ast.SelectionSet, ev *snapshot.InboundEvent) bool {
	if ev == nil {
		w.b = append(w.b, "null"...)
		return true
	}
	fields, ok := w.collect(sel, "InboundEvent")
	return ok && w.object(fields, func(f graphql.CollectedField) bool {
		switch f.Name {
		case "__typename":
			w.b = jsonwire.AppendQuoted(w.b, "InboundEvent")
		case "id":
			w.b = jsonwire.AppendQuoted(w.b, ev.ID)
		case "eventName":
			w.b = jsonwire.AppendQuoted(w.b, ev.EventName)
		case "hasPayload":
			w.b = appendBool(w.b, ev.HasPayload)
		case "payload":
			if !w.payloads {
				return false
			}
			w.b = jsonwire.AppendJSON(w.b, ev.Payload)
		case "createdAt":
			w.b = scalar.AppendDateTime(w.b, ev.CreatedAt)
		case "claimedBy":
			w.b = appendOptQuoted(w.b, ev.ClaimedBy)
		case "claimedAt":
			w.b = appendOptDateTime(w.b, ev.ClaimedAt)
		default:
			return false
		}
		return true
	})
}

func (w *directWriter) runEvent(sel ast.SelectionSet, ev *snapshot.RunEvent) bool {
	fields, ok := w.collect(sel, "RunEvent")
	return ok && w.object(fields, func(f graphql.CollectedField) bool {
		switch f.Name {
		case "__typename":
			w.b = jsonwire.AppendQuoted(w.b, "RunEvent")
		case "seq":
			w.b = scalar.AppendSafeInt(w.b, ev.Seq)
		case "type":
			scalar.MarshalRunEventType(ev.Type).MarshalGQL(w)
		case "recordedAt":
			w.b = scalar.AppendDateTime(w.b, ev.RecordedAt)
		case "cancellationReason":
			if !w.payloads {
				return false
			}
			w.b = appendOptQuoted(w.b, ev.CancellationReason)
		default:
			return false
		}
		return true
	})
}
