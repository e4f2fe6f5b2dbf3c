package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/flowsnap/flowsnap/fault"
	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/vocab"
)

// Writer is the reference engine writer. Each of its action methods is one
// engine action in one transaction of its own; Do groups several actions in
// one transaction, and On runs actions inside a transaction the caller owns.
// A Writer is safe for concurrent use; on SQLite its transactions queue for
// the store's single writer connection.
type Writer struct {
	db  *store.DB
	now func() int64
}

// NewWriter returns a writer on db whose actions take their timestamps
// (milliseconds since the Unix epoch) from now; a nil now means the wall
// clock. A fixed or stepping clock makes what the writer writes reproducible.
func NewWriter(db *store.DB, now func() int64) *Writer {
	if now == nil {
		now = func() int64 { return time.Now().UnixMilli() }
	}
	return &Writer{db: db, now: now}
}

// Do runs fn in one read-write transaction, committed when fn returns nil and
// rolled back otherwise, so that a failed action leaves no trace however many
// statements it had run. ctx cancels the transaction.
func (w *Writer) Do(ctx context.Context, fn func(*Tx) error) error {
	return w.db.Write(ctx, func(tx store.Tx) error { return fn(w.On(tx)) })
}

// On returns the actions of w bound to tx, a read-write transaction the
// caller commits or rolls back. It is the batching hook: many actions, one
// commit.
func (w *Writer) On(tx store.Tx) *Tx {
	return &Tx{tx: tx, now: w.now}
}

// Tx is the engine's actions inside one transaction. When an action returns
// an error it may have run some of its statements: the caller must roll the
// transaction back (Writer.Do does).
type Tx struct {
	tx  store.Tx
	now func() int64
}

// checkOwner reports whether o is a worker the store admits: ids for its
// host and nonce, a pid in 1..2^53−1.
func checkOwner(what string, o vocab.Owner) error {
	if err := vocab.CheckID(what+" host id", o.HostID); err != nil {
		return err
	}
	if o.PID <= 0 || o.PID > vocab.MaxSafe {
		return fault.Errorf(fault.BadUserInput, "%s pid must be between 1 and 2^53-1", what)
	}
	return vocab.CheckID(what+" nonce", o.Nonce)
}

// ParentEdge makes a new run the child of ParentID, at position Seq (≥ 0)
// among that parent's children.
type ParentEdge struct {
	ParentID string
	Seq      int64
}

// Round makes a new run round Ordinal (≥ 1) of a lineage: LineageID is the
// run id of round 0, Previous the run id of round Ordinal−1, which the engine
// continued into this one.
type Round struct {
	LineageID string
	Ordinal   int64
	Previous  string
}

// NewRun is a run to create, pending.
type NewRun struct {
	ID       string
	FlowName string
	// State is the flow's JSON object (input and the like); nil means {}.
	// Its flowName, if present, must equal FlowName; it is set if absent.
	State json.RawMessage
	// CreatedAt is the creation time in ms; 0 means the writer's clock.
	CreatedAt int64
	// Parents, when set, make the run a child of each, with a spawn edge
	// apiece. With one parent that parent also becomes parent_run_id; with
	// several (a join) parent_run_id stays null and the effective parent is
	// the earliest edge by (seq, parent id).
	Parents []ParentEdge
	// Round, when set, continues a lineage; a round has no parents.
	Round *Round
}

// Waiting is why a suspended run waits. Zero fields are stored as NULL.
type Waiting struct {
	// Reason is free text; "timer", "approval", "quota", "human", "event",
	// "signal" are the kinds readers know, anything else reads as "other".
	Reason string
	// WakeAt is when the run wakes by itself, in ms.
	WakeAt int64
	// Token is the secret that resumes the run. Whoever holds it can.
	Token string
	// Request is the JSON the run published for whoever resumes it.
	Request json.RawMessage
}

// RunError is the error a failed run records in its state.
type RunError struct {
	Name    string `json:"name,omitempty"`
	Message string `json:"message"`
}

// Step is a journal step to add, in its initial state: a run step has no
// state of its own (its attempts carry it), a sleep or wait step starts
// waiting.
type Step struct {
	ID   string
	Type vocab.StepType
	// ParentStepID names the enclosing run step; "" for a top-level step.
	ParentStepID string
	// MaxAttempts bounds a run step's attempts; 0 means unbounded.
	MaxAttempts int64
	// WakeAt is when a sleep step elapses, in ms (required for sleeps).
	WakeAt int64
	// EventName is the inbound event a wait step waits for (required for
	// waits).
	EventName string
	// TimeoutAt is when a wait step gives up, in ms; 0 means never.
	TimeoutAt int64
}

