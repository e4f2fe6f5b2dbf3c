package plan

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/flowsnap/flowsnap/cursor"
	"github.com/flowsnap/flowsnap/fault"
	"github.com/flowsnap/flowsnap/snapshot"
)

// Batching: one path for every read that a field makes.
//
// Each operation gets its own loaders (one per kind of read: runs, pages of
// children and rounds, steps by key, …). A loader is a cache of results keyed by what
// was asked, each result a value or the error that key alone failed with:
// a key is read at most once per operation, whoever asks first, and a failed
// read is answered from the cache instead of being run again (in PostgreSQL
// it would run in a transaction the failure has already aborted).
//
// Every field that reads is listed in batchFields, keyed "Type.field", with
// the function that turns its parents and arguments into the loader's keys.
// The field's resolver builds its keys with that function and calls the
// loader's get; nothing else reads. Before the first root field resolves,
// readAhead walks the operation's selection level by level with the same
// table, and asks each loader for every key of a level at once. The
// resolvers then find everything in the caches: an operation costs one
// statement per batched field and level, however many runs it returns and
// however gqlgen schedules its resolvers. What readAhead does not reach (an
// argument it cannot evaluate, a type it does not follow) is still read
// correctly by the resolvers, only in more statements.
//
// To add a root or nested field that reads: give it a loader in loaders (or
// reuse one), add its entry to batchFields with the key builder its resolver
// also calls, and mark it `batch: true` in gqlgen.yml when it is nested (a
// test fails when a batched field has no entry). A field whose values hold
// more fields to follow (a connection's edges and nodes) adds a
// throughFields entry saying what values lie below it.
type loaders struct {
	// p knows the schema the operation was validated against.
	p    *Planner
	runs *loader[string, snapshot.Snapshot]
	// pages are the pages of children and of rounds, which one
	// statement reads together.
	pages *loader[pageKey, *snapshot.Page]
	// journals are the journal's loaders, made by the first that reads
	// one: most operations read none.
	journals    atomic.Pointer[journalLoaders]
	journalOnce sync.Once
	reader      *snapshot.Reader
	// read is the operation's read, which the read-ahead ends with its
	// last statement when it can tell which that is.
	read *snapshot.Read
	// ahead reads ahead the whole operation once, for its first root field.
	ahead sync.Once
	// plan is the operation as one read, when planned (see oneRead).
	plan     oneRead
	planned  bool
	planOnce sync.Once
	// args are the operation's fields' arguments (see argsOf).
	args   map[*ast.Field]*args
	argsMu sync.Mutex
	// roots are the reads of root fields that read by themselves (roots.go).
	roots rootReads
}

// journal returns the journal's loaders.
func (l *loaders) journal() *journalLoaders {
	l.journalOnce.Do(func() { l.journals.Store(newJournalLoaders(l.reader)) })
	return l.journals.Load()
}

// loader reads values of one kind by key, each key at most once per
// operation: a batch of keys not asked for yet is read in one fetch, and
// every result, value or error, is kept with its key. It is safe for
// concurrent use; a caller asking for a key another caller is reading
// waits for that read.
type loader[K comparable, V any] struct {
	fetch    func(context.Context, []K) ([]V, []error)
	capacity int

	mu      sync.Mutex
	entries map[K]*entry[V]
	// pending are the keys wanted but not fetched yet, with their entries,
	// all done when next is.
	pending        []K
	pendingEntries []*entry[V]
	next           *wave
}

// wave is the fetch of the keys wanted since the last one: its entries
// are final once done is closed. One channel per fetch, not per key.
type wave struct{ done chan struct{} }

// primed is the wave of entries known without a fetch.
var primed = func() *wave {
	w := &wave{done: make(chan struct{})}
	close(w.done)
	return w
}()

// entry is one key's result.
type entry[V any] struct {
	wave *wave
	v    V
	err  error
}

func newLoader[K comparable, V any](fetch func(context.Context, []K) ([]V, []error), capacity int) *loader[K, V] {
	// entries is made by the first key: most operations use few of their
	// loaders.
	return &loader[K, V]{fetch: fetch, capacity: capacity}
}

