package snapshot

import (
	"context"
	"slices"
	"time"

	"github.com/flowsnap/flowsnap/access"
	"github.com/flowsnap/flowsnap/fault"
	"github.com/flowsnap/flowsnap/store/vocab"
)

// MaxBatch is the most run ids one batch read takes.
const MaxBatch = 200

// Runs reads the snapshots of ids in the read carried by ctx: one Result per
// id, in request order, duplicates answered in place. It fails as a whole
// only for more than MaxBatch ids or when the store cannot be read; an
// empty batch still reads the position.
func (r *Reader) Runs(ctx context.Context, ids []string) ([]Result[Snapshot], error) {
	if len(ids) > MaxBatch {
		return nil, fault.Errorf(fault.BadUserInput, "a batch takes at most %d ids, got %d", MaxBatch, len(ids))
	}
	return r.Load(ctx, ids)
}

// Load reads the snapshots of any number of ids, like Runs but without
// the batch limit: for batching that flowsnap does itself (gathering the
// parents of a whole page of runs), never for a list of ids a client sent.
func (r *Reader) Load(ctx context.Context, ids []string) ([]Result[Snapshot], error) {
	return readWith(ctx, r, func(q *querier) ([]Result[Snapshot], error) { return q.runs(ids) })
}

// RunsAndParents reads the snapshots of ids, as Load does, and those of
// their parents (each run's ExecutionParentID, what Run.parent reads) in
// the same read, so that a selection of runs with their parents costs
// about what the runs alone do: a few runs and their parents in one
// statement; many runs in one, and the parents their rows name in a second;
// and when the reader's run cache holds most of ids, the revisions of ids
// and of the parents of the runs it holds in one, and the rows that
// changed, if any, in a second. parents holds, by id, the parent of every
// run of ids that is not itself one of ids (and may hold more); a read of
// one statement may run alone (see Read.Alone), and one that needs more
// opens a transaction instead.
func (r *Reader) RunsAndParents(ctx context.Context, ids []string) (runs []Result[Snapshot], parents map[string]Result[Snapshot], err error) {
	err = r.with(ctx, func(q *querier) error {
		runs, parents, err = q.runsAndParents(ids)
		return err
	})
	return runs, parents, err
}

// Run reads the snapshot of one id. A malformed id or a broken row is
// returned as the error.
func (r *Reader) Run(ctx context.Context, id string) (Snapshot, error) {
	res, err := r.Runs(ctx, []string{id})
	if err != nil {
		return nil, err
	}
	return res[0].Get()
}

// runs reads ids in one statement, or, when the reader's run cache holds
// most of them, their revisions and then only the rows that changed.
func (q *querier) runs(ids []string) ([]Result[Snapshot], error) {
	b := newIDRuns(ids, scopeOf(q.ctx))
	if len(b.distinct) == 0 {
		return b.out, nil
	}
	todo := b.distinct
	if c := q.rd.r.cache; c != nil && q.placed() {
		todo = q.freshRuns(c, b, todo)
	}
	if len(todo) == 1 && q.cachedAlone(b, false) {
		// Only a read not placed yet runs alone: todo is b's one id.
		todo = nil
	}
	cache := q.cache(todo)
	if cache != nil {
		var err error
		if todo, err = q.cachedRuns(cache, b, todo, nil); err != nil {
			return nil, err
		}
	}
	if len(todo) > 0 {
		if err := q.decodedRuns(b, todo, q.rd.r.selectRuns); err != nil {
			return nil, err
		}
	}
	return b.results()
}

// runsAndParents is runs with the parents of the runs read (see
// RunsAndParents).
func (q *querier) runsAndParents(ids []string) ([]Result[Snapshot], map[string]Result[Snapshot], error) {
	b := newIDRuns(ids, scopeOf(q.ctx))
	b.parents = map[string]Result[Snapshot]{}
	if len(b.distinct) == 0 {
		return b.out, b.parents, nil
	}
	if q.cachedAlone(b, true) {
		out, err := b.results()
		return out, b.parents, err
	}
	c := q.cache(b.distinct)
	switch {
	case c != nil:
		// A run at its cached revision has its cached parent: the
		// revisions of those parents are read with the runs'. The runs
		// and parents that changed are read in a second statement, and
		// the parents those runs name, if any is new, in a third.
		misses, err := q.cachedRuns(c, b, b.distinct, c.parentsOf(b.distinct, b.first))
		if err != nil {
			return nil, nil, err
		}
		for _, res := range b.out {
			if p, ok := b.unreadParent(res.Value); ok && !slices.Contains(b.parentMisses, p) {
				b.parentMisses = append(b.parentMisses, p)
			}
		}
		if todo := append(misses, b.parentMisses...); len(todo) > 0 {
			if err := q.decodedRuns(b, todo, q.rd.r.selectRuns); err != nil {
				return nil, nil, err
			}
		}
		if err := q.parentsNamed(b, b.out, nil); err != nil {
			return nil, nil, err
		}
	case len(b.distinct) > maxParentLookups && q.mayReadAgain():
		// Many runs: their rows, then the parents they name that are
		// not among them.
		if err := q.decodedRuns(b, b.distinct, q.rd.r.selectRuns); err != nil {
			return nil, nil, err
		}
		if err := q.parentsNamed(b, b.out, nil); err != nil {
			return nil, nil, err
		}
	default:
		if err := q.decodedRuns(b, b.distinct, q.rd.r.selectRunsAndParents); err != nil {
			return nil, nil, err
		}
	}
	out, err := b.results()
	return out, b.parents, err
}