// AttemptError is how an attempt failed.
type AttemptError struct {
	Message string
	Name    string
	// NextAttemptAt is when the step is retried, in ms; 0 means it is not.
	NextAttemptAt int64
}

// InboundEvent is an event delivered to a run for its wait steps.
type InboundEvent struct {
	ID    string
	RunID string
	Name  string
	// Payload is the event's JSON; nil means the event has none, which the
	// store keeps apart from a payload of JSON null (json.RawMessage("null")).
	Payload json.RawMessage
	// CreatedAt is the delivery time in ms; 0 means the writer's clock.
	CreatedAt int64
}

// ---- Runs ----

const sqlRunExists = `SELECT status FROM flows_runs WHERE run_id = $1`

const sqlInsertRun = `
INSERT INTO flows_runs (run_id, status, created_at_ms, state_json,
  parent_run_id, execution_parent_id, lineage_id, round_ordinal)
VALUES ($1, 'pending', $2, $3, $4, $5, $6, $7)`

const sqlInsertEdge = `INSERT INTO flows_run_parents (parent_id, child_id, seq) VALUES ($1, $2, $3)`

// CreateRun creates a pending run, with its spawn edges when it is a child.
// It fails when the id is taken by a live run; a deleted id may be reused,
// and gets a newer revision than its tombstone.
func (t *Tx) CreateRun(ctx context.Context, r NewRun) error {
	if err := firstError(vocab.CheckID("run id", r.ID), vocab.CheckID("flow name", r.FlowName)); err != nil {
		return err
	}
	if r.CreatedAt == 0 {
		r.CreatedAt = t.now()
	}
	if err := checkMs("creation time", r.CreatedAt); err != nil {
		return err
	}
	state, err := newState(r.FlowName, r.State)
	if err != nil {
		return err
	}
	var parent, execParent, lineage, ordinal any
	switch {
	case r.Round != nil && len(r.Parents) > 0:
		return badRun(r.ID, "run %q cannot be both a child and a round of a lineage", r.ID)
	case r.Round != nil:
		if err := firstError(
			vocab.CheckID("lineage id", r.Round.LineageID),
			vocab.CheckID("previous round id", r.Round.Previous),
		); err != nil {
			return err
		}
		if r.Round.Ordinal < 1 || r.Round.Ordinal > vocab.MaxSafe {
			return badRun(r.ID, "round ordinal of run %q must be between 1 and 2^53-1", r.ID)
		}
		if r.Round.LineageID == r.ID || r.Round.Previous == r.ID {
			return badRun(r.ID, "run %q cannot continue itself", r.ID)
		}
		parent, execParent = r.Round.Previous, r.Round.Previous
		lineage, ordinal = r.Round.LineageID, r.Round.Ordinal
	case len(r.Parents) > 0:
		if err := checkEdges(r.ID, r.Parents); err != nil {
			return err
		}
		// A join's effective parent is derived from its edges by the
		// store, which refuses any other value; until they exist it has
		// none.
		if len(r.Parents) == 1 {
			parent, execParent = r.Parents[0].ParentID, r.Parents[0].ParentID
		}
	}
	var status string
	switch err := t.tx.QueryRow(ctx, sqlRunExists, r.ID).Scan(&status); {
	case err == nil:
		return badRun(r.ID, "run %q already exists", r.ID)
	case !errors.Is(err, store.ErrNoRows):
		return persistence(err, "creating run %q", r.ID)
	}
	for _, e := range r.Parents {
		if err := t.mustExist(ctx, e.ParentID, "spawn a child of"); err != nil {
			return err
		}
	}
	if _, err := t.tx.Exec(ctx, sqlInsertRun, r.ID, r.CreatedAt, state, parent, execParent, lineage, ordinal); err != nil {
		return persistence(err, "creating run %q", r.ID)
	}
	for _, e := range r.Parents {
		if _, err := t.tx.Exec(ctx, sqlInsertEdge, e.ParentID, r.ID, e.Seq); err != nil {
			return persistence(err, "adding run %q as child of %q", r.ID, e.ParentID)
		}
	}
	return nil
}

