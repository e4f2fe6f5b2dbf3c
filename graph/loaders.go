package graph

import (
	"context"
	"sync"
	"time"

	"github.com/vikstrous/dataloadgen"

	"github.com/flowsnap/flowsnap/cursor"
	"github.com/flowsnap/flowsnap/snapshot"
)

// loaders batch the reads of one operation so that the number of statements
// grows with the depth of the query, not with the number of runs in it.
// gqlgen's batch resolvers hand a resolver every sibling of one list; the
// loaders go further and merge the siblings of different lists at the same
// depth (the rounds of every child of every page), which the batch
// resolvers alone would read once per list. They live for one operation and
// read in its snapshot, so caching is safe.
type loaders struct {
	runs     *batcher[string, snapshot.Snapshot]
	children *batcher[pageKey, *snapshot.Page]
	rounds   *batcher[pageKey, *snapshot.Page]
	journal  *journalLoaders
	// roots reads the ids of every root run field once, together.
	roots sync.Once
}

// batcher is a loader that can also be filled ahead of time: prefetch knows
// a whole level's keys at once, so it reads them at once instead of waiting
// for the loader's window, and primes the loader with what it read.
type batcher[K comparable, V any] struct {
	*dataloadgen.Loader[K, V]
	fetch func(context.Context, []K) ([]V, []error)
	mu    sync.Mutex
	known map[K]bool
}

func newBatcher[K comparable, V any](fetch func(context.Context, []K) ([]V, []error), wait time.Duration, capacity int) *batcher[K, V] {
	return &batcher[K, V]{
		Loader: dataloadgen.NewLoader(fetch, dataloadgen.WithWait(wait), dataloadgen.WithBatchCapacity(capacity)),
		fetch:  fetch,
		known:  map[K]bool{},
	}
}

// prime caches v for k.
func (b *batcher[K, V]) prime(k K, v V) {
	b.mu.Lock()
	b.known[k] = true
	b.mu.Unlock()
	b.Prime(k, v)
}

// readAhead reads the keys not cached yet in one fetch, without waiting,
// primes the cache with the values read and returns every key's value.
// Errors are not cached; the resolvers meet them again and report them.
func (b *batcher[K, V]) readAhead(ctx context.Context, keys []K, capacity int) ([]V, error) {
	b.mu.Lock()
	var missing []K
	seen := map[K]bool{}
	for _, k := range keys {
		if !b.known[k] && !seen[k] {
			missing = append(missing, k)
			seen[k] = true
		}
	}
	b.mu.Unlock()
	for len(missing) > 0 {
		chunk := missing[:min(len(missing), capacity)]
		missing = missing[len(chunk):]
		vals, errs := b.fetch(ctx, chunk)
		for i, k := range chunk {
			if errs == nil || errs[i] == nil {
				b.prime(k, vals[i])
			}
		}
	}
	return loadAll(ctx, b, keys)
}

// pageKey identifies one page request; comparable, unlike PageRequest.
type pageKey struct {
	anchor, lineage string
	first           int // 0 means the default
	after           string
	hasAfter        bool
}

func (k pageKey) request() snapshot.PageRequest {
	req := snapshot.PageRequest{Anchor: k.anchor, Lineage: k.lineage}
	if k.first != 0 {
		first := k.first
		req.First = &first
	}
	if k.hasAfter {
		after := k.after
		req.After = &after
	}
	return req
}

func newPageKey(anchor, lineage string, first *int, after *string) pageKey {
	k := pageKey{anchor: anchor, lineage: lineage}
	if first != nil {
		k.first = *first
		if k.first == 0 {
			k.first = -1 // keep an explicit 0 distinct from the default, so it is refused
		}
	}
	// "" is no cursor: clients such as genqlient send it for an unset
	// string variable, and it can never be a cursor this server issued.
	if after != nil && *after != "" {
		k.after, k.hasAfter = *after, true
	}
	return k
}

// Batch capacities. Runs are read with one statement however many; a batch
// of pages is one UNION ALL per page, and SQLite allows at most 500 terms in
// a compound SELECT. The complexity limit bounds both long before.
const (
	runsBatch  = 10_000
	pagesBatch = 500
)

func newLoaders(reader *snapshot.Reader, wait time.Duration) *loaders {
	l := &loaders{journal: newJournalLoaders(reader, wait)}
	pages := func(kind cursor.Kind) func(context.Context, []pageKey) ([]*snapshot.Page, []error) {
		read := func(ctx context.Context, reqs []snapshot.PageRequest) ([]snapshot.PageResult, error) {
			return reader.Pages(ctx, kind, reqs)
		}
		return pageLoader(read, func(r snapshot.PageResult) (*snapshot.Page, error) {
			if r.Page != nil {
				for _, e := range r.Page.Edges {
					l.prime(e.RunID, e.Node)
				}
			}
			return r.Page, r.Err
		})
	}
	l.runs = newBatcher(func(ctx context.Context, ids []string) ([]snapshot.Snapshot, []error) {
		res, err := reader.Load(ctx, ids)
		return spread(len(ids), err, func(i int) (snapshot.Snapshot, error) { return res[i].Snapshot, res[i].Err })
	}, wait, runsBatch)
	l.children = newBatcher(pages(cursor.Children), wait, pagesBatch)
	l.rounds = newBatcher(pages(cursor.Rounds), wait, pagesBatch)
	return l
}

// prime caches a run read in the operation's snapshot, so that asking for
// it again (the parent of each child of a page is the page's anchor) costs
// no statement. Errors are not cached: they are reported where they occur.
func (l *loaders) prime(id string, res snapshot.Result) {
	if res.Err == nil && res.Snapshot != nil {
		l.runs.prime(id, res.Snapshot)
	}
}

type loadersKey struct{}

func loadersFrom(ctx context.Context) *loaders {
	l, _ := ctx.Value(loadersKey{}).(*loaders)
	return l
}

// loadAll loads keys with one batch and returns the values with per-key
// errors, as gqlgen's batch resolvers want them.
func loadAll[K comparable, V any](ctx context.Context, l *batcher[K, V], keys []K) ([]V, error) {
	thunks := make([]func() (V, error), len(keys))
	for i, k := range keys {
		thunks[i] = l.LoadThunk(ctx, k)
	}
	out := make([]V, len(keys))
	var errs []error
	for i, thunk := range thunks {
		v, err := thunk()
		out[i] = v
		if err != nil {
			if errs == nil {
				errs = make([]error, len(keys))
			}
			errs[i] = err
		}
	}
	if errs != nil {
		return out, batchErrors(errs)
	}
	return out, nil
}
