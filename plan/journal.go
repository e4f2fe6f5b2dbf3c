package plan

import (
	"context"

	"github.com/flowsnap/flowsnap/snapshot"
)

// journalLoaders read the journal of one operation, as loaders do for
// runs and their pages: the pages of every run at one depth in one
// statement, the attempts of every step of those pages in one, and so on.
type journalLoaders struct {
	steps     *loader[pageKey, *snapshot.StepPage]
	inbound   *loader[pageKey, *snapshot.InboundEventPage]
	runEvents *loader[pageKey, *snapshot.RunEventPage]
	// current is keyed by run rather than run id: whether a run is blocked
	// on a step at all depends on its status.
	current  *loader[*snapshot.Run, snapshot.Step]
	step     *loader[snapshot.StepKey, snapshot.Step]
	attempts *loader[attemptsKey, []snapshot.Result[*snapshot.Attempt]]
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

func newJournalLoaders(reader *snapshot.Reader) *journalLoaders {
	l := &journalLoaders{}
	l.step = newLoader(func(ctx context.Context, keys []snapshot.StepKey) ([]snapshot.Step, []error) {
		res, err := reader.Steps(ctx, keys)
		return spread(len(keys), err, func(i int) (snapshot.Step, error) { return res[i].Get() })
	}, keysBatch)
	l.steps = newLoader(pageLoader(reader.StepPages, func(r snapshot.Result[*snapshot.StepPage]) (*snapshot.StepPage, error) {
		if r.Value != nil {
			for _, e := range r.Value.Edges {
				l.primeStep(e.Step, e.Err)
			}
		}
		return r.Get()
	}), pagesBatch)
	l.inbound = newLoader(pageLoader(reader.InboundEventPages, snapshot.Result[*snapshot.InboundEventPage].Get), pagesBatch)
	l.runEvents = newLoader(pageLoader(reader.RunEventPages, snapshot.Result[*snapshot.RunEventPage].Get), pagesBatch)
	l.current = newLoader(func(ctx context.Context, runs []*snapshot.Run) ([]snapshot.Step, []error) {
		res, err := reader.CurrentSteps(ctx, runs)
		return spread(len(runs), err, func(i int) (snapshot.Step, error) {
			l.primeStep(res[i].Value, res[i].Err)
			return res[i].Get()
		})
	}, keysBatch)
	l.attempts = newLoader(func(ctx context.Context, keys []attemptsKey) ([][]snapshot.Result[*snapshot.Attempt], []error) {
		steps, last := make([]snapshot.StepKey, len(keys)), make([]*int, len(keys))
		for i, k := range keys {
			steps[i] = k.step
			if k.hasLast {
				n := k.last
				last[i] = &n
			}
		}
		res, err := reader.Attempts(ctx, steps, last)
		return spread(len(keys), err, func(i int) ([]snapshot.Result[*snapshot.Attempt], error) { return res[i].Get() })
	}, keysBatch)
	return l
}

// primeStep keeps a step read in the operation's snapshot, so that the
// parent step of a step of a page (usually on the same page) costs no
// statement.
func (l *journalLoaders) primeStep(s snapshot.Step, err error) {
	if s != nil {
		l.step.prime(s.Base().Key(), s, err)
	}
}

// parentStepKeys are the keys of the parent steps of steps: one per step
// that has a parent, and at, the index of each among steps.
func parentStepKeys[S snapshot.Step](steps []S) (keys []snapshot.StepKey, at []int) {
	return keysWhere(steps, func(s S) (snapshot.StepKey, bool) { return parentStepKey(s.Base()) })
}

// parentStepKey is the key of the parent step of the step b; false for a
// top-level step.
func parentStepKey(b *snapshot.StepBase) (snapshot.StepKey, bool) {
	if b.ParentStepID == nil {
		return snapshot.StepKey{}, false
	}
	return snapshot.StepKey{RunID: b.RunID, StepID: *b.ParentStepID}, true
}

// journalPageKeys are the keys of the journal pages of runs.
func journalPageKeys(runs []*snapshot.Run, first *int, after *string) []pageKey {
	return runPageKeys(runs, "", func(*snapshot.Run) string { return "" }, first, after)
}