func checkEdges(child string, edges []ParentEdge) error {
	seen := make(map[string]bool, len(edges))
	for _, e := range edges {
		if err := vocab.CheckID("parent run id", e.ParentID); err != nil {
			return err
		}
		if e.ParentID == child {
			return badRun(child, "run %q cannot be its own parent", child)
		}
		if seen[e.ParentID] {
			return badRun(child, "run %q has parent %q twice", child, e.ParentID)
		}
		seen[e.ParentID] = true
		if err := checkMs("child seq", e.Seq); err != nil {
			return err
		}
	}
	return nil
}

const sqlStart = `
UPDATE flows_runs
SET status = 'running', owner_host_id = $2, owner_pid = $3, owner_nonce = $4,
  heartbeat_at_ms = $5, started_at_ms = COALESCE(started_at_ms, $5)
WHERE run_id = $1 AND status = 'pending'`

// Start hands a pending run to owner, which runs it from now on.
func (t *Tx) Start(ctx context.Context, runID string, owner vocab.Owner) error {
	if err := firstError(checkRun(runID), checkOwner("owner", owner)); err != nil {
		return err
	}
	return t.update(ctx, runID, "start", "a pending run", sqlStart, runID, owner.HostID, owner.PID, owner.Nonce, t.now())
}

const sqlHeartbeat = `
UPDATE flows_runs SET heartbeat_at_ms = $3
WHERE run_id = $1 AND status = 'running' AND owner_nonce = $2`

// Heartbeat records that the owner with nonce is still running the run. It
// fails when the run is not running or another owner has it: a worker that
// lost its run must stop.
func (t *Tx) Heartbeat(ctx context.Context, runID, nonce string) error {
	if err := firstError(checkRun(runID), vocab.CheckID("owner nonce", nonce)); err != nil {
		return err
	}
	return t.update(ctx, runID, "heartbeat", "a run running under that owner", sqlHeartbeat, runID, nonce, t.now())
}

const sqlClaim = `
UPDATE flows_runs
SET claim_host_id = $2, claim_pid = $3, claim_nonce = $4, claimed_at_ms = $5
WHERE run_id = $1 AND status IN ('pending', 'running', 'suspended')`

// Claim records that owner claimed an unfinished run (replacing an earlier
// claim). Finishing the run releases the claim.
func (t *Tx) Claim(ctx context.Context, runID string, owner vocab.Owner) error {
	if err := firstError(checkRun(runID), checkOwner("claimant", owner)); err != nil {
		return err
	}
	return t.update(ctx, runID, "claim", "an unfinished run", sqlClaim, runID, owner.HostID, owner.PID, owner.Nonce, t.now())
}

const sqlWait = `
UPDATE flows_runs
SET status = 'suspended', owner_host_id = NULL, owner_pid = NULL, owner_nonce = NULL,
  heartbeat_at_ms = NULL, waiting_reason = $2, waiting_wake_at_ms = $3,
  waiting_token = $4, waiting_request = $5
WHERE run_id = $1 AND status = 'running'`

// Wait suspends a running run, which gives up its owner until it is woken.
func (t *Tx) Wait(ctx context.Context, runID string, w Waiting) error {
	if err := checkRun(runID); err != nil {
		return err
	}
	if w.Reason == "" {
		return badRun(runID, "run %q needs a waiting reason", runID)
	}
	if err := firstError(
		checkText("waiting reason", w.Reason),
		checkMs("wake time", w.WakeAt),
		checkText("waiting token", w.Token),
	); err != nil {
		return err
	}
	if w.Request != nil {
		if err := checkJSON("waiting request", w.Request); err != nil {
			return err
		}
	}
	return t.update(ctx, runID, "suspend", "a running run", sqlWait,
		runID, w.Reason, nullable(w.WakeAt), nullable(w.Token), nullableJSON(w.Request))
}

const sqlWake = `
UPDATE flows_runs
SET status = 'running', waiting_reason = NULL, waiting_wake_at_ms = NULL,
  waiting_token = NULL, waiting_request = NULL,
  owner_host_id = $2, owner_pid = $3, owner_nonce = $4, heartbeat_at_ms = $5
WHERE run_id = $1 AND status = 'suspended'`

// Wake resumes a suspended run under owner; its token stops working.
func (t *Tx) Wake(ctx context.Context, runID string, owner vocab.Owner) error {
	if err := firstError(checkRun(runID), checkOwner("owner", owner)); err != nil {
		return err
	}
	return t.update(ctx, runID, "wake", "a suspended run", sqlWake, runID, owner.HostID, owner.PID, owner.Nonce, t.now())
}

const sqlState = `SELECT state_json FROM flows_runs WHERE run_id = $1`