// maxParentLookups is the most runs whose parents one statement looks up
// beside them (parentsOf): each lookup reads its run's row again, which
// for a batch or a page of a hundred cost more than a second statement
// reading the few parents the rows name.
const maxParentLookups = 32

// mayReadAgain reports whether the read may run a second statement: a
// read that was to run alone then opens a transaction (see Read.Alone),
// and one that was to end with its next statement (Read.EndWithNext) does
// not send the transaction's end behind it, which would refuse the second;
// End rolls it back. False once a statement ran alone.
func (q *querier) mayReadAgain() bool {
	if q.rd.ranAlone {
		return false
	}
	if q.rd.tx == nil {
		q.rd.alone = false
	}
	q.last = false
	return true
}

// parentsNamed reads into b.parents, in one statement, the parents that
// the runs of results and of edges name and that are neither among b's ids
// nor read already (in b.parents, or on edges): the caller read those runs,
// whose rows name their parents.
func (q *querier) parentsNamed(b *idRuns, results []Result[Snapshot], edges []Edge) error {
	onEdges := make(map[string]bool, len(edges))
	for _, e := range edges {
		onEdges[e.RunID] = true
	}
	var missing []string
	want := func(s Snapshot) {
		if p, ok := b.unreadParent(s); ok && !onEdges[p] && !slices.Contains(missing, p) {
			missing = append(missing, p)
		}
	}
	for _, res := range results {
		want(res.Value)
	}
	for _, e := range edges {
		want(e.Node.Value)
	}
	if len(missing) == 0 {
		return nil
	}
	res, err := q.runs(missing)
	if err != nil {
		return err
	}
	for i, id := range missing {
		b.parents[id] = res[i]
	}
	return nil
}

// unreadParent returns the parent the run s names, when s is a run with
// one that is neither among b's ids nor read into b.parents.
func (b *idRuns) unreadParent(s Snapshot) (string, bool) {
	run, ok := s.(*Run)
	if !ok || run.ExecutionParentID == nil {
		return "", false
	}
	p := *run.ExecutionParentID
	_, asked := b.first[p]
	_, read := b.parents[p]
	return p, !asked && !read
}

// idRuns are the snapshots of a batch of ids, as one read places them: a
// Result per id, in request order, duplicates answered in place.
type idRuns struct {
	ids []string
	out []Result[Snapshot]
	// first maps each distinct id to its first place in ids; only ids that
	// repeat are looked for again, after the read.
	first    map[string]int
	distinct []string
	repeats  bool
	// placed counts the rows placed.
	placed int
	// scope is what the reading principal may see (see show).
	scope access.Scope
	// parents, when set, are the runs' parents read beside them (see
	// RunsAndParents): every row of a run not among ids is one. Of those
	// the run cache could not answer by revision, parentMisses are the
	// ids.
	parents      map[string]Result[Snapshot]
	parentMisses []string
}

// newIDRuns checks ids: a malformed one's Result is its error, and the
// others are distinct's, each once.
func newIDRuns(ids []string, scope access.Scope) *idRuns {
	b := &idRuns{ids: ids, out: make([]Result[Snapshot], len(ids)), first: make(map[string]int, len(ids)), distinct: make([]string, 0, len(ids)), scope: scope}
	for i, id := range ids {
		if err := vocab.CheckID("an id", id); err != nil {
			b.out[i].Err = err
			continue
		}
		if _, seen := b.first[id]; seen {
			b.repeats = true
			continue
		}
		b.first[id] = i
		b.distinct = append(b.distinct, id)
	}
	return b
}

