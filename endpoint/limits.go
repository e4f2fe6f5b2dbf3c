package endpoint

import (
	"context"
	"strings"

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
// The operation's selection set is walked once for all of them, and for the
// least revision its arguments ask for (operationWalk).
type shapeLimit struct {
	es   graphql.ExecutableSchema
	opts Options
	// source is the store's source once known, so that a cursor of
	// another store is not taken for a minimum revision (argumentRevision).
	source func() string
	// plain are the fields whose cost the walk knows without asking
	// (plainCosts).
	plain map[*ast.FieldDefinition]bool
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
	w := operationWalk{ctx: ctx, es: l.es, schema: l.es.Schema(), vars: rc.Variables, fragments: map[string]*measure{}, plain: l.plain}
	if l.source != nil {
		w.source = l.source()
	}
	m := w.set(rc.Operation.SelectionSet)
	rc.Stats.SetExtension(minRevisionKey, m.minRevision)
	switch {
	case m.depth > l.opts.MaxDepth:
		return refuse(ctx, "depth", "the operation is nested %d fields deep, more than the limit of %d", m.depth, l.opts.MaxDepth)
	case m.aliases > l.opts.MaxAliases:
		return refuse(ctx, "size", "the operation has %d aliased fields, more than the limit of %d", m.aliases, l.opts.MaxAliases)
	}
	cost := Cost{Requested: m.cost, Limit: l.opts.ComplexityLimit}
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

// measure is what the walk of a selection set finds: how deeply its fields
// nest, its aliased fields, its cost, and the least revision its cursors
// and change feeds ask for (see minRevision).
type measure struct {
	depth, aliases, cost int
	minRevision          int64
}

// operationWalk is the one walk of a validated operation's selection set,
// made once per operation before anything executes. Each fragment is
// measured once and its measure reused at every spread of it, so a chain of
// fragments each spreading the next twice costs its length, not two to the
// power of it; a fragment spread inside itself (a cycle, which validation
// refuses) measures nothing.
//
// Cost counts data fields as the schema's complexity functions say
// (connections first × their selection); meta-fields (__typename,
// introspection) cost nothing, though their depth and aliases count.
type operationWalk struct {
	// source is the store's source, or "" while unknown.
	source string
	ctx    context.Context
	es     graphql.ExecutableSchema
	schema *ast.Schema
	vars   map[string]any
	// fragments holds each fragment's measure once made; nil while it is
	// being made.
	fragments map[string]*measure
	// plain are the fields that cost 1 + their selection (plainCosts).
	plain map[*ast.FieldDefinition]bool
}

func (w *operationWalk) set(set ast.SelectionSet) measure {
	var out measure
	for _, sel := range set {
		var m measure
		switch x := sel.(type) {
		case *ast.Field:
			m = w.field(x)
		case *ast.InlineFragment:
			m = w.set(x.SelectionSet)
		case *ast.FragmentSpread:
			if x.Definition == nil {
				continue
			}
			f, ok := w.fragments[x.Name]
			if !ok {
				w.fragments[x.Name] = nil
				made := w.set(x.Definition.SelectionSet)
				f = &made
				w.fragments[x.Name] = f
			}
			if f == nil {
				continue
			}
			m = *f
		}
		out.depth = max(out.depth, m.depth)
		out.aliases = safeAdd(out.aliases, m.aliases)
		out.cost = safeAdd(out.cost, m.cost)
		out.minRevision = max(out.minRevision, m.minRevision)
	}
	return out
}

func (w *operationWalk) field(f *ast.Field) measure {
	m := w.set(f.SelectionSet)
	child := m.cost
	m.depth++
	if f.Alias != "" && f.Alias != f.Name {
		m.aliases = safeAdd(m.aliases, 1)
	}
	m.minRevision = max(m.minRevision, argumentRevision(f, w.vars, w.source))
	m.cost = 0
	if len(f.Name) >= 2 && f.Name[:2] == "__" || f.Definition == nil || f.ObjectDefinition == nil {
		return m
	}
	var args map[string]any
	if len(f.Definition.Arguments) == 0 {
		if w.plain[f.Definition] {
			// Most fields: the complexity function would be asked only
			// to say it has nothing to say.
			m.cost = safeAdd(1, child)
			return m
		}
	} else {
		// A field without arguments has no use for a map of them, which
		// every field would otherwise allocate.
		args = f.ArgumentMap(w.vars)
		if cost, ok := argCosts[fieldKey{f.ObjectDefinition.Name, f.Name}]; ok {
			if c, ok := cost(child, args); ok {
				m.cost = c
				return m
			}
		}
	}
	owners := []*ast.Definition{f.ObjectDefinition}
	if f.ObjectDefinition.Kind == ast.Interface || f.ObjectDefinition.Kind == ast.Union {
		owners = w.schema.GetPossibleTypes(f.ObjectDefinition)
	}
	for _, t := range owners {
		c, ok := w.es.Complexity(w.ctx, t.Name, f.Name, child, args)
		if !ok || c < 1 {
			c = safeAdd(1, child)
		}
		m.cost = max(m.cost, c)
	}
	return m
}

// fieldKey names a field of a type, without a string made of the two for
// every field of every operation.
type fieldKey struct{ typ, field string }

// argCosts are the costs of fields, keyed by type and field, that are computed
// from the arguments as the operation holds them, where the generated
// complexity function would first unmarshal them: for a batch of ids, a
// path and a context per id, as much as the rest of the cost walk. Each
// gives what its function in setComplexity gives; false leaves the field
// to that function.
var argCosts = map[fieldKey]func(child int, args map[string]any) (int, bool){
	{"Query", "runs"}: func(child int, args map[string]any) (int, bool) {
		ids, ok := args["ids"].([]any)
		return graph.BatchCost(child, len(ids)), ok
	},
}

// plainCosts are the fields of es's object types, by their definition in
// its schema (which a validated operation's fields point to), that take no
// arguments and that no complexity function prices: each costs 1 plus its
// selection, which the walk adds up without calling es.Complexity (a
// context look-up, a string made of the two names and a switch per field).
// Whether a field has a complexity function does not change while the
// schema serves, so es is asked once, here.
func plainCosts(es graphql.ExecutableSchema) map[*ast.FieldDefinition]bool {
	plain := map[*ast.FieldDefinition]bool{}
	for _, t := range es.Schema().Types {
		if t.Kind != ast.Object {
			continue
		}
		for _, f := range t.Fields {
			if len(f.Arguments) > 0 || strings.HasPrefix(f.Name, "__") {
				continue
			}
			if _, priced := es.Complexity(context.Background(), t.Name, f.Name, 0, nil); !priced {
				plain[f] = true
			}
		}
	}
	return plain
}

// safeAdd adds two non-negative costs, saturating instead of overflowing.
func safeAdd(a, b int) int {
	if c := a + b; c >= a {
		return c
	}
	return int(^uint(0) >> 1)
}
