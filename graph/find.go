package graph

import (
	"context"

	"github.com/99designs/gqlgen/graphql"

	"github.com/flowsnap/flowsnap/snapshot"
	"github.com/flowsnap/flowsnap/store/vocab"
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
		return countCost(upTo)
	}
	// runStats is one bounded count per status it counts.
	c.Query.RunStats = func(child int, filter *snapshot.RunFilter, upTo *int64) int {
		var statuses []vocab.Status
		if filter != nil {
			statuses = filter.Status
		}
		return max(1, len(snapshot.StatsStatuses(statuses))*countCost(upTo))
	}
	// A page of flow names costs an index seek per name.
	c.Query.Flows = func(child int, first *int, _ *string, _ *string) int {
		n := snapshot.DefaultPageSize
		if first != nil && *first > 0 {
			n = *first
		}
		return 1 + n
	}
}

// countArgs are a count's arguments with their defaults: no filter, and
// DefaultCountUpTo.
func countArgs(filter *snapshot.RunFilter, upTo *int64) (snapshot.RunFilter, int64) {
	var f snapshot.RunFilter
	if filter != nil {
		f = *filter
	}
	n := int64(snapshot.DefaultCountUpTo)
	if upTo != nil {
		n = *upTo
	}
	return f, n
}

// countCost is what a count up to upTo costs.
func countCost(upTo *int64) int {
	n := int64(snapshot.DefaultCountUpTo)
	if upTo != nil && *upTo > 0 {
		n = *upTo
	}
	return 1 + int(min(n, snapshot.MaxCountUpTo)/100)
}
