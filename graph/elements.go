package graph

import (
	"context"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
)

// elements returns the values of a list whose elements may each have
// failed: a failed element is reported at its own path and is null, and
// the rest of the list stands.
func elements[E, V any](ctx context.Context, list []E, each func(E) (V, error)) []V {
	out := make([]V, len(list))
	for i, e := range list {
		v, err := each(e)
		if err != nil {
			path := append(ast.Path{}, graphql.GetPath(ctx)...)
			graphql.AddError(ctx, &gqlerror.Error{Path: append(path, ast.PathIndex(i)), Err: err, Message: err.Error()})
			continue
		}
		out[i] = v
	}
	return out
}
