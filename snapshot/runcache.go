package snapshot

import (
	"math"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/golang-lru/v2/simplelru"

	"github.com/flowsnap/flowsnap/store"
)

// DefaultRunCacheBytes is how much memory a SQLite store's Reader lends to
// decoded runs by default (see Reader.SetRunCache).
const DefaultRunCacheBytes = 4 << 20

// runCache keeps decoded runs by id, each with the revision it was read
// at. A run's revision changes with every change of its row, its spawn
// edges or its journal (docs/contract.md#engine-store, kept by the store's own triggers), so a
// run read again at the revision cached is the run cached: a batch whose
// runs have not changed reads their revisions alone, and only the rows
// that did change. It is safe for concurrent use; runs in it are never
// modified.
//
// When the server's revision watcher tells it of every change it reads
// (Reader.ChangesSeen), the cache also knows which of its runs have not
// changed up to the revision the watcher reached, and a read at or before
// that revision takes those runs without reading even their revisions
// (see fresh).
type runCache struct {
	// hits and misses count the runs asked of it.
	hits, misses atomic.Uint64

	mu     sync.Mutex
	source string
	// runs are kept least recently used first; each weighs its runSize,
	// and the oldest leave until the weights fit in max.
	runs  *simplelru.LRU[string, *cachedRun]
	bytes int
	max   int
	// current is the revision up to which the cache was told of every
	// change (ChangesSeen), 0 while it knows of none. A run whose gen is
	// gen was the latest version of its id at current: it was read at
	// current or later, and no change told of since replaced it. Forgetting
	// what it knew (ChangesUnknown) is a new gen.
	current int64
	gen     uint64
}

type cachedRun struct {
	rev  int64
	run  *Run
	size int
	gen  uint64
}

func newRunCache(max int) *runCache {
	c := &runCache{max: max, gen: 1}
	// The count is no bound of its own: the bytes are.
	runs, err := simplelru.NewLRU(math.MaxInt, func(_ string, e *cachedRun) { c.bytes -= e.size })
	if err != nil {
		panic(err)
	}
	c.runs = runs
	return c
}

// runSize is roughly what a decoded run holds in memory: its state, its
// id and the run itself, with what is optional.
func runSize(r *Run) int {
	return 512 + len(r.State) + 2*len(r.ID) + len(r.LineageID)
}

// holds reports how many of ids it holds a run of, at whatever revision.
func (c *runCache) holds(ids []string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, id := range ids {
		if c.runs.Contains(id) {
			n++
		}
	}
	return n
}

// parentsOf returns the parents (ExecutionParentID) of the runs of ids it
// holds, at whatever revision, each once and none of ids: what a batch of
// those runs with their parents most likely needs (see
// Reader.RunsAndParents).
func (c *runCache) parentsOf(ids []string, first map[string]int) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, id := range ids {
		e, ok := c.runs.Peek(id)
		if !ok || e.run.ExecutionParentID == nil {
			continue
		}
		p := *e.run.ExecutionParentID
		if _, asked := first[p]; !asked && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// get returns the run of id that the change row read at pos says is its
// latest, rev, if held, and counts it as answered when count says so.
func (c *runCache) get(pos Position, id string, rev int64, count bool) (*Run, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.runs.Get(id)
	if !ok || e.rev != rev || pos.Source != c.source {
		return nil, false
	}
	// Read at current or later, the run is the latest version of its id
	// at current.
	e.gen = c.genAt(pos.Revision)
	if count {
		c.hits.Add(1)
	}
	return e.run, true
}

// genAt is the gen of a run that is the latest version of its id at
// revision at: the current gen when at is current or later, for then every
// later change is still to be told of; none (0) when some changes between
// at and current were told of already, without the run (called with mu
// held).
func (c *runCache) genAt(at int64) uint64 {
	if c.current > 0 && at >= c.current {
		return c.gen
	}
	return 0
}

// watched reports whether the revision watcher has told it of changes: a
// run put then may be answered by fresh.
func (c *runCache) watched() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.current > 0
}

// fresh returns the run of id as of pos without reading anything: the run
// held, when it is the latest version of its id at current (its gen is
// the current one), current is pos or later, and the run was written at
// pos or earlier. A run unchanged up to current is unchanged up to pos.
func (c *runCache) fresh(pos Position, id string) (*Run, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.current == 0 || pos.Revision > c.current || pos.Source != c.source {
		return nil, false
	}
	e, ok := c.runs.Get(id)
	if !ok || e.gen != c.gen || e.rev > pos.Revision {
		return nil, false
	}
	c.hits.Add(1)
	return e.run, true
}

// put keeps runs read at pos, dropping the least recently used to stay
// within its bytes; runs of another source are dropped first, and what the
// watcher told of that source's changes is forgotten.
func (c *runCache) put(pos Position, runs []*Run) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if pos.Source != c.source {
		c.forget(pos.Source, 0)
	}
	gen := c.genAt(pos.Revision)
	for _, r := range runs {
		size := runSize(r)
		if size > c.max/16 {
			continue
		}
		c.runs.Remove(r.ID)
		for c.bytes+size > c.max && c.runs.Len() > 0 {
			c.runs.RemoveOldest()
		}
		c.runs.Add(r.ID, &cachedRun{rev: r.Revision, run: r, size: size, gen: gen})
		c.bytes += size
	}
}

