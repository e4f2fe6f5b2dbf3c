package endpoint

import (
	"context"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/flowsnap/flowsnap/graph"
)

// shapeLimit refuses, after validation and before anything is executed,
// operations nested deeper than maxDepth fields, with more than maxAliases
// aliased fields, or costing more than complexityLimit. The complexity limit
// bounds how much an operation reads; depth and aliases bound how hard it is
// to plan, which complexity alone does not (a thousand aliases of a cheap
// field, or a query nested a hundred levels deep).
//
// Each walk measures a fragment once and reuses the result at every spread
// of it, so a chain of fragments each spreading the next twice costs its
// length, not two to the power of it.
type shapeLimit struct {
	es   graphql.ExecutableSchema
	opts Options
}

var (
	_ graphql.HandlerExtension        = shapeLimit{}
	_ graphql.OperationContextMutator = shapeLimit{}
)

func (shapeLimit) ExtensionName() string { return "ShapeLimit" }

func (shapeLimit) Validate(graphql.ExecutableSchema) error { return nil }

// costKey holds an operation's *Cost in its operation context's stats.
const costKey = "flowsnap.cost"

// Cost is what an operation cost beside its limit, reported in
// extensions.cost of every response.
type Cost struct {
	Requested int `json:"requested"`
	Limit     int `json:"limit"`
}

func (l shapeLimit) MutateOperationContext(ctx context.Context, rc *graphql.OperationContext) *gqlerror.Error {
	if ctx.Err() != nil {
		return timeoutError(ctx, l.opts)
	}
	w := shapeWalk{fragments: map[string]shape{}}
	s := w.shape(rc.Operation.SelectionSet)
	switch {
	case s.depth > l.opts.MaxDepth:
		return refuse(ctx, "depth", "the operation is nested %d fields deep, more than the limit of %d", s.depth, l.opts.MaxDepth)
	case s.aliases > l.opts.MaxAliases:
		return refuse(ctx, "size", "the operation has %d aliased fields, more than the limit of %d", s.aliases, l.opts.MaxAliases)
	}
	cw := costWalk{ctx: ctx, es: l.es, schema: l.es.Schema(), vars: rc.Variables, fragments: map[string]int{}}
	cost := Cost{Requested: cw.set(rc.Operation.SelectionSet), Limit: l.opts.ComplexityLimit}
	rc.Stats.SetExtension(costKey, &cost)
	if cost.Requested > cost.Limit {
		err := refuse(ctx, "complexity", "the operation costs %d, more than the limit of %d", cost.Requested, cost.Limit)
		err.Extensions["cost"] = cost
		return err
	}
	return nil
}

// costOf returns the cost computed for the operation of ctx, if any.
func costOf(ctx context.Context) (Cost, bool) {
	if !graphql.HasOperationContext(ctx) {
		return Cost{}, false
	}
	c, ok := graphql.GetOperationContext(ctx).Stats.GetExtension(costKey).(*Cost)
	if !ok {
		return Cost{}, false
	}
	return *c, true
}

type shape struct{ depth, aliases int }

type shapeWalk struct {
	// fragments holds each fragment's shape once measured; a fragment on
	// the current path is marked with depth -1 (a cycle, which validation
	// already refuses).
	fragments map[string]shape
}

func (w *shapeWalk) shape(set ast.SelectionSet) shape {
	var out shape
	for _, sel := range set {
		var s shape
		switch x := sel.(type) {
		case *ast.Field:
			s = w.shape(x.SelectionSet)
			s.depth++
			if x.Alias != "" && x.Alias != x.Name {
				s.aliases = safeAdd(s.aliases, 1)
			}
		case *ast.InlineFragment:
			s = w.shape(x.SelectionSet)
		case *ast.FragmentSpread:
			if x.Definition == nil {
				continue
			}
			m, ok := w.fragments[x.Name]
			if !ok {
				w.fragments[x.Name] = shape{depth: -1}
				m = w.shape(x.Definition.SelectionSet)
				w.fragments[x.Name] = m
			}
			if m.depth < 0 {
				continue
			}
			s = m
		}
		out.depth = max(out.depth, s.depth)
		out.aliases = safeAdd(out.aliases, s.aliases)
	}
	return out
}

// costWalk computes an operation's complexity: data fields cost what the
// schema's complexity functions say (connections first × their selection),
// meta-fields (__typename, introspection) cost nothing, and each fragment
// is costed once.
type costWalk struct {
	ctx       context.Context
	es        graphql.ExecutableSchema
	schema    *ast.Schema
	vars      map[string]any
	fragments map[string]int
}

func (w *costWalk) set(set ast.SelectionSet) int {
	total := 0
	for _, sel := range set {
		switch s := sel.(type) {
		case *ast.Field:
			total = safeAdd(total, w.field(s))
		case *ast.InlineFragment:
			total = safeAdd(total, w.set(s.SelectionSet))
		case *ast.FragmentSpread:
			if s.Definition == nil {
				continue
			}
			c, ok := w.fragments[s.Name]
			if !ok {
				w.fragments[s.Name] = 0 // a cycle costs nothing; validation refuses it
				c = w.set(s.Definition.SelectionSet)
				w.fragments[s.Name] = c
			}
			total = safeAdd(total, c)
		}
	}
	return total
}

func (w *costWalk) field(f *ast.Field) int {
	if len(f.Name) >= 2 && f.Name[:2] == "__" || f.Definition == nil || f.ObjectDefinition == nil {
		return 0
	}
	child := 0
	if len(f.SelectionSet) > 0 {
		child = w.set(f.SelectionSet)
	}
	var args map[string]any
	if len(f.Definition.Arguments) > 0 {
		// A field without arguments has no use for a map of them, which
		// every field would otherwise allocate.
		args = f.ArgumentMap(w.vars)
	}
	owners := []*ast.Definition{f.ObjectDefinition}
	if f.ObjectDefinition.Kind == ast.Interface || f.ObjectDefinition.Kind == ast.Union {
		owners = w.schema.GetPossibleTypes(f.ObjectDefinition)
	}
	if cost, ok := argCosts[f.ObjectDefinition.Name+"."+f.Name]; ok {
		if c, ok := cost(child, args); ok {
			return c
		}
	}
	worst := 0
	for _, t := range owners {
		c, ok := w.es.Complexity(w.ctx, t.Name, f.Name, child, args)
		if !ok || c < 1 {
			c = safeAdd(1, child)
		}
		worst = max(worst, c)
	}
	return worst
}

// argCosts are the costs of fields, keyed "Type.field", that are computed
// from the arguments as the operation holds them, where the generated
// complexity function would first unmarshal them: for a batch of ids, a
// path and a context per id, as much as the rest of the cost walk. Each
// gives what its function in setComplexity gives; false leaves the field
// to that function.
var argCosts = map[string]func(child int, args map[string]any) (int, bool){
	"Query.runs": func(child int, args map[string]any) (int, bool) {
		ids, ok := args["ids"].([]any)
		return graph.BatchCost(child, len(ids)), ok
	},
}

// safeAdd adds two non-negative costs, saturating instead of overflowing.
func safeAdd(a, b int) int {
	if c := a + b; c >= a {
		return c
	}
	return int(^uint(0) >> 1)
}