// place decodes the run row raw holds, read at pos, into the place of the
// id it answers, which must be one asked for and not answered yet, or, when
// b reads parents, one not asked for and not read yet, a parent; it
// returns the run when the row is one.
func (b *idRuns) place(raw *rawRun, pos Position) (*Run, error) {
	if _, asked := indexOf(b.first, raw.idText); !asked && b.parents != nil {
		return b.placeParent(raw, pos)
	}
	i, err := slot(b.first, raw.idText, b.out)
	if err != nil {
		return nil, err
	}
	raw.id = b.ids[i]
	snap, err := raw.decode(pos)
	b.out[i].Value, b.out[i].Err = show(b.scope, snap, err)
	b.placed++
	// The run as decoded, in scope or not, is what the run cache keeps.
	run, _ := snap.(*Run)
	return run, nil
}

// placeParent decodes the row of a parent, as place does a run's. A
// parent answered already is answered again by a statement of runs that
// changed and their parents: the same row in the same read, kept once.
func (b *idRuns) placeParent(raw *rawRun, pos Position) (*Run, error) {
	id := raw.rowID()
	if _, seen := b.parents[id]; seen {
		return nil, nil
	}
	raw.id = id
	snap, err := raw.decode(pos)
	var res Result[Snapshot]
	res.Value, res.Err = show(b.scope, snap, err)
	b.parents[id] = res
	run, _ := snap.(*Run)
	return run, nil
}

// results returns every id's Result, duplicates' filled in.
func (b *idRuns) results() ([]Result[Snapshot], error) {
	if b.repeats {
		for i, id := range b.ids {
			if j, ok := b.first[id]; ok && j != i {
				b.out[i] = b.out[j]
			}
		}
	}
	return b.out, nil
}

// keepingCache returns the reader's run cache when it keeps the runs read:
// always when reads ask it by revision, and otherwise once the revision
// watcher tells it of changes, without which it answers nothing.
func (r *Reader) keepingCache() *runCache {
	c := r.cache
	if c == nil || r.byRevision || c.watched() {
		return c
	}
	return nil
}

// cache returns the reader's run cache when it is worth asking for
// distinct: it holds two or more of them and at least three in four. Its
// revisions cost less than the rows do, but the rows that
// changed are then a statement of their own, so a batch the cache mostly
// misses is read whole at once. A read that was to run alone then opens a
// transaction, since it may need that second statement.
func (q *querier) cache(distinct []string) *runCache {
	c := q.rd.r.revisionCache()
	if c == nil || len(distinct) < 2 || q.rd.ranAlone {
		return nil
	}
	if held := c.holds(distinct); held < 2 || held*4 < len(distinct)*3 || !q.mayReadAgain() {
		return nil
	}
	return c
}

// freshRuns places in b the runs of todo, ids of b, that the cache c
// holds as unchanged up to the read's position (runCache.fresh), without
// a statement, and returns the rest.
func (q *querier) freshRuns(c *runCache, b *idRuns, todo []string) []string {
	var rest []string
	for i, id := range todo {
		run, ok := c.fresh(q.pos(), id)
		if !ok {
			if rest != nil {
				rest = append(rest, id)
			}
			continue
		}
		if rest == nil {
			rest = append(make([]string, 0, len(todo)-1), todo[:i]...)
		}
		b.out[b.first[id]] = showResult(b.scope, Result[Snapshot]{Value: run})
	}
	if rest == nil {
		return todo
	}
	return rest
}