const sqlComplete = `
UPDATE flows_runs
SET status = 'completed', state_json = $2, finished_at_ms = $3,
  owner_host_id = NULL, owner_pid = NULL, owner_nonce = NULL, heartbeat_at_ms = NULL,
  claim_host_id = NULL, claim_pid = NULL, claim_nonce = NULL, claimed_at_ms = NULL
WHERE run_id = $1 AND status = 'running'`

// Complete finishes a running run successfully. A non-nil output is stored
// as the state's "output" (json.RawMessage("null") is an output of null);
// nil leaves the state as it is, for a flow that returns nothing.
func (t *Tx) Complete(ctx context.Context, runID string, output json.RawMessage) error {
	if err := checkRun(runID); err != nil {
		return err
	}
	if output != nil {
		if err := checkJSON("output", output); err != nil {
			return err
		}
	}
	state, err := t.withState(ctx, runID, "output", output)
	if err != nil {
		return err
	}
	return t.update(ctx, runID, "complete", "a running run", sqlComplete, runID, state, t.now())
}

const sqlFail = `
UPDATE flows_runs
SET status = 'failed', state_json = $2, finished_at_ms = $3,
  owner_host_id = NULL, owner_pid = NULL, owner_nonce = NULL, heartbeat_at_ms = NULL,
  claim_host_id = NULL, claim_pid = NULL, claim_nonce = NULL, claimed_at_ms = NULL,
  waiting_reason = NULL, waiting_wake_at_ms = NULL, waiting_token = NULL, waiting_request = NULL
WHERE run_id = $1 AND status IN ('pending', 'running', 'suspended')`

// Fail finishes an unfinished run as failed, recording e as the state's
// "error".
func (t *Tx) Fail(ctx context.Context, runID string, e RunError) error {
	if err := checkRun(runID); err != nil {
		return err
	}
	if e.Message == "" {
		return badRun(runID, "failing run %q needs an error message", runID)
	}
	if err := firstError(checkText("error message", e.Message), checkText("error name", e.Name)); err != nil {
		return err
	}
	raw, err := marshal(e)
	if err != nil {
		return err
	}
	state, err := t.withState(ctx, runID, "error", raw)
	if err != nil {
		return err
	}
	return t.update(ctx, runID, "fail", "an unfinished run", sqlFail, runID, state, t.now())
}

const sqlRequestCancel = `
UPDATE flows_runs SET cancel_requested_at_ms = $2
WHERE run_id = $1 AND status IN ('pending', 'running', 'suspended') AND cancel_requested_at_ms IS NULL`

const sqlCancelRequested = `
SELECT 1 FROM flows_runs
WHERE run_id = $1 AND status IN ('pending', 'running', 'suspended') AND cancel_requested_at_ms IS NOT NULL`

// RequestCancel asks that an unfinished run be cancelled. The first request
// counts; requesting again changes nothing (and advances no revision).
func (t *Tx) RequestCancel(ctx context.Context, runID string) error {
	if err := checkRun(runID); err != nil {
		return err
	}
	return t.once(ctx, runID, "request cancellation of", "an unfinished run",
		sqlCancelRequested, sqlRequestCancel, runID, t.now())
}

const sqlAcknowledgeCancel = `
UPDATE flows_runs SET cancel_acknowledgement_json = $2
WHERE run_id = $1 AND cancel_requested_at_ms IS NOT NULL AND cancel_acknowledgement_json IS NULL`

const sqlCancelAcknowledged = `
SELECT 1 FROM flows_runs WHERE run_id = $1 AND cancel_acknowledgement_json IS NOT NULL`

// cancelAck is the JSON shape of cancel_acknowledgement_json.
type cancelAck struct {
	ObservedAtMs int64       `json:"observedAtMs"`
	Owner        vocab.Owner `json:"owner"`
}

// AcknowledgeCancel records that owner observed the run's cancellation
// request. Only the first owner to observe it is recorded; a run without a
// request cannot be acknowledged.
func (t *Tx) AcknowledgeCancel(ctx context.Context, runID string, owner vocab.Owner) error {
	if err := firstError(checkRun(runID), checkOwner("observer", owner)); err != nil {
		return err
	}
	raw, err := marshal(cancelAck{ObservedAtMs: t.now(), Owner: owner})
	if err != nil {
		return err
	}
	return t.once(ctx, runID, "acknowledge cancellation of", "a run whose cancellation was requested",
		sqlCancelAcknowledged, sqlAcknowledgeCancel, runID, string(raw))
}

