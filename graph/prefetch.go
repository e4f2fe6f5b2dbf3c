package graph

import (
	"context"
	"encoding/json"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/flowsnap/flowsnap/snapshot"
)

// prefetch reads ahead what the query will ask of runs, level by level, so
// that an operation runs a number of statements set by its shape alone.
//
// gqlgen resolves the fields of list elements in goroutines of their own,
// and the loaders merge what those goroutines ask for only when it arrives
// within the loaders' wait; the rounds of the children of a hundred pages
// straggle in over many milliseconds on a busy machine, and would be read in
// several batches. Looking at the selection instead, prefetch loads every
// page and parent the next level needs in one batch per field, then follows
// the selection down into what it loaded. The resolvers then find all of it
// in the loaders' caches. Anything prefetch misses (a shape it does not
// follow) is still read correctly by the resolvers, only in more batches.
func prefetch(ctx context.Context, sel ast.SelectionSet, runs []*snapshot.Run) {
	oc := graphql.GetOperationContext(ctx)
	l := loadersFrom(ctx)
	if oc == nil || l == nil {
		return
	}
	p := prefetcher{ctx: ctx, oc: oc, l: l}
	p.level([]work{{sel: sel, runs: runs}})
}

type prefetcher struct {
	ctx context.Context
	oc  *graphql.OperationContext
	l   *loaders
}

// work is a selection on Snapshot (or Run) to apply to runs.
type work struct {
	sel  ast.SelectionSet
	runs []*snapshot.Run
}

var runTypes = []string{"Run", "Snapshot"}

// level loads what every item of todo selects below it, then goes one level
// down.
func (p prefetcher) level(todo []work) {
	for len(todo) > 0 {
		var next []work
		for _, w := range todo {
			if len(w.runs) == 0 {
				continue
			}
			for _, f := range graphql.CollectFields(p.oc, w.sel, runTypes) {
				switch f.Name {
				case "parent":
					next = append(next, p.parents(f, w.runs))
				case "children", "rounds":
					next = append(next, p.pages(f, w.runs)...)
				case "steps", "currentStep", "inboundEvents", "events":
					p.journal(f, w.runs)
				}
			}
		}
		todo = next
	}
}

func (p prefetcher) parents(f graphql.CollectedField, runs []*snapshot.Run) work {
	var ids []string
	for _, r := range runs {
		if r.ExecutionParentID != nil {
			ids = append(ids, *r.ExecutionParentID)
		}
	}
	got, _ := p.l.runs.readAhead(p.ctx, ids, runsBatch)
	return work{sel: f.Selections, runs: onlyRuns(got)}
}

func (p prefetcher) pages(f graphql.CollectedField, runs []*snapshot.Run) []work {
	first, after, ok := pageArgs(f, p.oc.Variables)
	if !ok {
		return nil
	}
	keys := make([]pageKey, len(runs))
	for i, r := range runs {
		lineage := ""
		if f.Name == "rounds" {
			lineage = r.LineageID
		}
		keys[i] = newPageKey(r.ID, lineage, first, after)
	}
	loader := p.l.children
	if f.Name == "rounds" {
		loader = p.l.rounds
	}
	pages, _ := loader.readAhead(p.ctx, keys, pagesBatch)
	var nodes []snapshot.Snapshot
	for _, page := range pages {
		if page == nil {
			continue
		}
		for _, e := range page.Edges {
			nodes = append(nodes, e.Node.Snapshot)
		}
	}
	return connectionWork(p.oc, f.Selections, onlyRuns(nodes))
}

// connectionWork is what a selection on a RunConnection asks of its runs,
// which it selects through nodes and through edges { node }.
func connectionWork(oc *graphql.OperationContext, sel ast.SelectionSet, runs []*snapshot.Run) []work {
	var out []work
	for _, cf := range graphql.CollectFields(oc, sel, []string{"RunConnection"}) {
		switch cf.Name {
		case "nodes":
			out = append(out, work{sel: cf.Selections, runs: runs})
		case "edges":
			for _, ef := range graphql.CollectFields(oc, cf.Selections, []string{"RunEdge"}) {
				if ef.Name == "node" {
					out = append(out, work{sel: ef.Selections, runs: runs})
				}
			}
		}
	}
	return out
}

// pageArgs reads first and after as the resolver will get them; ok is false
// when they are not what the schema allows, which the resolver reports.
func pageArgs(f graphql.CollectedField, vars map[string]any) (first *int, after *string, ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	args := f.ArgumentMap(vars)
	if v, present := args["first"]; present && v != nil {
		n, isInt := toInt(v)
		if !isInt {
			return nil, nil, false
		}
		first = &n
	}
	if v, present := args["after"]; present && v != nil {
		s, isString := v.(string)
		if !isString {
			return nil, nil, false
		}
		after = &s
	}
	return first, after, true
}

func toInt(v any) (int, bool) {
	switch n := v.(type) {
	case int64:
		return int(n), true
	case int:
		return n, true
	case json.Number:
		i, err := n.Int64()
		return int(i), err == nil
	case float64:
		return int(n), n == float64(int(n))
	}
	return 0, false
}

func onlyRuns(snaps []snapshot.Snapshot) []*snapshot.Run {
	var out []*snapshot.Run
	for _, s := range snaps {
		if r, ok := s.(*snapshot.Run); ok {
			out = append(out, r)
		}
	}
	return out
}

// rootRunIDs returns the ids of every root run field of the operation, so
// that the first of them to resolve reads them all in one statement, instead
// of each waiting on the loader's window to be batched.
func rootRunIDs(ctx context.Context) []string {
	oc := graphql.GetOperationContext(ctx)
	if oc == nil || oc.Operation == nil {
		return nil
	}
	var ids []string
	for _, f := range graphql.CollectFields(oc, oc.Operation.SelectionSet, []string{"Query"}) {
		if f.Name != "run" && f.Name != "node" {
			continue
		}
		func() {
			defer func() { _ = recover() }() // malformed arguments are the resolver's to report
			if id, ok := f.ArgumentMap(oc.Variables)["id"].(string); ok && snapshot.CheckID(id) == nil {
				ids = append(ids, id)
			}
		}()
	}
	return ids
}
