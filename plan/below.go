package plan

import (
	"context"

	"github.com/99designs/gqlgen/graphql"

	"github.com/flowsnap/flowsnap/snapshot"
)

// readBelow reads ahead, as the read-ahead does from the root, what f, a
// root field, selects below v (a page of listRuns, the feed of changes),
// whose own read was not a loader's.
func (l *loaders) readBelow(ctx context.Context, oc *graphql.OperationContext, f graphql.CollectedField, v any) {
	if page, ok := v.(*snapshot.Page); ok && page != nil {
		for _, e := range page.Edges {
			l.runs.prime(e.RunID, e.Node.Value, e.Node.Err)
		}
	}
	if !l.p.mayRead(oc, f) {
		// Nothing below reads: the walk would only box every edge and
		// run of the page to find so.
		return
	}
	l.walkFrom(ctx, oc, level{sel: f.Selections, objs: []any{v}}, false)
}

// changeRunKeys are the keys of Change.run: the changed runs' ids.
func changeRunKeys(objs []*snapshot.Change) []string {
	ids := make([]string, len(objs))
	for i, c := range objs {
		ids[i] = c.RunID
	}
	return ids
}