const sqlCancel = `
UPDATE flows_runs
SET status = 'cancelled', finished_at_ms = $2,
  owner_host_id = NULL, owner_pid = NULL, owner_nonce = NULL, heartbeat_at_ms = NULL,
  claim_host_id = NULL, claim_pid = NULL, claim_nonce = NULL, claimed_at_ms = NULL,
  waiting_reason = NULL, waiting_wake_at_ms = NULL, waiting_token = NULL, waiting_request = NULL
WHERE run_id = $1 AND status IN ('pending', 'running', 'suspended')`

// Cancel finishes an unfinished run as cancelled. Its cancellation request
// and acknowledgement, if any, stay as the record of how it came to end.
func (t *Tx) Cancel(ctx context.Context, runID string) error {
	if err := checkRun(runID); err != nil {
		return err
	}
	return t.update(ctx, runID, "cancel", "an unfinished run", sqlCancel, runID, t.now())
}

const sqlDelete = `DELETE FROM flows_runs WHERE run_id = $1`

// Delete garbage-collects a run: its row goes, the store's triggers remove
// its spawn edges and journal and leave a tombstone in flows_run_changes.
// Children it spawned stay, their parent now missing.
func (t *Tx) Delete(ctx context.Context, runID string) error {
	if err := checkRun(runID); err != nil {
		return err
	}
	n, err := t.tx.Exec(ctx, sqlDelete, runID)
	if err != nil {
		return persistence(err, "deleting run %q", runID)
	}
	if n == 0 {
		return badRun(runID, "cannot delete run %q: no such run", runID)
	}
	return nil
}

// AddChild adds a spawn edge making childID a child of parentID at position
// seq: a join gains a parent this way. The store's trigger updates the
// child's effective parent.
func (t *Tx) AddChild(ctx context.Context, parentID, childID string, seq int64) error {
	if err := firstError(
		checkRun(childID),
		checkEdges(childID, []ParentEdge{{ParentID: parentID, Seq: seq}}),
	); err != nil {
		return err
	}
	for _, id := range []string{parentID, childID} {
		if err := t.mustExist(ctx, id, "add a spawn edge to"); err != nil {
			return err
		}
	}
	if _, err := t.tx.Exec(ctx, sqlInsertEdge, parentID, childID, seq); err != nil {
		return persistence(err, "adding run %q as child of %q", childID, parentID)
	}
	return nil
}

// ---- The journal ----

const sqlInsertStep = `
INSERT INTO flows_steps (run_id, step_id, type, created_at_ms, state, max_attempts,
  target_wake_at_ms, event_name, timeout_at_ms, resolved_at_ms, parent_step_id)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, NULL, $10)`

// AddStep adds a step to a run's journal in its initial state.
func (t *Tx) AddStep(ctx context.Context, runID string, s Step) error {
	if err := firstError(checkRun(runID), vocab.CheckID("step id", s.ID)); err != nil {
		return err
	}
	if s.ParentStepID != "" {
		if err := vocab.CheckID("parent step id", s.ParentStepID); err != nil {
			return err
		}
		if s.ParentStepID == s.ID {
			return badRun(runID, "step %q cannot enclose itself", s.ID)
		}
	}
	var state any
	switch s.Type {
	case vocab.StepRun:
		if s.WakeAt != 0 || s.EventName != "" || s.TimeoutAt != 0 {
			return badRun(runID, "run step %q takes no wake time, event or timeout", s.ID)
		}
		if err := checkMs("max attempts", s.MaxAttempts); err != nil {
			return err
		}
	case vocab.StepSleep:
		if s.WakeAt == 0 || s.EventName != "" || s.TimeoutAt != 0 || s.MaxAttempts != 0 {
			return badRun(runID, "sleep step %q takes a wake time and nothing else", s.ID)
		}
		state = "waiting"
	case vocab.StepWait:
		if s.EventName == "" || s.WakeAt != 0 || s.MaxAttempts != 0 {
			return badRun(runID, "wait step %q takes an event name, an optional timeout and nothing else", s.ID)
		}
		if err := vocab.CheckID("event name", s.EventName); err != nil {
			return err
		}
		state = "waiting"
	default:
		return badRun(runID, "step %q has unknown type %q", s.ID, s.Type)
	}
	if err := firstError(checkMs("wake time", s.WakeAt), checkMs("timeout", s.TimeoutAt)); err != nil {
		return err
	}
	if _, err := t.tx.Exec(ctx, sqlInsertStep, runID, s.ID, string(s.Type), t.now(), state,
		nullable(s.MaxAttempts), nullable(s.WakeAt), nullable(s.EventName), nullable(s.TimeoutAt),
		nullable(s.ParentStepID)); err != nil {
		return persistence(err, "adding step %q to run %q", s.ID, runID)
	}
	return nil
}

