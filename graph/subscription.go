package graph

import (
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