// cachedRuns reads the revisions of ids, distinct ids of b, and of
// parents, runs not among b's, and places in b each run the cache holds
// at its revision, and each id without a run's row; it returns the ids it
// did not place, and keeps in b.parentMisses the parents it did not.
func (q *querier) cachedRuns(c *runCache, b *idRuns, ids, parents []string) ([]string, error) {
	var raw rawRun
	var misses []string
	read := 0
	list := ids
	if len(parents) > 0 {
		list = append(slices.Clip(list), parents...)
	}
	err := q.each(q.rd.r.selectRevisions, []any{q.dialect().TextListArg(list)}, raw.revisionDest(), "reading runs' revisions", func() error {
		if _, asked := indexOf(b.first, raw.idText); !asked && b.parents != nil {
			id := raw.rowID()
			if _, seen := b.parents[id]; seen || slices.Contains(b.parentMisses, id) {
				return fault.Errorf(fault.PersistenceFailed, "the store answered a run that was not asked for")
			}
			if res, ok := c.fromRevision(&raw, id, q.pos()); ok {
				b.parents[id] = showResult(b.scope, res)
			} else {
				b.parentMisses = append(b.parentMisses, id)
			}
			return nil
		}
		i, err := slot(b.first, raw.idText, b.out)
		if err != nil {
			return err
		}
		read++
		if res, ok := c.fromRevision(&raw, b.ids[i], q.pos()); ok {
			b.out[i] = showResult(b.scope, res)
		} else {
			misses = append(misses, b.ids[i])
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if read != len(ids) {
		return nil, errFewerRuns
	}
	return misses, nil
}

// cachedAlone answers a read of b's ids that is to run alone (see
// Read.Alone), and with parents their parents, from the reader's run
// cache, when it holds a run of each id: it reads the change rows of the
// ids, and of the parents of the runs held, with the position, in a
// statement run alone, and when every run is at its revision held (or an
// id has no live run), that statement is the read's one. Otherwise it
// places nothing and reports false: the read goes on as it would have, in
// a snapshot of its own. A run's row costs two or three times its change
// row, which has three columns to the row's 28.
func (q *querier) cachedAlone(b *idRuns, parents bool) bool {
	c, rd := q.rd.r.revisionCache(), q.rd
	if c == nil || !rd.alone || rd.tx != nil || rd.ranAlone || len(b.distinct) > maxParentLookups || c.holds(b.distinct) < len(b.distinct) {
		return false
	}
	list := b.distinct
	if parents {
		list = append(slices.Clip(list), c.parentsOf(b.distinct, b.first)...)
	}
	var src string
	var rev int64
	rows, err := rd.r.db.ReadAlone(q.ctx, selectPosition, []any{&src, &rev}, rd.r.selectRevisions, q.dialect().TextListArg(list))
	if err != nil {
		// The read of the rows will say what is wrong.
		return false
	}
	defer rows.Close()
	rd.statements++
	var raw rawRun
	got := make(map[string]Result[Snapshot], len(list))
	for rows.Next() {
		raw = rawRun{}
		if rows.Scan(raw.revisionDest()...) != nil {
			return false
		}
		id := raw.rowID()
		if _, seen := got[id]; seen || !slices.Contains(list, id) {
			return false
		}
		got[id] = Result[Snapshot]{}
		if pos, err := checkPosition(src, rev); err == nil {
			// Counted as answered only once the statement is the read's.
			res, ok := c.fromRevisionCounted(&raw, id, pos, false)
			if !ok {
				return false
			}
			got[id] = res
		}
	}
	pos, err := checkPosition(src, rev)
	if rows.Err() != nil || len(got) != len(list) || err != nil || pos.Revision < rd.min || rd.r.sameSource(pos.Source) != nil {
		return false
	}
	// A run at its revision held names the parent held with it, whose
	// change row was read beside it; one it does not name is a run that
	// has none.
	for _, id := range b.distinct {
		if run, ok := got[id].Value.(*Run); parents && ok && run.ExecutionParentID != nil {
			if _, read := got[*run.ExecutionParentID]; !read {
				return false
			}
		}
	}
	for id, res := range got {
		if _, ok := res.Value.(*Run); ok {
			c.hits.Add(1)
		}
		res = showResult(b.scope, res)
		if i, asked := b.first[id]; asked {
			b.out[i] = res
		} else {
			b.parents[id] = res
		}
	}
	// The statement run alone was the read's: what openAlone and
	// aloneRows.Scan record of one.
	rd.statements++
	rd.ranAlone, rd.pos, rd.opened = true, pos, time.Now()
	return true
}

// decodedRuns reads the rows of todo, ids of b (and parents of b's runs),
// with sql (selectRuns, or selectRunsAndParents, which reads the parents of
// todo's runs too), and places each decoded run in b, keeping them in the
// reader's run cache when it has one.
func (q *querier) decodedRuns(b *idRuns, todo []string, sql string) error {
	c := q.rd.r.keepingCache()
	var raw rawRun
	var fresh []*Run
	before := b.placed
	want := len(todo)
	if b.parents != nil {
		// todo may hold parents, which place counts not.
		want = 0
		for _, id := range todo {
			if _, asked := b.first[id]; asked {
				want++
			}
		}
	}
	err := q.each(sql, []any{q.dialect().TextListArg(todo)}, raw.dest(), "reading runs", func() error {
		run, err := b.place(&raw, q.pos())
		if run != nil && c != nil {
			fresh = append(fresh, run)
		}
		return err
	})
	if err != nil {
		return err
	}
	if b.placed-before != want {
		return errFewerRuns
	}
	if len(fresh) > 0 {
		c.put(q.pos(), fresh)
	}
	return nil
}

// slot returns the place in out of the run a row answers: one asked for
// (in first) and not answered yet.
func slot(first map[string]int, id any, out []Result[Snapshot]) (int, error) {
	i, ok := indexOf(first, id)
	if !ok || out[i].Value != nil || out[i].Err != nil {
		return 0, fault.Errorf(fault.PersistenceFailed, "the store answered a run that was not asked for")
	}
	return i, nil
}

var errFewerRuns = fault.Errorf(fault.PersistenceFailed, "the store answered fewer runs than asked")