const sqlStartAttempt = `
INSERT INTO flows_step_attempts (attempt_id, run_id, step_id, started_at_ms, state)
VALUES ($1, $2, $3, $4, 'started')`

// StartAttempt starts an attempt of a run step. The store refuses a second
// started attempt of the same step, and attempts of sleep or wait steps.
func (t *Tx) StartAttempt(ctx context.Context, runID, stepID, attemptID string) error {
	if err := firstError(
		checkRun(runID),
		vocab.CheckID("step id", stepID),
		vocab.CheckID("attempt id", attemptID),
	); err != nil {
		return err
	}
	if _, err := t.tx.Exec(ctx, sqlStartAttempt, attemptID, runID, stepID, t.now()); err != nil {
		return persistence(err, "starting attempt %q of step %q of run %q", attemptID, stepID, runID)
	}
	return nil
}

const sqlSucceedAttempt = `
UPDATE flows_step_attempts
SET state = 'succeeded', ended_at_ms = $3, result_type = $4, result_json = $5
WHERE run_id = $1 AND attempt_id = $2 AND state = 'started'`

// SucceedAttempt ends a started attempt successfully. A nil result means the
// step returned nothing (result type "none"); any other result is its JSON,
// and json.RawMessage("null") is a returned null.
func (t *Tx) SucceedAttempt(ctx context.Context, runID, attemptID string, result json.RawMessage) error {
	if err := firstError(checkRun(runID), vocab.CheckID("attempt id", attemptID)); err != nil {
		return err
	}
	resultType := "none"
	if result != nil {
		if err := checkJSON("result", result); err != nil {
			return err
		}
		resultType = "json"
	}
	return t.endAttempt(ctx, runID, attemptID, sqlSucceedAttempt, runID, attemptID, t.now(), resultType, nullableJSON(result))
}

const sqlFailAttempt = `
UPDATE flows_step_attempts
SET state = 'failed', ended_at_ms = $3, error_message = $4, error_name = $5, next_attempt_at_ms = $6
WHERE run_id = $1 AND attempt_id = $2 AND state = 'started'`

// FailAttempt ends a started attempt with an error, and when the step will
// be retried.
func (t *Tx) FailAttempt(ctx context.Context, runID, attemptID string, e AttemptError) error {
	if err := firstError(checkRun(runID), vocab.CheckID("attempt id", attemptID)); err != nil {
		return err
	}
	if e.Message == "" {
		return badRun(runID, "failing attempt %q needs an error message", attemptID)
	}
	if err := firstError(
		checkText("error message", e.Message),
		checkText("error name", e.Name),
		checkMs("next attempt time", e.NextAttemptAt),
	); err != nil {
		return err
	}
	return t.endAttempt(ctx, runID, attemptID, sqlFailAttempt,
		runID, attemptID, t.now(), e.Message, nullable(e.Name), nullable(e.NextAttemptAt))
}

func (t *Tx) endAttempt(ctx context.Context, runID, attemptID, query string, args ...any) error {
	n, err := t.tx.Exec(ctx, query, args...)
	if err != nil {
		return persistence(err, "ending attempt %q of run %q", attemptID, runID)
	}
	if n == 0 {
		return badRun(runID, "run %q has no started attempt %q", runID, attemptID)
	}
	return nil
}

const sqlElapseSleep = `
UPDATE flows_steps SET state = 'elapsed', resolved_at_ms = $3
WHERE run_id = $1 AND step_id = $2 AND type = 'sleep' AND state = 'waiting'`

// ElapseSleep ends a waiting sleep step.
func (t *Tx) ElapseSleep(ctx context.Context, runID, stepID string) error {
	return t.resolveStep(ctx, runID, stepID, "a waiting sleep step", sqlElapseSleep)
}

const sqlClaimEvent = `
UPDATE flows_inbound_events SET claimed_by = $3, claimed_at_ms = $4
WHERE run_id = $1 AND event_id = $2 AND claimed_by IS NULL
  AND event_name = (SELECT event_name FROM flows_steps
                    WHERE run_id = $1 AND step_id = $3 AND type = 'wait' AND state = 'waiting')`

const sqlSatisfyWait = `
UPDATE flows_steps SET state = 'satisfied', resolved_at_ms = $3
WHERE run_id = $1 AND step_id = $2 AND type = 'wait' AND state = 'waiting'`

