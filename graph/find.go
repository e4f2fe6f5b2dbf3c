package graph

import (
	"context"

	"github.com/99designs/gqlgen/graphql"

	"github.com/flowsnap/flowsnap/snapshot"
)

// readAheadBelow reads ahead, as readAhead does from the root, what the
// selection of the field being resolved asks below v (a page of listRuns,
// the feed of changes), whose own read was not a loader's.
func readAheadBelow(ctx context.Context, v any) {
	l, oc, fc := loadersFrom(ctx), graphql.GetOperationContext(ctx), graphql.GetFieldContext(ctx)
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

// findComplexity gives the change feed and the run lists their real cost: a
// batch or page costs its size times its selection.
func findComplexity(c *ComplexityRoot) {
	c.Query.Changes = func(child int, _ int64, _ *string, first *int) int {
		n := snapshot.DefaultChangesSize
		if first != nil && *first > 0 {
			n = *first
		}
		return 1 + n*child
	}
	c.Query.ListRuns = func(child int, _ *snapshot.RunFilter, _ *snapshot.RunOrder, first *int, _ *string) int {
		n := snapshot.DefaultPageSize
		if first != nil && *first > 0 {
			n = *first
		}
		return 1 + n*child
	}
	// A count reads up to upTo index entries: a hundred of them cost what
	// one run does.
	c.Query.CountRuns = func(child int, _ *snapshot.RunFilter, upTo *int64) int {
		n := int64(snapshot.DefaultCountUpTo)
		if upTo != nil && *upTo > 0 {
			n = *upTo
		}
		return 1 + int(min(n, snapshot.MaxCountUpTo)/100)
	}
}
