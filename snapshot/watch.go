package snapshot

import (
	"context"
)

// RunChange is one row of the store's change log (flows_run_changes): the
// latest revision of a run id and whether the run was deleted by then.
type RunChange struct {
	RunID    string
	Revision int64
	Deleted  bool
}

const selectRunChangesAfter = `SELECT run_id, revision, deleted FROM flows_run_changes
WHERE revision > $1 ORDER BY revision LIMIT $2`

// RunChangesAfter reads, in the read carried by ctx, the run ids whose
// latest change is after revision after, in revision order, at most limit
// of them. It is one statement, served by the unique index on revision.
// more reports that the limit cut the list short; the caller continues from
// the last change's revision.
func (r *Reader) RunChangesAfter(ctx context.Context, after int64, limit int) (changes []RunChange, more bool, err error) {
	err = r.with(ctx, func(q *querier) error {
		rows, err := q.query(selectRunChangesAfter, after, limit+1)
		if err != nil {
			return persistence(err, "reading the change log")
		}
		defer rows.Close()
		for rows.Next() {
			var c RunChange
			var deleted int64
			if err := rows.Scan(&c.RunID, &c.Revision, &deleted); err != nil {
				return persistence(err, "reading the change log")
			}
			c.Deleted = deleted != 0
			changes = append(changes, c)
		}
		if err := rows.Err(); err != nil {
			return persistence(err, "reading the change log")
		}
		return nil
	})
	if len(changes) > limit {
		changes, more = changes[:limit], true
	}
	return changes, more, err
}
