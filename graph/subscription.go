package graph

import (
	"context"

	"github.com/flowsnap/flowsnap/live"
	"github.com/flowsnap/flowsnap/snapshot"
)

// revisionOf is the revision of the change a snapshot shows: a run's
// revision, a deletion's, or 0 for an id that never existed.
func revisionOf(snap snapshot.Snapshot) int64 {
	switch s := snap.(type) {
	case *snapshot.Run:
		return s.Revision
	case *snapshot.Missing:
		if s.DeletedAtRevision != nil {
			return *s.DeletedAtRevision
		}
	}
	return 0
}

// changesBatch is the most changes one event of Subscription.changes
// carries; a larger burst comes as several events, one after the other.
var changesBatch = snapshot.MaxChangesSize

// absentRun is what a run subscription sent last of an id without a run
// the principal may see: one that never existed, or one outside its scope
// (docs/contract.md#scopes), which reads exactly the same. Once it said
// so, the id's changes that leave it so send nothing: an event would tell
// that a run the principal may not see changed.
type absentRun struct {
	sent, absent bool
}

// event returns the event of snap, read in ctx: live.Unchanged when it is
// absent and the last event was too. An absent run's revision is the
// read's position, so that only later changes read it again.
func (h *absentRun) event(ctx context.Context, reader *snapshot.Reader, snap snapshot.Snapshot) (snapshot.Snapshot, int64, bool, error) {
	m, ok := snap.(*snapshot.Missing)
	if !ok || m.Deleted {
		h.sent, h.absent = true, false
		return snap, revisionOf(snap), false, nil
	}
	pos, err := reader.Position(ctx)
	if err != nil {
		return nil, 0, false, err
	}
	if h.sent && h.absent {
		return nil, pos.Revision, false, live.Unchanged
	}
	h.sent, h.absent = true, true
	return snap, pos.Revision, false, nil
}