// get returns the values of keys, reading those nobody has asked for yet
// in one fetch (per capacity keys), with per-key errors as gqlgen's batch
// resolvers want them: nil, or a graphql.BatchErrorList.
func (l *loader[K, V]) get(ctx context.Context, keys []K) ([]V, error) {
	entries := l.read(ctx, keys)
	out := make([]V, len(keys))
	var errs []error
	for i, e := range entries {
		v, err := e.wait(ctx)
		out[i] = v
		if err != nil {
			if errs == nil {
				errs = make([]error, len(keys))
			}
			errs[i] = err
		}
	}
	if errs != nil {
		return out, graphql.BatchErrorList(errs)
	}
	return out, nil
}

// one returns the value of one key. A key read already (a run's parent
// the read-ahead read, once per run of a page) is answered without a
// wave or a wait.
func (l *loader[K, V]) one(ctx context.Context, key K) (V, error) {
	l.mu.Lock()
	e, ok := l.entries[key]
	l.mu.Unlock()
	if ok {
		select {
		case <-e.wave.done:
			return e.v, e.err
		default:
		}
	}
	return l.read(ctx, []K{key})[0].wait(ctx)
}

// read returns the entries of keys, fetching those that are new (and
// any other key waiting to be fetched) before it returns.
func (l *loader[K, V]) read(ctx context.Context, keys []K) []*entry[V] {
	entries := l.want(keys)
	l.flush(ctx)
	return entries
}

// want returns the entries of keys, the new ones waiting for the next
// flush.
func (l *loader[K, V]) want(keys []K) []*entry[V] {
	entries := make([]*entry[V], len(keys))
	l.mu.Lock()
	defer l.mu.Unlock()
	// The new entries are allocated together, in blocks that double:
	// keys often repeat or were read already (the parents of a page's
	// runs), and room for all that follow would mostly go unused.
	var block []entry[V]
	made := 0
	if l.entries == nil {
		l.entries = make(map[K]*entry[V], len(keys))
	}
	for i, k := range keys {
		e, ok := l.entries[k]
		if !ok {
			if len(block) == 0 {
				block = make([]entry[V], min(len(keys)-i, max(made, 4)))
				made += len(block)
			}
			if l.next == nil {
				l.next = &wave{done: make(chan struct{})}
			}
			e, block = &block[0], block[1:]
			e.wave = l.next
			l.entries[k] = e
			if l.pending == nil {
				l.pending = make([]K, 0, len(keys)-i)
				l.pendingEntries = make([]*entry[V], 0, len(keys)-i)
			}
			l.pending = append(l.pending, k)
			l.pendingEntries = append(l.pendingEntries, e)
		}
		entries[i] = e
	}
	return entries
}

// flush fetches every key waiting, capacity keys per fetch, and then
// completes their wave, even when a fetch panics, so that no caller waits
// for ever.
func (l *loader[K, V]) flush(ctx context.Context) { l.flushThen(ctx, nil) }

// flushThen is flush calling last, when set, before its last fetch.
func (l *loader[K, V]) flushThen(ctx context.Context, last func()) {
	l.mu.Lock()
	keys, entries, w := l.pending, l.pendingEntries, l.next
	l.pending, l.pendingEntries, l.next = nil, nil, nil
	l.mu.Unlock()
	if w == nil {
		return
	}
	defer close(w.done)
	for len(keys) > 0 {
		n := min(len(keys), l.capacity)
		if n == len(keys) && last != nil {
			last()
		}
		l.fill(ctx, keys[:n], entries[:n])
		keys, entries = keys[n:], entries[n:]
	}
}

// waiting reports whether keys wait for the next flush.
func (l *loader[K, V]) waiting() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.pending) > 0
}

// flusher is a loader of any kind, as loaders.flush flushes them.
type flusher interface {
	waiting() bool
	flushThen(ctx context.Context, last func())
}

