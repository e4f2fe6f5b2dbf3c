package plan

import (
	"context"

	"github.com/99designs/gqlgen/graphql"

	"github.com/flowsnap/flowsnap/snapshot"
)

// ReadAheadBelow reads ahead, as the read-ahead does from the root, what
// the selection of the field being resolved asks below v (a page of
// listRuns, the feed of changes), whose own read was not a loader's.
func ReadAheadBelow(ctx context.Context, v any) {
	l, oc, fc := from(ctx), graphql.GetOperationContext(ctx), graphql.GetFieldContext(ctx)
	if l == nil || oc == nil || fc == nil {
		return
	}
	if page, ok := v.(*snapshot.Page); ok {
		for _, e := range page.Edges {
			l.runs.prime(e.RunID, e.Node.Value, e.Node.Err)
		}
	}
	l.walkFrom(ctx, oc, level{sel: fc.Field.Selections, objs: []any{v}}, false)
}

// changeRunKeys are the keys of Change.run: the changed runs' ids.
func changeRunKeys(objs []*snapshot.Change) []string {
	ids := make([]string, len(objs))
	for i, c := range objs {
		ids[i] = c.RunID
	}
	return ids
}
