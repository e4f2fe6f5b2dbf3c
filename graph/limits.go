package graph

import (
	"context"
	"fmt"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/flowsnap/flowsnap/fault"
)

// shapeLimit refuses operations nested deeper than maxDepth fields or with
// more than maxAliases aliased fields, before anything is executed. The
// complexity limit bounds how much an operation reads; these bound how hard
// it is to plan, which complexity alone does not (a thousand aliases of a
// cheap field, or a query nested a hundred levels deep).
type shapeLimit struct {
	maxDepth, maxAliases int
}

var (
	_ graphql.HandlerExtension        = shapeLimit{}
	_ graphql.OperationContextMutator = shapeLimit{}
)

func (shapeLimit) ExtensionName() string { return "ShapeLimit" }

func (shapeLimit) Validate(graphql.ExecutableSchema) error { return nil }

func (l shapeLimit) MutateOperationContext(_ context.Context, rc *graphql.OperationContext) *gqlerror.Error {
	w := shapeWalk{visiting: map[string]bool{}}
	depth := w.depth(rc.Operation.SelectionSet)
	switch {
	case depth > l.maxDepth:
		return limitError("the operation is nested %d fields deep, more than the limit of %d", depth, l.maxDepth)
	case w.aliases > l.maxAliases:
		return limitError("the operation has %d aliased fields, more than the limit of %d", w.aliases, l.maxAliases)
	}
	return nil
}

func limitError(format string, args ...any) *gqlerror.Error {
	return &gqlerror.Error{
		Message:    fmt.Sprintf(format, args...),
		Extensions: map[string]any{"code": string(fault.ComplexityLimit)},
	}
}

type shapeWalk struct {
	aliases  int
	visiting map[string]bool // fragments on the current path; validation already refuses cycles
}

func (w *shapeWalk) depth(set ast.SelectionSet) int {
	deepest := 0
	for _, sel := range set {
		d := 0
		switch s := sel.(type) {
		case *ast.Field:
			if s.Alias != "" && s.Alias != s.Name {
				w.aliases++
			}
			d = 1 + w.depth(s.SelectionSet)
		case *ast.InlineFragment:
			d = w.depth(s.SelectionSet)
		case *ast.FragmentSpread:
			if s.Definition != nil && !w.visiting[s.Name] {
				w.visiting[s.Name] = true
				d = w.depth(s.Definition.SelectionSet)
				delete(w.visiting, s.Name)
			}
		}
		deepest = max(deepest, d)
	}
	return deepest
}
