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
	page, _ := v.(*snapshot.Page)
	if page != nil {
		l.runs.primeMany(len(page.Edges), func(i int) (string, snapshot.Snapshot, error) {
			e := &page.Edges[i]
			return e.RunID, e.Node.Value, e.Node.Err
		})
	}
	if !l.p.mayRead(oc, f) {
		// Nothing below reads: the walk would only box every edge and
		// run of the page to find so.
		return
	}
	if page != nil {
		if parents, only := l.p.readsParentsOnly(oc, f); only {
			// Nothing below reads but the parents of the page's runs (an
			// every-field selection of a list): those are the keys, with
			// no walk through the page field by field to find them.
			if parents {
				l.runs.read(ctx, pageParents(page))
			}
			return
		}
	}
	l.walkFrom(ctx, oc, level{sel: f.Selections, objs: []any{v}}, false)
}

// pageParents are the parents of page's runs, the keys of Run.parent on
// its nodes (parentKeys).
func pageParents(page *snapshot.Page) []string {
	keys := make([]string, 0, len(page.Edges))
	for _, e := range page.Edges {
		if run, ok := e.Node.Value.(*snapshot.Run); ok && run != nil && run.ExecutionParentID != nil {
			keys = append(keys, *run.ExecutionParentID)
		}
	}
	return keys
}

// changeRunKeys are the keys of Change.run: the changed runs' ids.
func changeRunKeys(objs []*snapshot.Change) []string {
	ids := make([]string, len(objs))
	for i, c := range objs {
		ids[i] = c.RunID
	}
	return ids
}
