package snapshot

import (
	"context"
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
	if len(todo) == 1 {
		answered, err := q.cachedAlone(todo[0], b.first[todo[0]], b.out)
		if err != nil {
			return nil, err
		}
		if answered {
			todo = nil
		}
	}
	cache := q.cache(todo)
	if cache != nil {
		var err error
		if todo, err = q.cachedRuns(cache, ids, b.first, b.distinct, b.out, b.scope); err != nil {
			return nil, err
		}
	}
	if len(todo) > 0 {
		if err := q.decodedRuns(b, todo); err != nil {
			return nil, err
		}
	}
	return b.results()
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
// id it answers, which must be one asked for and not answered yet; it
// returns the run when the row is one.
func (b *idRuns) place(raw *rawRun, pos Position) (*Run, error) {
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

// cache returns the reader's run cache when it is worth asking for
// distinct: it holds two or more of them and at least three in four. Its
// revisions cost less than the rows do, but the rows that
// changed are then a statement of their own, so a batch the cache mostly
// misses is read whole at once. A read that was to run alone then opens a
// transaction, since it may need that second statement.
func (q *querier) cache(distinct []string) *runCache {
	c := q.rd.r.cache
	if c == nil || len(distinct) < 2 || q.rd.ranAlone {
		return nil
	}
	if held := c.holds(distinct); held < 2 || held*4 < len(distinct)*3 {
		return nil
	}
	q.rd.alone = false
	return c
}

// cachedRuns reads the revisions of distinct and places in out each run the
// cache holds at its revision, and each id without a run's row; it returns
// the ids it did not place.
func (q *querier) cachedRuns(c *runCache, ids []string, first map[string]int, distinct []string, out []Result[Snapshot], scope access.Scope) ([]string, error) {
	var raw rawRun
	var misses []string
	read := 0
	err := q.each(q.rd.r.selectRevisions, []any{q.dialect().TextListArg(distinct)}, raw.revisionDest(), "reading runs' revisions", func() error {
		i, err := slot(first, raw.idText, out)
		if err != nil {
			return err
		}
		read++
		if res, ok := c.fromRevision(&raw, ids[i], q.pos()); ok {
			out[i] = showResult(scope, res)
		} else {
			misses = append(misses, ids[i])
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if read != len(distinct) {
		return nil, errFewerRuns
	}
	return misses, nil
}

// cachedAlone answers the read of one id, at out[i], from the reader's run
// cache, when the read is to run alone (see Read.Alone) and the cache holds
// a run of id: it reads id's change row with the position, in a statement
// run alone, and when the run cached is at that revision, or id has no
// live run, that statement is the read's one. Otherwise it reports false
// and the read is as it was: it goes on to read the run's row alone, in a
// snapshot of its own, as it would have. A run's row costs two or three
// times its change row, which has three columns to the row's 28.
func (q *querier) cachedAlone(id string, i int, out []Result[Snapshot]) (bool, error) {
	c, rd := q.rd.r.cache, q.rd
	if c == nil || !rd.alone || rd.tx != nil || rd.ranAlone || c.holds([]string{id}) == 0 {
		return false, nil
	}
	var src string
	var rev int64
	rows, err := rd.r.db.ReadAlone(q.ctx, selectPosition, []any{&src, &rev}, rd.r.selectRevisions, q.dialect().TextListArg([]string{id}))
	if err != nil {
		// The read of the row will say what is wrong.
		return false, nil
	}
	defer rows.Close()
	rd.statements++
	var raw rawRun
	if !rows.Next() || rows.Scan(raw.revisionDest()...) != nil || raw.rowID() != id {
		return false, nil
	}
	pos, err := checkPosition(src, rev)
	if err != nil || pos.Revision < rd.min || rd.r.sameSource(pos.Source) != nil {
		return false, nil
	}
	res, ok := c.fromRevision(&raw, id, pos)
	if !ok {
		return false, nil
	}
	out[i] = showResult(scopeOf(q.ctx), res)
	// The statement run alone was the read's: what openAlone and
	// aloneRows.Scan record of one.
	rd.statements++
	rd.ranAlone, rd.pos, rd.opened = true, pos, time.Now()
	return true, nil
}

// decodedRuns reads the rows of todo, ids of b, and places each decoded
// run in b, keeping them in the reader's run cache when it has one.
func (q *querier) decodedRuns(b *idRuns, todo []string) error {
	c := q.rd.r.cache
	var raw rawRun
	var fresh []*Run
	before := b.placed
	err := q.each(q.rd.r.selectRuns, []any{q.dialect().TextListArg(todo)}, raw.dest(), "reading runs", func() error {
		run, err := b.place(&raw, q.pos())
		if run != nil && c != nil {
			fresh = append(fresh, run)
		}
		return err
	})
	if err != nil {
		return err
	}
	if b.placed-before != len(todo) {
		return errFewerRuns
	}
	if len(fresh) > 0 {
		c.put(q.pos().Source, fresh)
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