// SatisfyWait ends a waiting wait step with the inbound event eventID, which
// it claims: the event must be unclaimed and carry the step's event name.
func (t *Tx) SatisfyWait(ctx context.Context, runID, stepID, eventID string) error {
	if err := firstError(
		checkRun(runID),
		vocab.CheckID("step id", stepID),
		vocab.CheckID("event id", eventID),
	); err != nil {
		return err
	}
	now := t.now()
	n, err := t.tx.Exec(ctx, sqlClaimEvent, runID, eventID, stepID, now)
	if err != nil {
		return persistence(err, "claiming event %q for step %q of run %q", eventID, stepID, runID)
	}
	if n == 0 {
		return badRun(runID, "event %q of run %q cannot satisfy step %q: the event is missing, claimed or named otherwise, or the step is not a waiting wait step", eventID, runID, stepID)
	}
	return t.resolveStep(ctx, runID, stepID, "a waiting wait step", sqlSatisfyWait)
}

const sqlTimeOutWait = `
UPDATE flows_steps SET state = 'timed_out', resolved_at_ms = $3
WHERE run_id = $1 AND step_id = $2 AND type = 'wait' AND state = 'waiting'
  AND timeout_at_ms IS NOT NULL`

// TimeOutWait ends a waiting wait step that has a timeout without an event.
func (t *Tx) TimeOutWait(ctx context.Context, runID, stepID string) error {
	return t.resolveStep(ctx, runID, stepID, "a waiting wait step with a timeout", sqlTimeOutWait)
}

func (t *Tx) resolveStep(ctx context.Context, runID, stepID, want, query string) error {
	if err := firstError(checkRun(runID), vocab.CheckID("step id", stepID)); err != nil {
		return err
	}
	n, err := t.tx.Exec(ctx, query, runID, stepID, t.now())
	if err != nil {
		return persistence(err, "resolving step %q of run %q", stepID, runID)
	}
	if n == 0 {
		return badRun(runID, "step %q of run %q is not %s", stepID, runID, want)
	}
	return nil
}

const sqlInsertInboundEvent = `
INSERT INTO flows_inbound_events (event_id, run_id, event_name, payload, created_at_ms)
VALUES ($1, $2, $3, $4, $5)`

// AddInboundEvent delivers an event to a run, unclaimed.
func (t *Tx) AddInboundEvent(ctx context.Context, e InboundEvent) error {
	if err := firstError(
		checkRun(e.RunID),
		vocab.CheckID("event id", e.ID),
		vocab.CheckID("event name", e.Name),
	); err != nil {
		return err
	}
	if e.Payload != nil {
		if err := checkJSON("event payload", e.Payload); err != nil {
			return err
		}
	}
	if e.CreatedAt == 0 {
		e.CreatedAt = t.now()
	}
	if err := checkMs("event time", e.CreatedAt); err != nil {
		return err
	}
	if _, err := t.tx.Exec(ctx, sqlInsertInboundEvent, e.ID, e.RunID, e.Name, nullableJSON(e.Payload), e.CreatedAt); err != nil {
		return persistence(err, "adding event %q to run %q", e.ID, e.RunID)
	}
	return nil
}

const sqlNextRunEventSeq = `SELECT COALESCE(MAX(seq) + 1, 0) FROM flows_run_events WHERE run_id = $1`

const sqlInsertRunEvent = `
INSERT INTO flows_run_events (run_id, seq, recorded_at_ms, type, cancellation_reason)
VALUES ($1, $2, $3, $4, $5)`

// AppendRunEvent appends an entry to the run's lifecycle log. reason is the
// cancellation reason, only for EventCancelled ("" for none).
func (t *Tx) AppendRunEvent(ctx context.Context, runID string, typ vocab.RunEventType, reason string) error {
	if err := checkRun(runID); err != nil {
		return err
	}
	if !slices.Contains(vocab.RunEventTypes, typ) {
		return badRun(runID, "unknown run event type %q", typ)
	}
	if reason != "" && typ != vocab.EventCancelled {
		return badRun(runID, "only a cancelled event has a cancellation reason")
	}
	if err := checkText("cancellation reason", reason); err != nil {
		return err
	}
	var seq int64
	if err := t.tx.QueryRow(ctx, sqlNextRunEventSeq, runID).Scan(&seq); err != nil {
		return persistence(err, "appending to the log of run %q", runID)
	}
	if _, err := t.tx.Exec(ctx, sqlInsertRunEvent, runID, seq, t.now(), string(typ), nullable(reason)); err != nil {
		return persistence(err, "appending to the log of run %q", runID)
	}
	return nil
}

