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
	reads := l.p.mayRead(oc, f)
	if page != nil {
		if reads {
			// The page's runs and as many parents, at most, without the
			// loader's map growing past the runs on the way.
			l.runs.reserve(2 * len(page.Edges))
		}
		l.runs.primeMany(len(page.Edges), func(i int) (string, snapshot.Snapshot, error) {
			e := &page.Edges[i]
			return e.RunID, e.Node.Value, e.Node.Err
		})
	}
	if !reads {
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
				l.runs.read(ctx, parentKeysOf(len(page.Edges), func(i int) snapshot.Snapshot { return page.Edges[i].Node.Value }))
			}
			return
		}
	}
	if feed, _ := v.(*snapshot.ChangeFeed); feed != nil {
		if parents, only := l.p.feedReadsRunsOnly(oc, f); only {
			// Nothing below reads but the changes' runs and their parents
			// (an every-field selection of the feed): two gets, the same
			// keys and waves as the walk's, without it.
			ids := make([]string, len(feed.Changes))
			for i, c := range feed.Changes {
				ids[i] = c.RunID
			}
			if parents {
				l.runs.reserve(2 * len(ids))
			}
			runs, _ := l.runs.get(ctx, ids)
			if parents {
				l.runs.read(ctx, parentKeysOf(len(runs), func(i int) snapshot.Snapshot { return runs[i] }))
			}
			return
		}
	}
	l.walkFrom(ctx, oc, level{sel: f.Selections, objs: []any{v}}, false)
}

// parentKeysOf are the parents of n snapshots, at(i) each, that are runs
// with one: the keys of Run.parent on them (parentKeys), a parent shared
// by runs next to each other once.
func parentKeysOf(n int, at func(i int) snapshot.Snapshot) []string {
	keys := make([]string, 0, n)
	for i := range n {
		run, ok := at(i).(*snapshot.Run)
		if !ok || run == nil || run.ExecutionParentID == nil {
			continue
		}
		if p := *run.ExecutionParentID; len(keys) == 0 || keys[len(keys)-1] != p {
			keys = append(keys, p)
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
