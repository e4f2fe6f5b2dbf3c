package snapshot

import (
	"encoding/json"

	"github.com/flowsnap/flowsnap/store/vocab"
)

// Position is where a snapshot was read: the store's identity and its
// revision at the first read of the transaction.
type Position struct {
	Source   string `json:"source"`
	Revision int64  `json:"revision"`
}

// Millis is a point in time in milliseconds since the Unix epoch, as the
// engine stores it (0 ≤ t ≤ vocab.MaxSafe).
type Millis int64

// Snapshot is what reading a run id yields: a *Run or a *Missing.
type Snapshot interface {
	// SnapshotID is the run id that was read.
	SnapshotID() string
}

// Run is an observed run, decoded and checked against the run invariants
// (ARCHITECTURE.md, "The contract"). It never holds a waiting token, only
// its digest.
type Run struct {
	ID       string
	Revision int64
	Status   vocab.Status
	FlowName string
	// State is the column's JSON value as a response writes it: compact,
	// with <, >, & and the line and paragraph separators escaped
	// (jsonwire.ResponseForm), the column's own text when it is so already.
	State       json.RawMessage
	CreatedAt   Millis
	StartedAt   *Millis
	FinishedAt  *Millis
	Owner       *vocab.Owner
	HeartbeatAt *Millis
	Claim       *Claim
	ParentRunID *string
	// ExecutionParentID is the effective parent: ParentRunID, or else the
	// parent of the run's earliest spawn edge.
	ExecutionParentID *string
	LineageID         string
	RoundOrdinal      int64
	Cancellation      Cancellation
	Waiting           *Waiting
}

// SnapshotID returns the run's id.
func (r *Run) SnapshotID() string { return r.ID }

// Missing is a run id with no live run: it never existed, or it was deleted
// (garbage-collected) and its tombstone revision is known.
type Missing struct {
	ID                string
	Deleted           bool
	DeletedAtRevision *int64
}

// SnapshotID returns the id that was read.
func (m *Missing) SnapshotID() string { return m.ID }

// Claim is a worker's claim on a run.
type Claim struct {
	Owner     vocab.Owner
	ClaimedAt Millis
}

// Cancellation is a run's cancellation intent and its acknowledgement.
type Cancellation struct {
	RequestedAt     *Millis
	Acknowledgement *CancelAcknowledgement
}

// CancelAcknowledgement is the first owner that observed a cancellation
// request.
type CancelAcknowledgement struct {
	ObservedAt Millis
	Owner      vocab.Owner
}

// Waiting is what a suspended run waits for. TokenDigest is the lowercase
// hex SHA-256 of the secret token; the token itself is never kept.
type Waiting struct {
	Kind        vocab.WaitingKind
	Reason      string
	WakeAt      *Millis
	TokenDigest *string
	// Request is in a response's form, as Run.State is.
	Request json.RawMessage
}
