package graph

import (
	"context"
	"fmt"

	"github.com/99designs/gqlgen/graphql"

	"github.com/flowsnap/flowsnap/plan"
)

// RootArgs returns the decoder of the arguments of Query's root fields that
// read by themselves, for es (NewSchema's): the generated unmarshalers the
// executor runs, so that the direct answer gets the values and errors the
// resolvers would (plan.Planner.WithRootArgs). It returns nil for a schema
// NewSchema did not make.
func RootArgs(es graphql.ExecutableSchema) plan.RootArgs {
	s, ok := es.(scopedCost)
	if !ok {
		return nil
	}
	return func(ctx context.Context, field string, raw map[string]any) (map[string]any, error) {
		ec := newExecutionContext(nil, s.executableSchema, nil)
		switch field {
		case "listRuns":
			return ec.field_Query_listRuns_args(ctx, raw)
		case "changes":
			return ec.field_Query_changes_args(ctx, raw)
		case "countRuns":
			return ec.field_Query_countRuns_args(ctx, raw)
		}
		return nil, fmt.Errorf("no decoder of the arguments of Query.%s", field)
	}
}