// ---- Helpers ----

// update runs a guarded UPDATE of one run; when it matches nothing, it says
// why: no such run, or the run is not in a state the action applies to.
func (t *Tx) update(ctx context.Context, runID, action, want, query string, args ...any) error {
	n, err := t.tx.Exec(ctx, query, args...)
	if err != nil {
		return persistence(err, "%s run %q", action, runID)
	}
	if n == 0 {
		return t.refuse(ctx, runID, action, want)
	}
	return nil
}

// once runs an update that records something the first time only: when it
// changes no row and done (a query on $1, the run id) finds it recorded
// already, that is success, and nothing changes; otherwise the run is not in
// a state that allows it.
func (t *Tx) once(ctx context.Context, runID, action, want, done, query string, args ...any) error {
	n, err := t.tx.Exec(ctx, query, args...)
	if err != nil {
		return persistence(err, "%s run %q", action, runID)
	}
	if n == 1 {
		return nil
	}
	var one int64
	if err := t.tx.QueryRow(ctx, done, runID).Scan(&one); err == nil {
		return nil
	}
	return t.refuse(ctx, runID, action, want)
}

// mustExist fails unless run runID exists: the store would refuse an edge
// to a missing run too, but only as a constraint violation.
func (t *Tx) mustExist(ctx context.Context, runID, action string) error {
	var status string
	switch err := t.tx.QueryRow(ctx, sqlRunExists, runID).Scan(&status); {
	case errors.Is(err, store.ErrNoRows):
		return badRun(runID, "cannot %s run %q: no such run", action, runID)
	case err != nil:
		return persistence(err, "%s run %q", action, runID)
	}
	return nil
}

func (t *Tx) refuse(ctx context.Context, runID, action, want string) error {
	var status string
	switch err := t.tx.QueryRow(ctx, sqlRunExists, runID).Scan(&status); {
	case errors.Is(err, store.ErrNoRows):
		return badRun(runID, "cannot %s run %q: no such run", action, runID)
	case err != nil:
		return persistence(err, "%s run %q", action, runID)
	}
	return badRun(runID, "cannot %s run %q: it is %s, and only %s can be", action, runID, status, want)
}

// withState returns the run's state with key set to value (unchanged when
// value is nil).
func (t *Tx) withState(ctx context.Context, runID, key string, value json.RawMessage) (string, error) {
	var raw string
	switch err := t.tx.QueryRow(ctx, sqlState, runID).Scan(&raw); {
	case errors.Is(err, store.ErrNoRows):
		return "", badRun(runID, "no such run %q", runID)
	case err != nil:
		return "", persistence(err, "reading the state of run %q", runID)
	}
	if value == nil {
		return raw, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(raw), &m); err != nil || m == nil {
		return "", badRun(runID, "the state of run %q is not a JSON object", runID)
	}
	m[key] = value
	b, err := marshal(m)
	return string(b), err
}

// newState returns the state object of a new run: raw with flowName set.
func newState(flowName string, raw json.RawMessage) (string, error) {
	m := map[string]json.RawMessage{}
	if raw != nil {
		if err := checkJSON("state", raw); err != nil {
			return "", err
		}
		if err := json.Unmarshal(raw, &m); err != nil || m == nil {
			return "", fault.Errorf(fault.BadUserInput, "state must be a JSON object")
		}
		if got, ok := m["flowName"]; ok {
			var s string
			if json.Unmarshal(got, &s) != nil || s != flowName {
				return "", fault.Errorf(fault.BadUserInput, "state.flowName must equal the flow name")
			}
		}
	}
	name, err := marshal(flowName)
	if err != nil {
		return "", err
	}
	m["flowName"] = name
	b, err := marshal(m)
	return string(b), err
}

// marshal encodes v as compact JSON without HTML escaping, which would turn
// a flow's "<" into "\u003c" and change its data for no reader's benefit.
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fault.Wrap(fault.BadUserInput, err, "encoding JSON")
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// firstError returns the first of errs that is not nil: the checks of an
// input, in the order they are reported.
func firstError(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func checkRun(runID string) error { return vocab.CheckID("run id", runID) }

func badRun(runID, format string, args ...any) error {
	return &fault.Error{Code: fault.BadUserInput, Message: fmt.Sprintf(format, args...), RunID: runID}
}

func persistence(err error, format string, args ...any) error {
	return fault.Wrap(fault.PersistenceFailed, err, format+" failed", args...)
}
