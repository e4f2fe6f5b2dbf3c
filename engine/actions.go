package engine

import (
	"context"
	"encoding/json"

	"github.com/flowsnap/flowsnap/store/vocab"
)

// The actions of Writer, each Tx's action of the same name in a transaction
// of its own: committed when it succeeds, leaving no trace when it fails.

// CreateRun is [Tx.CreateRun] in a transaction of its own.
func (w *Writer) CreateRun(ctx context.Context, r NewRun) error {
	return w.Do(ctx, func(t *Tx) error { return t.CreateRun(ctx, r) })
}

// Start is [Tx.Start] in a transaction of its own.
func (w *Writer) Start(ctx context.Context, runID string, owner vocab.Owner) error {
	return w.Do(ctx, func(t *Tx) error { return t.Start(ctx, runID, owner) })
}

// Heartbeat is [Tx.Heartbeat] in a transaction of its own.
func (w *Writer) Heartbeat(ctx context.Context, runID, nonce string) error {
	return w.Do(ctx, func(t *Tx) error { return t.Heartbeat(ctx, runID, nonce) })
}

// Claim is [Tx.Claim] in a transaction of its own.
func (w *Writer) Claim(ctx context.Context, runID string, owner vocab.Owner) error {
	return w.Do(ctx, func(t *Tx) error { return t.Claim(ctx, runID, owner) })
}

// Wait is [Tx.Wait] in a transaction of its own.
func (w *Writer) Wait(ctx context.Context, runID string, waiting Waiting) error {
	return w.Do(ctx, func(t *Tx) error { return t.Wait(ctx, runID, waiting) })
}

// Wake is [Tx.Wake] in a transaction of its own.
func (w *Writer) Wake(ctx context.Context, runID string, owner vocab.Owner) error {
	return w.Do(ctx, func(t *Tx) error { return t.Wake(ctx, runID, owner) })
}

// Complete is [Tx.Complete] in a transaction of its own.
func (w *Writer) Complete(ctx context.Context, runID string, output json.RawMessage) error {
	return w.Do(ctx, func(t *Tx) error { return t.Complete(ctx, runID, output) })
}

// Fail is [Tx.Fail] in a transaction of its own.
func (w *Writer) Fail(ctx context.Context, runID string, e RunError) error {
	return w.Do(ctx, func(t *Tx) error { return t.Fail(ctx, runID, e) })
}

// RequestCancel is [Tx.RequestCancel] in a transaction of its own.
func (w *Writer) RequestCancel(ctx context.Context, runID string) error {
	return w.Do(ctx, func(t *Tx) error { return t.RequestCancel(ctx, runID) })
}

// AcknowledgeCancel is [Tx.AcknowledgeCancel] in a transaction of its own.
func (w *Writer) AcknowledgeCancel(ctx context.Context, runID string, owner vocab.Owner) error {
	return w.Do(ctx, func(t *Tx) error { return t.AcknowledgeCancel(ctx, runID, owner) })
}

// Cancel is [Tx.Cancel] in a transaction of its own.
func (w *Writer) Cancel(ctx context.Context, runID string) error {
	return w.Do(ctx, func(t *Tx) error { return t.Cancel(ctx, runID) })
}

// Delete is [Tx.Delete] in a transaction of its own.
func (w *Writer) Delete(ctx context.Context, runID string) error {
	return w.Do(ctx, func(t *Tx) error { return t.Delete(ctx, runID) })
}

// AddChild is [Tx.AddChild] in a transaction of its own.
func (w *Writer) AddChild(ctx context.Context, parentID, childID string, seq int64) error {
	return w.Do(ctx, func(t *Tx) error { return t.AddChild(ctx, parentID, childID, seq) })
}

// AddStep is [Tx.AddStep] in a transaction of its own.
func (w *Writer) AddStep(ctx context.Context, runID string, s Step) error {
	return w.Do(ctx, func(t *Tx) error { return t.AddStep(ctx, runID, s) })
}

// StartAttempt is [Tx.StartAttempt] in a transaction of its own.
func (w *Writer) StartAttempt(ctx context.Context, runID, stepID, attemptID string) error {
	return w.Do(ctx, func(t *Tx) error { return t.StartAttempt(ctx, runID, stepID, attemptID) })
}

// SucceedAttempt is [Tx.SucceedAttempt] in a transaction of its own.
func (w *Writer) SucceedAttempt(ctx context.Context, runID, attemptID string, result json.RawMessage) error {
	return w.Do(ctx, func(t *Tx) error { return t.SucceedAttempt(ctx, runID, attemptID, result) })
}

// FailAttempt is [Tx.FailAttempt] in a transaction of its own.
func (w *Writer) FailAttempt(ctx context.Context, runID, attemptID string, e AttemptError) error {
	return w.Do(ctx, func(t *Tx) error { return t.FailAttempt(ctx, runID, attemptID, e) })
}

// ElapseSleep is [Tx.ElapseSleep] in a transaction of its own.
func (w *Writer) ElapseSleep(ctx context.Context, runID, stepID string) error {
	return w.Do(ctx, func(t *Tx) error { return t.ElapseSleep(ctx, runID, stepID) })
}

// SatisfyWait is [Tx.SatisfyWait] in a transaction of its own.
func (w *Writer) SatisfyWait(ctx context.Context, runID, stepID, eventID string) error {
	return w.Do(ctx, func(t *Tx) error { return t.SatisfyWait(ctx, runID, stepID, eventID) })
}

// TimeOutWait is [Tx.TimeOutWait] in a transaction of its own.
func (w *Writer) TimeOutWait(ctx context.Context, runID, stepID string) error {
	return w.Do(ctx, func(t *Tx) error { return t.TimeOutWait(ctx, runID, stepID) })
}

// AddInboundEvent is [Tx.AddInboundEvent] in a transaction of its own.
func (w *Writer) AddInboundEvent(ctx context.Context, e InboundEvent) error {
	return w.Do(ctx, func(t *Tx) error { return t.AddInboundEvent(ctx, e) })
}

// AppendRunEvent is [Tx.AppendRunEvent] in a transaction of its own.
func (w *Writer) AppendRunEvent(ctx context.Context, runID string, typ vocab.RunEventType, reason string) error {
	return w.Do(ctx, func(t *Tx) error { return t.AppendRunEvent(ctx, runID, typ, reason) })
}
