package graph

import (
	"context"

	"github.com/99designs/gqlgen/graphql"

	"github.com/flowsnap/flowsnap/snapshot"
)

// prefetchPage primes the loaders with a page's runs and reads ahead what
// the query asks below them, as the root run fields do.
func prefetchPage(ctx context.Context, page *snapshot.Page) {
	l, oc := loadersFrom(ctx), graphql.GetOperationContext(ctx)
	if l == nil || oc == nil {
		return
	}
	var runs []*snapshot.Run
	for _, e := range page.Edges {
		l.prime(e.RunID, e.Node)
		if run, ok := e.Node.Snapshot.(*snapshot.Run); ok {
			runs = append(runs, run)
		}
	}
	p := prefetcher{ctx: ctx, oc: oc, l: l}
	p.level(connectionWork(oc, graphql.GetFieldContext(ctx).Field.Selections, runs))
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