// changesSeen is told of every change of source's runs after revision
// from up to revision to, each run's latest: a run held at another
// revision is dropped. Told of anything but the changes after the revision
// it knows (current), it forgets what it knew instead.
func (c *runCache) changesSeen(source string, from, to int64, changes []Change) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if source != c.source || c.current == 0 || from != c.current || to < from {
		c.forget(source, to)
		return
	}
	for _, ch := range changes {
		if e, ok := c.runs.Peek(ch.RunID); ok && (e.rev != ch.Revision || ch.Deleted) {
			c.runs.Remove(ch.RunID)
		}
	}
	c.current = to
}

// changesUnknown says that the changes of source's runs up to revision at
// are not known, but the cache will be told of every change after it: no
// run held is known to be the latest version of its id any longer, and
// the runs read at at or later will be.
func (c *runCache) changesUnknown(source string, at int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.forget(source, at)
}

// forget is changesUnknown, called with mu held.
func (c *runCache) forget(source string, at int64) {
	if source != c.source {
		c.runs.Purge()
		c.source = source
	}
	c.gen++
	c.current = max(at, 0)
}

// RunCacheStats reports how many runs the reader's run cache answered and
// how many it was asked for and could not (their rows were read), and how
// many bytes of runs it holds now; all 0 without a cache.
func (r *Reader) RunCacheStats() (hits, misses uint64, bytes int) {
	c := r.cache
	if c == nil {
		return 0, 0, 0
	}
	c.mu.Lock()
	bytes = c.bytes
	c.mu.Unlock()
	return c.hits.Load(), c.misses.Load(), bytes
}

// selectRevisions is the statement that reads the change rows of a batch
// of ids: what says whether their cached runs still hold. For an id without
// a live change row (never seen, or a tombstone) it also says whether a
// row of the run exists, so that such an id is answered without its row,
// as selectRuns would answer it.
func selectRevisions(d store.Dialect) string {
	return `WITH q(id) AS (` + d.TextList(1) + `)
SELECT q.id, c.revision, c.deleted,
	CASE WHEN c.revision IS NULL OR c.deleted <> 0 THEN (SELECT 1 FROM flows_runs r WHERE r.run_id = q.id) END
FROM q
LEFT JOIN flows_run_changes c ON c.run_id = q.id`
}

// withParents are the common table expressions of a statement of runs
// with their parents: q(id) holds the ids bound to $1, then the parents
// of their runs that are not among them, each once (parentsOf).
func withParents(d store.Dialect) string {
	return `a(id) AS (` + d.TextList(1) + `),
q(id) AS (SELECT a.id FROM a
	UNION ALL
	` + parentsOf("a", "TRUE") + `)`
}

// parentsOf selects the parents (execution_parent_id) of the runs whose
// ids are those of table t's rows that where holds for, each once,
// leaving out those among t's ids. Each parent is looked up by its run's
// id, t's rows joined with flows_runs in that order: SQLite keeps the
// order of a CROSS JOIN, and joined freely it scans an index of the table
// (or builds a Bloom filter over it) for a batch of a hundred runs, tenfold
// the statement's cost; PostgreSQL reads a CROSS JOIN whose condition is in
// WHERE as any join. The lookup is made once per run: as a scalar subquery
// in a derived table, both dialects pushed the outer WHERE down and made it
// two or three times.
func parentsOf(t, where string) string {
	return `SELECT DISTINCT p.execution_parent_id AS id FROM ` + t + ` CROSS JOIN flows_runs p
	WHERE p.run_id = ` + t + `.id AND ` + where + ` AND p.execution_parent_id IS NOT NULL
	  AND p.execution_parent_id NOT IN (SELECT ` + t + `.id FROM ` + t + `)`
}

// fromRevision answers id from its change row raw (selectRevisions's),
// read at pos: the run the cache holds at that revision, or, for an id
// without a live run (never seen, or a tombstone), what selectRuns's row
// of it decodes to, which has no run columns either. False when the row
// must be read whole: a run the cache does not hold at that revision, or
// anything else, a broken change row included, which is judged there.
func (c *runCache) fromRevision(raw *rawRun, id string, pos Position) (Result[Snapshot], bool) {
	return c.fromRevisionCounted(raw, id, pos, true)
}

// fromRevisionCounted is fromRevision, counting the run answered only when
// countHit says so: a caller that may yet discard what it answers counts
// it itself. A run not held at its revision is a miss either way: its row
// will be read.
func (c *runCache) fromRevisionCounted(raw *rawRun, id string, pos Position, countHit bool) (Result[Snapshot], bool) {
	r, okRev := toInt(raw.revision)
	d, okDel := toInt(raw.deleted)
	switch {
	case okRev && okDel && d == 0 && r >= 1 && r <= pos.Revision:
		run, ok := c.get(pos, id, r, countHit)
		if !ok {
			c.misses.Add(1)
			return Result[Snapshot]{}, false
		}
		return Result[Snapshot]{Value: run}, true
	case (raw.revision == nil || okDel && d != 0) && raw.runID == nil:
		raw.id = id
		v, err := raw.decode(pos)
		return Result[Snapshot]{Value: v, Err: err}, true
	}
	return Result[Snapshot]{}, false
}
