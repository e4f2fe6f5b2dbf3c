package plan

import (
	"context"
	"errors"

	"github.com/99designs/gqlgen/graphql"

	"github.com/flowsnap/flowsnap/snapshot"
)

// What the resolvers of the fields that read ask: each builds its keys
// with the function the read-ahead uses for the field (readahead.go), so
// that it finds what was read ahead. Errors are per key, as gqlgen's batch
// resolvers want them: nil, or a graphql.BatchErrorList.

// Run is Query.run and Query.node: the run of id.
func Run(ctx context.Context, id string) (snapshot.Snapshot, error) {
	return readAhead(ctx).runs.one(ctx, id)
}

// Runs is Query.runs: the runs of keys, which RunsKeys checked.
func Runs(ctx context.Context, keys []string) ([]snapshot.Snapshot, error) {
	return readAhead(ctx).runs.get(ctx, keys)
}

// RunsKeys are the keys of Query.runs: its ids, at most snapshot.MaxBatch.
func RunsKeys(ids []string) ([]string, error) { return runsKeys(ids) }

// Parents is Run.parent of every run of objs.
func Parents(ctx context.Context, objs []*snapshot.Run) ([]snapshot.Snapshot, error) {
	keys, at := parentKeys(objs)
	got, err := from(ctx).runs.get(ctx, keys)
	return placeAt(got, err, at, len(objs))
}

// Children is Run.children of every run of objs.
func Children(ctx context.Context, objs []*snapshot.Run, first *int, after *string) ([]*snapshot.Page, error) {
	return from(ctx).pages.get(ctx, childrenKeys(objs, first, after))
}

// Rounds is Run.rounds of every run of objs.
func Rounds(ctx context.Context, objs []*snapshot.Run, first *int, after *string) ([]*snapshot.Page, error) {
	return from(ctx).pages.get(ctx, roundsKeys(objs, first, after))
}

// ChangedRuns is Change.run of every change of objs.
func ChangedRuns(ctx context.Context, objs []*snapshot.Change) ([]snapshot.Snapshot, error) {
	return from(ctx).runs.get(ctx, changeRunKeys(objs))
}

// Steps is Run.steps of every run of objs.
func Steps(ctx context.Context, objs []*snapshot.Run, first *int, after *string) ([]*snapshot.StepPage, error) {
	return from(ctx).journal().steps.get(ctx, journalPageKeys(objs, first, after))
}

// CurrentSteps is Run.currentStep of every run of objs.
func CurrentSteps(ctx context.Context, objs []*snapshot.Run) ([]snapshot.Step, error) {
	return from(ctx).journal().current.get(ctx, objs)
}

// InboundEvents is Run.inboundEvents of every run of objs.
func InboundEvents(ctx context.Context, objs []*snapshot.Run, first *int, after *string) ([]*snapshot.InboundEventPage, error) {
	return from(ctx).journal().inbound.get(ctx, journalPageKeys(objs, first, after))
}

// RunEvents is Run.events of every run of objs.
func RunEvents(ctx context.Context, objs []*snapshot.Run, first *int, after *string) ([]*snapshot.RunEventPage, error) {
	return from(ctx).journal().runEvents.get(ctx, journalPageKeys(objs, first, after))
}

// ParentSteps is parentStep of every step of objs, whatever their kind.
func ParentSteps[S snapshot.Step](ctx context.Context, objs []S) ([]snapshot.Step, error) {
	keys, at := parentStepKeys(objs)
	got, err := from(ctx).journal().step.get(ctx, keys)
	return placeAt(got, err, at, len(objs))
}

// Attempts is RunStep.attempts of step.
func Attempts(ctx context.Context, step snapshot.StepKey, last *int) ([]snapshot.Result[*snapshot.Attempt], error) {
	return from(ctx).journal().attempts.one(ctx, newAttemptsKey(step, last))
}

// placeAt places the values and per-key errors of a loader's get over a
// subset of n parents, at the indexes at, onto the list of n parents.
func placeAt[V any](got []V, err error, at []int, n int) ([]V, error) {
	out := make([]V, n)
	for k, i := range at {
		out[i] = got[k]
	}
	if err == nil {
		return out, nil
	}
	errs, of := make([]error, n), batchErrors(err)
	for k, i := range at {
		errs[i] = of(k)
	}
	return out, graphql.BatchErrorList(errs)
}

// batchErrors returns the error of element i of a loader's get, whose
// err is nil or a graphql.BatchErrorList.
func batchErrors(err error) func(i int) error {
	var list graphql.BatchErrorList
	if !errors.As(err, &list) {
		return func(int) error { return err }
	}
	return func(i int) error { return list[i] }
}
