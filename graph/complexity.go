package graph

import (
	"context"

	"github.com/flowsnap/flowsnap/access"
	"github.com/flowsnap/flowsnap/plan"
	"github.com/flowsnap/flowsnap/snapshot"
	"github.com/flowsnap/flowsnap/store/vocab"
)

// The cost of the fields that read many values: a page or a batch costs its
// size times its selection, so that the complexity limit bounds what an
// operation reads.

// setComplexity gives connections and batches their real cost: a page costs
// its size times its selection, a batch its length times its selection, and
// a list or count also the index entries it will walk (reader's cost model,
// docs/contract.md#cost-model; reader may be nil when no store is read).
func setComplexity(c *ComplexityRoot, reader *snapshot.Reader) {
	page := func(child int, first *int) int {
		n := snapshot.DefaultPageSize
		if first != nil && *first > 0 {
			n = *first
		}
		return 1 + n*max(child, 1)
	}
	c.Run.Children = func(child int, first *int, _ *string) int { return page(child, first) }
	c.Run.Rounds = func(child int, first *int, _ *string) int { return page(child, first) }
	c.Query.Runs = func(child int, ids []string) int { return BatchCost(child, len(ids)) }
	journalComplexity(c, page)
	findComplexity(c, reader)
	activityComplexity(c)
}

// journalComplexity gives the journal's connections and lists their real
// cost, as setComplexity does for children and rounds.
func journalComplexity(c *ComplexityRoot, page func(child int, first *int) int) {
	c.Run.Steps = func(child int, first *int, _ *string) int { return page(child, first) }
	c.Run.InboundEvents = func(child int, first *int, _ *string) int { return page(child, first) }
	c.Run.Events = func(child int, first *int, _ *string) int { return page(child, first) }
	c.RunStep.Attempts = func(child int, last *int) int {
		n := snapshot.DefaultLastAttempts
		if last != nil && *last > 0 {
			n = *last
		}
		return 1 + n*child
	}
}

// findComplexity gives the change feed and the run lists their real cost: a
// batch or page costs its size times its selection, and a list or a count
// the index entries it walks beyond what it returns (snapshot.ScanOf): the
// change feed's walk stops after its page, a list's or count's only when
// its index serves every term of its filter.
func findComplexity(c *ComplexityRoot, reader *snapshot.Reader) {
	// An event of the changes subscription is a batch of up to
	// changesBatch changes: it costs what the query of that page does, so
	// that the complexity limit bounds every event as it bounds a query.
	c.Subscription.Changes = func(child int, _ int64, _ *string) int {
		return 1 + changesBatch*child
	}
	c.Query.Changes = func(child int, _ int64, _ *string, first *int) int {
		n := snapshot.DefaultChangesSize
		if first != nil && *first > 0 {
			n = *first
		}
		return 1 + n*child
	}
	c.Query.ListRuns = func(child int, filter *snapshot.RunFilter, order *snapshot.RunOrder, first *int, _ *string) int {
		return listCost(reader, child, filter, order, first)
	}
	// A count reads up to upTo index entries per branch (a hundred of them
	// cost what one run does), or its whole range when its index cannot
	// serve its filter.
	c.Query.CountRuns = func(child int, filter *snapshot.RunFilter, upTo *int64) int {
		return countRunsCost(reader, filter, upTo)
	}
	// runStats is one bounded count per status it counts
	// (docs/contract.md#ops-api).
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

// listCost is the cost of listRuns, for a principal of scope (none given:
// every run).
func listCost(reader *snapshot.Reader, child int, filter *snapshot.RunFilter, order *snapshot.RunOrder, first *int, scope ...access.Scope) int {
	n := snapshot.DefaultPageSize
	if first != nil && *first > 0 {
		n = *first
	}
	var f snapshot.RunFilter
	if filter != nil {
		f = *filter
	}
	o := snapshot.NewestFirst
	if order != nil {
		o = *order
	}
	return reader.ListCost(f, o, n, child, scope...)
}

// countRunsCost is the cost of countRuns, for a principal of scope (none
// given: every run).
func countRunsCost(reader *snapshot.Reader, filter *snapshot.RunFilter, upTo *int64, scope ...access.Scope) int {
	f, n := plan.CountArgs(filter, upTo)
	return reader.CountCost(f, min(max(n, 0), snapshot.MaxCountUpTo), scope...)
}

// scopedCost is the schema with the cost of lists and counts for the
// principal of the operation's context (docs/contract.md#scopes): a scope
// changes the ranges a list walks, and gqlgen's complexity functions are
// not given the context.
type scopedCost struct {
	*executableSchema
	reader *snapshot.Reader
}

// Complexity is the schema's, but for listRuns and countRuns of a principal
// whose scope is not every run.
func (s scopedCost) Complexity(ctx context.Context, typeName, field string, child int, raw map[string]any) (int, bool) {
	if scope := access.FromContext(ctx).Scope(); !scope.All && typeName == "Query" && (field == "listRuns" || field == "countRuns") {
		ec := newExecutionContext(nil, s.executableSchema, nil)
		if field == "listRuns" {
			args, err := ec.field_Query_listRuns_args(ctx, raw)
			if err != nil {
				return 0, false
			}
			return listCost(s.reader, child, args["filter"].(*snapshot.RunFilter), args["order"].(*snapshot.RunOrder), args["first"].(*int), scope), true
		}
		args, err := ec.field_Query_countRuns_args(ctx, raw)
		if err != nil {
			return 0, false
		}
		return countRunsCost(s.reader, args["filter"].(*snapshot.RunFilter), args["upTo"].(*int64), scope), true
	}
	return s.executableSchema.Complexity(ctx, typeName, field, child, raw)
}

// countCost is what a count up to upTo costs.
func countCost(upTo *int64) int {
	n := int64(snapshot.DefaultCountUpTo)
	if upTo != nil && *upTo > 0 {
		n = *upTo
	}
	return 1 + int(min(n, snapshot.MaxCountUpTo)/100)
}

// BatchCost is the cost of a batch of n runs with a selection costing
// child: each element is read, whatever its selection, so it costs at
// least 1.
func BatchCost(child, n int) int { return 1 + n*max(child, 1) }
