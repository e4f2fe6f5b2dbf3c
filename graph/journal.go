package graph

import (
	"context"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/flowsnap/flowsnap/snapshot"
)

// journalLoaders batch the journal reads of one operation, as loaders do
// for runs and their pages: the pages of every run at one depth in one
// statement, the attempts of every step of those pages in one, and so on.
type journalLoaders struct {
	steps     *batcher[pageKey, *snapshot.StepPage]
	inbound   *batcher[pageKey, *snapshot.InboundEventPage]
	runEvents *batcher[pageKey, *snapshot.RunEventPage]
	// current is keyed by run rather than run id: whether a run is blocked
	// on a step at all depends on its status.
	current  *batcher[*snapshot.Run, snapshot.Step]
	step     *batcher[snapshot.StepKey, snapshot.Step]
	attempts *batcher[attemptsKey, []snapshot.AttemptResult]
}

// attemptsKey identifies one request for a step's attempts.
type attemptsKey struct {
	step    snapshot.StepKey
	last    int
	hasLast bool
}

func newAttemptsKey(step snapshot.StepKey, last *int) attemptsKey {
	k := attemptsKey{step: step}
	if last != nil {
		k.last, k.hasLast = *last, true
	}
	return k
}

// keysBatch is the batch capacity of loaders keyed by step or run: one
// statement reads any number of them, and the complexity limit bounds how
// many an operation asks for.
const keysBatch = 10_000

func newJournalLoaders(reader *snapshot.Reader, wait time.Duration) *journalLoaders {
	l := &journalLoaders{}
	l.steps = newBatcher(pageLoader(reader.StepPages, func(r snapshot.StepPageResult) (*snapshot.StepPage, error) {
		if r.Page != nil {
			for _, e := range r.Page.Edges {
				l.primeStep(e.Step)
			}
		}
		return r.Page, r.Err
	}), wait, pagesBatch)
	l.inbound = newBatcher(pageLoader(reader.InboundEventPages, func(r snapshot.InboundEventPageResult) (*snapshot.InboundEventPage, error) {
		return r.Page, r.Err
	}), wait, pagesBatch)
	l.runEvents = newBatcher(pageLoader(reader.RunEventPages, func(r snapshot.RunEventPageResult) (*snapshot.RunEventPage, error) {
		return r.Page, r.Err
	}), wait, pagesBatch)
	l.current = newBatcher(func(ctx context.Context, runs []*snapshot.Run) ([]snapshot.Step, []error) {
		res, err := reader.CurrentSteps(ctx, runs)
		return spread(len(runs), err, func(i int) (snapshot.Step, error) {
			l.primeStep(res[i].Step)
			return res[i].Step, res[i].Err
		})
	}, wait, keysBatch)
	l.step = newBatcher(func(ctx context.Context, keys []snapshot.StepKey) ([]snapshot.Step, []error) {
		res, err := reader.Steps(ctx, keys)
		return spread(len(keys), err, func(i int) (snapshot.Step, error) { return res[i].Step, res[i].Err })
	}, wait, keysBatch)
	l.attempts = newBatcher(func(ctx context.Context, keys []attemptsKey) ([][]snapshot.AttemptResult, []error) {
		steps, last := make([]snapshot.StepKey, len(keys)), make([]*int, len(keys))
		for i, k := range keys {
			steps[i] = k.step
			if k.hasLast {
				n := k.last
				last[i] = &n
			}
		}
		res, err := reader.Attempts(ctx, steps, last)
		return spread(len(keys), err, func(i int) ([]snapshot.AttemptResult, error) { return res[i].Attempts, res[i].Err })
	}, wait, keysBatch)
	return l
}

// pageLoader makes the batch function of a loader of journal pages from a
// batch read and what to make of each of its results.
func pageLoader[R, P any](read func(context.Context, []snapshot.PageRequest) ([]R, error), split func(R) (P, error)) func(context.Context, []pageKey) ([]P, []error) {
	return func(ctx context.Context, keys []pageKey) ([]P, []error) {
		reqs := make([]snapshot.PageRequest, len(keys))
		for i, k := range keys {
			reqs[i] = k.request()
		}
		res, err := read(ctx, reqs)
		return spread(len(keys), err, func(i int) (P, error) { return split(res[i]) })
	}
}

// spread makes the values and errors of a loader's batch of n keys: err
// for every key when the batch read failed, else what each gives.
func spread[V any](n int, err error, each func(i int) (V, error)) ([]V, []error) {
	out, errs := make([]V, n), make([]error, n)
	for i := range n {
		if err != nil {
			errs[i] = err
			continue
		}
		out[i], errs[i] = each(i)
	}
	return out, errs
}

// primeStep caches a step read in the operation's snapshot, so that the
// parent step of a step of a page (usually on the same page) costs no
// statement.
func (l *journalLoaders) primeStep(s snapshot.Step) {
	if s != nil {
		l.step.prime(s.Base().Key(), s)
	}
}

// parentStep loads the step that encloses s, nil for a top-level step.
func parentStep(ctx context.Context, s *snapshot.StepBase) (snapshot.Step, error) {
	if s.ParentStepID == nil {
		return nil, nil
	}
	return loadersFrom(ctx).journal.step.Load(ctx, snapshot.StepKey{RunID: s.RunID, StepID: *s.ParentStepID})
}

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

// journalPageKeys are the keys of the journal pages of runs.
func journalPageKeys(runs []*snapshot.Run, first *int, after *string) []pageKey {
	keys := make([]pageKey, len(runs))
	for i, run := range runs {
		keys[i] = newPageKey(run.ID, "", first, after)
	}
	return keys
}
