package snapshot

import (
	"context"
	"fmt"

	"github.com/flowsnap/flowsnap/access"
	"github.com/flowsnap/flowsnap/fault"
	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/vocab"
)

// Page sizes of the change feed (docs/contract.md#change-feed).
const (
	DefaultChangesSize = 100
	MaxChangesSize     = 1000
)

// ChangesRequest asks for the changes after a revision.
type ChangesRequest struct {
	// Since is the revision the client's projection is at: changes after it
	// are read. 0 reads every run id the store has ever seen.
	Since int64
	// Source, when set, is the store the client's Since comes from; another
	// store's is SOURCE_CHANGED.
	Source *string
	// First is how many changes to read; nil means DefaultChangesSize.
	First *int
}

// ChangeFeed is one batch of the change feed, read at the read's position.
type ChangeFeed struct {
	// Changes are in revision order, one per run id: its latest change.
	Changes []Change
	// NextRevision is what to pass as Since next: the last change's revision
	// when HasMore, else the position's revision, so that nothing committed
	// up to the position is ever read twice or missed.
	NextRevision int64
	// HasMore says that changes after NextRevision were already committed at
	// the position.
	HasMore bool
}

// Change is the latest change of one run id: its revision, and whether the
// run was deleted then (a tombstone). The run itself is read with Runs (or
// Load) in the same read, where it is observed or missing as of the
// position.
type Change struct {
	RunID    string
	Revision int64
	Deleted  bool
}

// selectChanges reads the change rows after a revision in revision order,
// one more than asked so that hasMore needs no second look. The unique index
// on revision makes it a range scan; the upper bound is the position, which
// a snapshot never sees past anyway.
func selectChanges(d store.Dialect) string {
	return `SELECT run_id, revision, deleted FROM flows_run_changes
WHERE revision > ` + d.Bound(1) + ` AND revision <= ` + d.Bound(2) + `
ORDER BY revision
LIMIT $3`
}

// selectScopedChanges is selectChanges for a principal whose scope is not
// every run: only the live runs in scope, a tombstone having no flow to
// check (docs/contract.md#scopes). The walk of the revision range skips
// the changes out of scope, so a batch may read past more rows than it
// returns; nextRevision keeps its meaning.
func selectScopedChanges(d store.Dialect, scope access.Scope, args []any) (string, []any) {
	term := scopeTerms(d, scope, nil, func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("$%d", len(args))
	}).term
	if scope.None() {
		term = "1 = 0"
	}
	return `SELECT c.run_id, c.revision, c.deleted FROM flows_run_changes c
JOIN flows_runs r ON r.run_id = c.run_id
WHERE c.revision > ` + d.Bound(1) + ` AND c.revision <= ` + d.Bound(2) + `
  AND ` + term + `
ORDER BY c.revision
LIMIT $3`, args
}

// Changes reads the run ids whose latest change is after req.Since, in
// revision order, in the read carried by ctx (or a read of its own). Run ids
// appear once each, at their latest revision, deleted ones included. It
// fails with BAD_USER_INPUT for a page size outside 1..MaxChangesSize or a
// negative Since, SOURCE_CHANGED when req.Source is not this store's or
// Since is beyond the store's revision (the store was replaced or restored:
// the client must resync), PERSISTENCE_FAILED or TIMEOUT as any read.
func (r *Reader) Changes(ctx context.Context, req ChangesRequest) (*ChangeFeed, error) {
	size := DefaultChangesSize
	if req.First != nil {
		if *req.First < 1 || *req.First > MaxChangesSize {
			return nil, fault.Errorf(fault.BadUserInput, "first must be between 1 and %d, got %d", MaxChangesSize, *req.First)
		}
		size = *req.First
	}
	if req.Since < 0 || req.Since > vocab.MaxSafe {
		return nil, fault.Errorf(fault.BadUserInput, "since must be an integer in 0..2^53-1")
	}
	return readWith(ctx, r, func(q *querier) (*ChangeFeed, error) { return q.changes(req, size) })
}

func (q *querier) changes(req ChangesRequest, size int) (*ChangeFeed, error) {
	pos, err := q.position()
	if err != nil {
		return nil, err
	}
	if req.Source != nil && *req.Source != pos.Source {
		return nil, fault.Errorf(fault.SourceChanged, "source %s is not this store's (%s): resync from revision 0", vocab.Quote(*req.Source), pos.Source)
	}
	if req.Since > pos.Revision {
		return nil, fault.Errorf(fault.SourceChanged, "since %d is beyond this store's revision %d: the store was replaced or restored, resync from revision 0", req.Since, pos.Revision)
	}
	sql, args := selectChanges(q.dialect()), []any{req.Since, pos.Revision, size + 1}
	if scope := scopeOf(q.ctx); !scope.All {
		sql, args = selectScopedChanges(q.dialect(), scope, args)
	}
	rows, err := q.query(sql, args...)
	if err != nil {
		return nil, persistence(err, "reading changes")
	}
	defer rows.Close()
	feed := &ChangeFeed{Changes: make([]Change, 0, min(size, 128))}
	for rows.Next() {
		var id string
		var rev, deleted int64
		if err := rows.Scan(&id, &rev, &deleted); err != nil {
			return nil, persistence(err, "reading changes")
		}
		if len(feed.Changes) == size {
			feed.HasMore = true
			continue
		}
		if rev <= req.Since || rev > pos.Revision || (deleted != 0 && deleted != 1) || !vocab.ValidID(id) {
			return nil, fault.Errorf(fault.DecodeFailed, "the change row of run %s is malformed", vocab.Quote(id))
		}
		feed.Changes = append(feed.Changes, Change{RunID: id, Revision: rev, Deleted: deleted == 1})
	}
	if err := rows.Err(); err != nil {
		return nil, persistence(err, "reading changes")
	}
	feed.NextRevision = pos.Revision
	if feed.HasMore {
		feed.NextRevision = feed.Changes[len(feed.Changes)-1].Revision
	}
	return feed, nil
}
