package snapshot

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Position is where a snapshot was read: the store's identity and its
// revision at the first read of the transaction.
type Position struct {
	Source   string `json:"source"`
	Revision int64  `json:"revision"`
}

// Millis is a point in time in milliseconds since the Unix epoch, as the
// engine stores it (0 ≤ t ≤ 2^53−1).
type Millis int64

// MaxSafe is the largest integer a JSON number (and a JavaScript client)
// represents exactly: 2^53−1.
const MaxSafe = 1<<53 - 1

// Snapshot is what reading a run id yields: a *Run or a *Missing.
type Snapshot interface {
	// SnapshotID is the run id that was read.
	SnapshotID() string
}

// Status is a run's lifecycle status as the engine stores it.
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

var statuses = map[Status]bool{StatusPending: true, StatusRunning: true, StatusSuspended: true, StatusCompleted: true, StatusFailed: true, StatusCancelled: true}

// Valid reports whether s is one of the statuses the engine writes.
func (s Status) Valid() bool { return statuses[s] }

// MarshalGQL writes s as the GraphQL enum value (upper case).
func (s Status) MarshalGQL(w io.Writer) { writeEnum(w, string(s)) }

// UnmarshalGQL reads a GraphQL RunStatus enum value.
func (s *Status) UnmarshalGQL(v any) error {
	str, ok := v.(string)
	if !ok || !Status(strings.ToLower(str)).Valid() || str != strings.ToUpper(str) {
		return fmt.Errorf("%v is not a RunStatus", v)
	}
	*s = Status(strings.ToLower(str))
	return nil
}

// WaitingKind classifies a run's waiting reason (kinds: timer, approval, quota, human; event and signal are signal; anything else other).
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

// KindOf returns the kind of a waiting reason: timer, approval, quota and
// human are kinds of their own, event and signal are signal, anything else
// is other.
func KindOf(reason string) WaitingKind {
	switch reason {
	case "timer", "approval", "quota", "human":
		return WaitingKind(reason)
	case "event", "signal":
		return WaitingSignal
	}
	return WaitingOther
}

// MarshalGQL writes k as the GraphQL enum value (upper case).
func (k WaitingKind) MarshalGQL(w io.Writer) { writeEnum(w, string(k)) }

// UnmarshalGQL reads a GraphQL WaitingKind enum value.
func (k *WaitingKind) UnmarshalGQL(v any) error {
	str, ok := v.(string)
	if !ok || str != strings.ToUpper(str) {
		return fmt.Errorf("%v is not a WaitingKind", v)
	}
	switch WaitingKind(strings.ToLower(str)) {
	case WaitingTimer, WaitingSignal, WaitingApproval, WaitingQuota, WaitingHuman, WaitingOther:
		*k = WaitingKind(strings.ToLower(str))
		return nil
	}
	return fmt.Errorf("%v is not a WaitingKind", v)
}

func writeEnum(w io.Writer, s string) { _, _ = io.WriteString(w, strconv.Quote(strings.ToUpper(s))) }

// Run is an observed run, decoded and checked against the run invariants
// (ARCHITECTURE.md, "The contract"). It never holds a waiting token, only
// its digest.
type Run struct {
	ID          string
	Revision    int64
	Status      Status
	FlowName    string
	State       json.RawMessage
	CreatedAt   Millis
	StartedAt   *Millis
	FinishedAt  *Millis
	Owner       *Owner
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

// Owner is a worker process: the one running a run, or holding a claim.
type Owner struct {
	HostID string `json:"hostId"`
	Pid    int64  `json:"pid"`
	Nonce  string `json:"nonce"`
}

// Claim is a worker's claim on a run.
type Claim struct {
	Owner     Owner
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
	Owner      Owner
}

// Waiting is what a suspended run waits for. TokenDigest is the lowercase
// hex SHA-256 of the secret token; the token itself is never kept.
type Waiting struct {
	Kind        WaitingKind
	Reason      string
	WakeAt      *Millis
	TokenDigest *string
	Request     json.RawMessage
}