// fill fetches keys into their entries; a fetch that panics fails them.
func (l *loader[K, V]) fill(ctx context.Context, keys []K, entries []*entry[V]) {
	defer func() {
		if r := recover(); r != nil {
			for _, e := range entries {
				e.err = fault.Errorf(fault.PersistenceFailed, "reading failed")
			}
			panic(r)
		}
	}()
	vals, errs := l.fetch(ctx, keys)
	for i, e := range entries {
		e.v, e.err = vals[i], errs[i]
	}
}

// prime keeps v for k unless k was asked for already: what one read
// returned on the way to another (the runs of a page) costs no statement
// when asked for by itself.
func (l *loader[K, V]) prime(k K, v V, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.entries[k]; ok {
		return
	}
	if l.entries == nil {
		l.entries = map[K]*entry[V]{}
	}
	l.entries[k] = &entry[V]{wave: primed, v: v, err: err}
}

// reserve makes room for n entries, when the loader has none yet.
func (l *loader[K, V]) reserve(n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.entries == nil {
		l.entries = make(map[K]*entry[V], n)
	}
}

// primeMany is prime for the n keys each gives, their entries allocated
// together: a batch of runs read at once is kept in one allocation, not
// one per run.
func (l *loader[K, V]) primeMany(n int, each func(i int) (K, V, error)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.entries == nil {
		l.entries = make(map[K]*entry[V], n)
	}
	block := make([]entry[V], n)
	for i := range n {
		k, v, err := each(i)
		if _, ok := l.entries[k]; ok {
			continue
		}
		e := &block[i]
		e.wave, e.v, e.err = primed, v, err
		l.entries[k] = e
	}
}

func (e *entry[V]) wait(ctx context.Context) (V, error) {
	select {
	case <-e.wave.done:
		return e.v, e.err
	case <-ctx.Done():
		var zero V
		return zero, fault.Wrap(fault.Timeout, ctx.Err(), "the operation was cancelled or ran out of time")
	}
}

// pageKey identifies one page request; comparable, unlike PageRequest.
type pageKey struct {
	kind            cursor.Kind // of a run list: children or rounds
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

func newLoaders(p *Planner, reader *snapshot.Reader, rd *snapshot.Read) *loaders {
	l := &loaders{p: p, reader: reader, read: rd}
	l.runs = newLoader(func(ctx context.Context, ids []string) ([]snapshot.Snapshot, []error) {
		res, err := reader.Load(ctx, ids)
		return spread(len(ids), err, func(i int) (snapshot.Snapshot, error) { return res[i].Value, res[i].Err })
	}, runsBatch)
	l.pages = newLoader(func(ctx context.Context, keys []pageKey) ([]*snapshot.Page, []error) {
		reqs := make([]snapshot.RunPageRequest, len(keys))
		for i, k := range keys {
			reqs[i] = snapshot.RunPageRequest{Kind: k.kind, PageRequest: k.request()}
		}
		res, err := reader.RunPages(ctx, reqs)
		return spread(len(keys), err, func(i int) (*snapshot.Page, error) {
			if page := res[i].Value; page != nil {
				for _, e := range page.Edges {
					l.runs.prime(e.RunID, e.Node.Value, e.Node.Err)
				}
			}
			return res[i].Value, res[i].Err
		})
	}, pagesBatch)
	return l
}

// flush fetches what each loader was asked for, for readAhead; last, when
// set, is called before the last fetch of all.
func (l *loaders) flush(ctx context.Context, last func()) {
	all := []flusher{l.runs, l.pages}
	// Nothing can be wanted of a journal loader not made yet.
	if j := l.journals.Load(); j != nil {
		all = append(all, j.steps, j.inbound, j.runEvents, j.current, j.step, j.attempts)
	}
	final := -1
	if last != nil {
		for i, f := range all {
			if f.waiting() {
				final = i
			}
		}
	}
	for i, f := range all {
		if i == final {
			f.flushThen(ctx, last)
		} else {
			f.flushThen(ctx, nil)
		}
	}
}

type loadersKey struct{}

// from returns the loaders of ctx's operation; nil outside one.
func from(ctx context.Context) *loaders {
	l, _ := ctx.Value(loadersKey{}).(*loaders)
	return l
}

// pageLoader makes the fetch of a loader of pages from a batch read and
// what to make of each of its results.
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
