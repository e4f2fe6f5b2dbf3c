package snapshot

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/flowsnap/flowsnap/cursor"
	"github.com/flowsnap/flowsnap/fault"
	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/vocab"
)

// RunFilter selects runs (docs/contract.md#listing). Fields combine with AND, the values of a
// list with OR; a nil field does not filter. An empty list, or a created
// range that is empty, selects nothing.
type RunFilter struct {
	Status            []vocab.Status
	FlowName          *string
	ParentRunID       *string
	ExecutionParentID *string
	// LineageID selects every round of a lineage, round 0 included.
	LineageID     *string
	WaitingReason *string
	WaitingKind   []vocab.WaitingKind
	// CreatedAfter and CreatedBefore bound created_at_ms to [after, before).
	CreatedAfter  *Millis
	CreatedBefore *Millis
	// RootsOnly, when true, selects the runs without an effective parent;
	// false does not filter.
	RootsOnly *bool
	// CancelRequested true selects the runs whose cancellation was requested
	// and that have not finished; false the others.
	CancelRequested *bool
	// HeartbeatBefore selects running runs whose last heartbeat is before
	// it: stale workers.
	HeartbeatBefore *Millis
	// FinishedAfter and FinishedBefore bound finished_at_ms to [after,
	// before): a run not finished is in no such range. They are left out
	// of a cursor's digest when nil, so that the cursors of lists without
	// them keep the digest they had before these fields existed.
	FinishedAfter  *Millis `json:",omitempty"`
	FinishedBefore *Millis `json:",omitempty"`
}

// RunOrder orders a list of runs: by (created_at_ms, run id) either way, or
// the finished runs only by (finished_at_ms, run id), newest first.
type RunOrder string

// The orders of a list.
const (
	NewestFirst RunOrder = "NEWEST_FIRST"
	OldestFirst RunOrder = "OLDEST_FIRST"
	// FinishedNewestFirst lists the finished runs only (finished_at_ms
	// set), the latest finished first; edges' ordinals are finished_at_ms.
	FinishedNewestFirst RunOrder = "FINISHED_NEWEST_FIRST"
)

// RunOrders are the orders of a list, as the API names them.
var RunOrders = []RunOrder{NewestFirst, OldestFirst, FinishedNewestFirst}

// key is an order as SQL sees it: the column of the keyset (with run_id
// after it) and its direction.
type key struct {
	column string
	desc   bool
}

var createdKey = key{"created_at_ms", false}

func (o RunOrder) key() key {
	switch o {
	case NewestFirst:
		return key{"created_at_ms", true}
	case FinishedNewestFirst:
		return key{"finished_at_ms", true}
	}
	return createdKey
}

// ListRequest asks for one page of runs by filter.
type ListRequest struct {
	Filter RunFilter
	// Order is NewestFirst when empty.
	Order RunOrder
	// First is the page size, 1..MaxPageSize; nil means DefaultPageSize.
	First *int
	// After is the cursor of the edge to continue after; nil means the start.
	After *string
}

// RunCount is how many runs a filter selects, counted up to a bound.
type RunCount struct {
	// Count is the number of runs, at most the bound asked for.
	Count int64
	// Capped says that more runs than the bound match.
	Capped bool
}

// Bounds of CountRuns: the default, and the largest it takes.
const (
	DefaultCountUpTo = 10_000
	MaxCountUpTo     = 1_000_000
)

// canonical is a filter in one spelling: list values deduplicated and
// sorted, filters that select everything dropped, so that two spellings of
// one list share their cursors.
func (f RunFilter) canonical() RunFilter {
	// An empty list stays empty (it selects nothing), not nil.
	if len(f.Status) > 0 {
		f.Status = slices.Compact(slices.Sorted(slices.Values(f.Status)))
	}
	if len(f.WaitingKind) > 0 {
		f.WaitingKind = slices.Compact(slices.Sorted(slices.Values(f.WaitingKind)))
	}
	if f.RootsOnly != nil && !*f.RootsOnly {
		f.RootsOnly = nil
	}
	return f
}

// digest is what a list cursor is bound to: the canonical filter and order.
func digest(f RunFilter, o RunOrder) string {
	b, _ := json.Marshal(struct {
		F RunFilter
		O RunOrder
	}{f, o}) // plain values always marshal
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16])
}

// check refuses ids that are not identifiers.
func (f RunFilter) check() error {
	for _, id := range []struct {
		name string
		v    *string
	}{{"parentRunId", f.ParentRunID}, {"executionParentId", f.ExecutionParentID}, {"lineageId", f.LineageID}} {
		if id.v != nil {
			if err := vocab.CheckID("an id", *id.v); err != nil {
				return fmt.Errorf("filter %s: %w", id.name, err)
			}
		}
	}
	return nil
}

// empty reports whether f selects nothing whatever the store holds.
func (f RunFilter) empty() bool {
	return (f.Status != nil && len(f.Status) == 0) ||
		(f.WaitingKind != nil && len(f.WaitingKind) == 0) ||
		(f.CreatedAfter != nil && f.CreatedBefore != nil && *f.CreatedAfter >= *f.CreatedBefore) ||
		(f.FinishedAfter != nil && f.FinishedBefore != nil && *f.FinishedAfter >= *f.FinishedBefore)
}

// listQuery is a filter as SQL: a WHERE per branch (one per combination of
// list values, each a range of one index) and the arguments they share.
type listQuery struct {
	d        store.Dialect
	args     []any
	shared   []string
	branches [][]string
}

func (l *listQuery) arg(v any) string {
	l.args = append(l.args, v)
	// Bound: a plain placeholder compared with an indexed column has an
	// analysed SQLite store prepare the page's statement again on every
	// read (store.Dialect.Bound).
	return l.d.Bound(len(l.args))
}

// where builds f's terms. Every term spells its index's expression and, for
// a partial index, its WHERE, so that both dialects' planners match them.
func (f RunFilter) where(d store.Dialect) *listQuery {
	l := &listQuery{d: d}
	add := func(term string) { l.shared = append(l.shared, term) }
	if f.FlowName != nil {
		add(d.FlowNameExpr() + " = " + l.arg(*f.FlowName))
	}
	if f.ParentRunID != nil {
		add("parent_run_id = " + l.arg(*f.ParentRunID))
	}
	if f.ExecutionParentID != nil {
		add("execution_parent_id = " + l.arg(*f.ExecutionParentID))
	}
	if f.LineageID != nil {
		add("COALESCE(lineage_id, run_id) = " + l.arg(*f.LineageID))
	}
	if f.WaitingReason != nil {
		add("waiting_reason = " + l.arg(*f.WaitingReason))
	}
	if f.CreatedAfter != nil {
		add("created_at_ms >= " + l.arg(int64(*f.CreatedAfter)))
	}
	if f.CreatedBefore != nil {
		add("created_at_ms < " + l.arg(int64(*f.CreatedBefore)))
	}
	if f.FinishedAfter != nil {
		add("finished_at_ms >= " + l.arg(int64(*f.FinishedAfter)))
	}
	if f.FinishedBefore != nil {
		add("finished_at_ms < " + l.arg(int64(*f.FinishedBefore)))
	}
	if f.RootsOnly != nil && *f.RootsOnly {
		add("execution_parent_id IS NULL")
	}
	if f.CancelRequested != nil {
		if *f.CancelRequested {
			add(store.CancelPendingCond)
		} else {
			add("NOT (" + store.CancelPendingCond + ")")
		}
	}
	if f.HeartbeatBefore != nil {
		add("status = 'running'")
		add("heartbeat_at_ms < " + l.arg(int64(*f.HeartbeatBefore)))
	}
	// One branch per combination of list values: an equality on the leading
	// column of an index is a range, an OR of them is not.
	l.branches = [][]string{nil}
	if f.Status != nil {
		l.branches = l.cross(l.branches, len(f.Status), func(i int) string { return "status = " + l.arg(string(f.Status[i])) })
	}
	if f.WaitingKind != nil {
		l.branches = l.cross(l.branches, len(f.WaitingKind), func(i int) string {
			return "waiting_reason IS NOT NULL AND " + store.WaitingKindExpr + " = " + l.arg(string(f.WaitingKind[i]))
		})
	}
	return l
}

func (l *listQuery) cross(branches [][]string, n int, term func(int) string) [][]string {
	terms := make([]string, n)
	for i := range terms {
		terms[i] = term(i)
	}
	var out [][]string
	for _, b := range branches {
		for _, t := range terms {
			out = append(out, append(slices.Clone(b), t))
		}
	}
	return out
}

// limit is a list page's LIMIT: spelled where a generic plan would
// misread a bound one (store.Dialect.SpellsLimits), so that the page is
// planned as the page it is, at the price of a statement per page size
// (at most MaxPageSize+1 of them); bound elsewhere.
func (l *listQuery) limit(n int) string {
	if l.d.SpellsLimits() {
		return strconv.Itoa(n)
	}
	return l.arg(n)
}

// order returns the terms that place a page of k after the cursor after
// when it is set, its ORDER BY ... LIMIT, whose columns t ("" or "alias.")
// qualifies, and the LIMIT's value.
func (l *listQuery) order(k key, after *cursor.Cursor, limit int, t string) (terms []string, orderBy, lim string) {
	cmp, dir, bound := ">", "", ">="
	if k.desc {
		cmp, dir, bound = "<", " DESC", "<="
	}
	col := k.column
	if col != createdKey.column {
		// Only finished runs have a finish time to order by.
		terms = append(terms, col+" IS NOT NULL")
	}
	if after != nil {
		// SQLite does not seek an expression index with a row value, only
		// with a plain bound: the column's bound repeats on its own.
		o, id := l.arg(after.Ordinal), l.arg(after.Last)
		terms = append(terms, col+" "+bound+" "+o, "("+col+", run_id) "+cmp+" ("+o+", "+id+")")
	}
	lim = l.limit(limit)
	return terms, " ORDER BY " + t + col + dir + ", " + t + "run_id" + dir + " LIMIT " + lim, lim
}

// whereOf returns the WHERE of l's shared terms, a branch's and more.
func (l *listQuery) whereOf(branch, more []string) string {
	terms := append(append(slices.Clone(l.shared), branch...), more...)
	if len(terms) == 0 {
		return ""
	}
	return "\nWHERE " + strings.Join(terms, "\n  AND ")
}

// keyset returns the SELECT of run ids in the order of k, after (ord,
// last) when after, at most limit of them, one sub-select per branch.
func (l *listQuery) keyset(k key, after *cursor.Cursor, limit int) string {
	keyTerms, orderBy, lim := l.order(k, after, limit, "")
	sel := func(branch []string) string {
		return "SELECT " + k.column + " AS ord, run_id AS id FROM flows_runs" + l.whereOf(branch, keyTerms) + orderBy
	}
	if len(l.branches) == 1 {
		return sel(l.branches[0])
	}
	parts := make([]string, len(l.branches))
	for i, b := range l.branches {
		parts[i] = fmt.Sprintf("SELECT ord, id FROM (%s) AS b%d", sel(b), i)
	}
	dir := ""
	if k.desc {
		dir = " DESC"
	}
	// The branches are disjoint; merging their pages costs a sort of at
	// most (branches × limit) rows, never of the table.
	return "SELECT ord, id FROM (" + strings.Join(parts, "\nUNION ALL\n") + ") AS u ORDER BY ord" + dir + ", id" + dir + " LIMIT " + lim
}

// page returns the statement of a page of l's runs in the order of k,
// after (ord, last) when after, at most limit of them, in l's dialect.
// Where the dialect reads a range's rows in it (store.Dialect.ReadsRanges)
// and l is one range, the statement reads the page's runs in that range,
// each joined to its change by primary key: one index scan that stops
// after limit rows. Otherwise it joins the runs by primary key to the
// keyset of their ids (keyset).
func (l *listQuery) page(k key, after *cursor.Cursor, limit int) string {
	if !l.d.ReadsRanges() || len(l.branches) != 1 {
		return runsIn(l.d, listStatement(l.keyset(k, after, limit)))
	}
	keyTerms, orderBy, _ := l.order(k, after, limit, "r.")
	// The change's run_id is renamed, so that the filter's terms, which
	// name the runs' columns bare, name them alone.
	return runsIn(l.d, `SELECT r.`+k.column+` AS ord, `+rangeColumns+`
FROM flows_runs r
LEFT JOIN flows_run_changes AS c (changed_run_id) ON c.changed_run_id = r.run_id`+l.whereOf(l.branches[0], keyTerms)+orderBy)
}

// countSelect returns a SELECT of at most limit rows of the runs l
// selects, one sub-select per branch: what a bounded count counts. Each
// is ordered by col, the filter's countKey, which the index holding the
// filter's range (the finish indexes for a finish window) ends with: so
// the planner reads that index and stops after limit entries, where
// without an order it may scan the table until limit rows match (or all
// of it when they are few), as PostgreSQL's generic plans did. The limit
// stays bound: a count's bound is any number up to MaxCountUpTo.
func (l *listQuery) countSelect(col string, limit int) string {
	lim := l.arg(limit)
	sel := func(terms []string) string {
		terms = append(slices.Clone(l.shared), terms...)
		where := ""
		if len(terms) > 0 {
			where = "\nWHERE " + strings.Join(terms, "\n  AND ")
		}
		return "SELECT 1 AS one FROM flows_runs" + where + " ORDER BY " + col + " LIMIT " + lim
	}
	if len(l.branches) == 1 {
		return sel(l.branches[0])
	}
	parts := make([]string, len(l.branches))
	for i, b := range l.branches {
		parts[i] = fmt.Sprintf("SELECT one FROM (%s) AS b%d", sel(b), i)
	}
	// The branches are disjoint: limit rows of their union are the count's.
	return "SELECT one FROM (" + strings.Join(parts, "\nUNION ALL\n") + ") AS u LIMIT " + lim
}

// rangeColumns are runColumns as a page read in its range names them:
// the run's id is its row's.
var rangeColumns = strings.ReplaceAll(runColumns, "q.id", "r.run_id")

func listStatement(keyset string) string {
	// The runs are joined by primary key; the page is put in order in Go,
	// so that the statement has no sort beyond its index scans.
	return `SELECT q.ord, ` + runColumns + `
FROM (` + keyset + `) AS q
LEFT JOIN flows_run_changes c ON c.run_id = q.id
LEFT JOIN flows_runs r ON r.run_id = q.id`
}

// ListRuns reads one page of the runs req.Filter selects, in req.Order, in
// the read carried by ctx (or a read of its own), edges and runs in one
// statement. Edges' ordinals are the runs' created_at_ms, or finished_at_ms
// in FinishedNewestFirst. It fails with BAD_USER_INPUT for a page size
// outside 1..MaxPageSize, an order it does not know or a malformed id in
// the filter, BAD_CURSOR for a cursor of another store, filter or order,
// and PERSISTENCE_FAILED or TIMEOUT as any read.
func (r *Reader) ListRuns(ctx context.Context, req ListRequest) (*Page, error) {
	size, err := pageSize(req.First)
	if err != nil {
		return nil, err
	}
	if req.Order == "" {
		req.Order = NewestFirst
	}
	if !slices.Contains(RunOrders, req.Order) {
		return nil, fault.Errorf(fault.BadUserInput, "order %s is not one of %v", vocab.Quote(string(req.Order)), RunOrders)
	}
	if err := req.Filter.check(); err != nil {
		return nil, err
	}
	f := req.Filter.canonical()
	if err := ScanOf(f, req.Order, false).check(); err != nil {
		return nil, err
	}
	scope := scopeOf(ctx)
	anchor := scopedAnchor(digest(f, req.Order), scope.Key())
	var page *Page
	err = r.with(ctx, func(q *querier) error {
		var after *cursor.Cursor
		if req.After != nil {
			pos, err := q.position()
			if err != nil {
				return err
			}
			c, err := cursor.DecodeFor(*req.After, pos.Source, anchor, cursor.List)
			if err == nil {
				err = notBefore(c, pos)
			}
			if err != nil {
				return err
			}
			after = &c
		}
		page = &Page{}
		if f.empty() {
			return nil
		}
		l := f.where(q.dialect())
		scope, err := q.expand(scope, f, len(l.branches))
		if err != nil {
			return err
		}
		if !l.scoped(scope, f) {
			return nil
		}
		if c := q.listCache(); c != nil {
			return q.cachedListPage(c, page, listRevisions(l.keyset(req.Order.key(), after, size+1)), l.args, size, anchor, req.Order)
		}
		return q.listPage(page, l.page(req.Order.key(), after, size+1), l.args, size, anchor, req.Order)
	})
	return page, err
}

func (q *querier) listPage(page *Page, sql string, args []any, size int, anchor string, order RunOrder) error {
	rows, err := q.limited(sql, args...)
	if err != nil {
		return persistenceUnlessCoded(err, "listing runs")
	}
	defer rows.Close()
	var ord int64
	var raw rawRun
	scope := scopeOf(q.ctx)
	dest := append([]any{&ord}, raw.dest()...)
	for rows.Next() {
		raw = rawRun{}
		if err := rows.Scan(dest...); err != nil {
			return persistence(err, "listing runs")
		}
		raw.id = raw.rowID()
		snap, err := raw.decode(q.pos())
		snap, err = show(scope, snap, err)
		page.Edges = append(page.Edges, q.listEdge(anchor, ord, raw.id, Result[Snapshot]{Value: snap, Err: err}))
	}
	if err := rows.Err(); err != nil {
		return persistenceUnlessCoded(err, "listing runs")
	}
	page.settle(size, order)
	return nil
}

// listEdge is the edge of a list's run id at ord, its cursor at the read's
// position.
func (q *querier) listEdge(anchor string, ord int64, id string, node Result[Snapshot]) Edge {
	c := cursor.Encode(cursor.Cursor{Source: q.pos().Source, Anchor: anchor, Kind: cursor.List, Ordinal: ord, Last: id, Revision: q.pos().Revision})
	return Edge{Cursor: c, Ordinal: ord, RunID: id, Node: node}
}

// listRevisions is a list page's statement for a reader with a run cache:
// the page's ordinals and ids with their change rows alone, as
// selectRevisions reads a batch's, four columns where listStatement reads
// thirty (a run's row costs several times its change row).
func listRevisions(keyset string) string {
	return `SELECT q.ord, q.id, c.revision, c.deleted,
	CASE WHEN c.revision IS NULL OR c.deleted <> 0 THEN (SELECT 1 FROM flows_runs r WHERE r.run_id = q.id) END
FROM (` + keyset + `) AS q
LEFT JOIN flows_run_changes c ON c.run_id = q.id`
}

// listCache returns the reader's run cache when a list page may be read
// through it: a page whose runs it does not hold at their revisions needs
// a second statement (see mayReadAgain).
func (q *querier) listCache() *runCache {
	c := q.rd.r.revisionCache()
	if c == nil || !q.mayReadAgain() {
		return nil
	}
	return c
}

// cachedListPage reads a list page through the run cache c: the ids and
// change rows of the page (listRevisions's statement, under the statement
// limit), the runs c holds at those revisions from c, and the rest in one
// statement by id, as a batch reads them.
func (q *querier) cachedListPage(c *runCache, page *Page, sql string, args []any, size int, anchor string, order RunOrder) error {
	var ord int64
	var raw rawRun
	var misses []string
	var missAt []int
	scope := scopeOf(q.ctx)
	dest := append([]any{&ord}, raw.revisionDest()...)
	err := q.eachOf(q.limited, sql, args, dest, "listing runs", func() error {
		id := raw.rowID()
		res, ok := c.fromRevision(&raw, id, q.pos())
		if !ok {
			misses, missAt = append(misses, id), append(missAt, len(page.Edges))
		}
		page.Edges = append(page.Edges, q.listEdge(anchor, ord, id, showResult(scope, res)))
		raw = rawRun{}
		return nil
	})
	if err != nil {
		return err
	}
	if len(misses) > 0 {
		b := newIDRuns(misses, scope)
		if err := q.decodedRuns(b, b.distinct, q.rd.r.selectRuns); err != nil {
			return err
		}
		res, _ := b.results()
		for i, at := range missAt {
			page.Edges[at].Node = res[i]
		}
	}
	page.settle(size, order)
	return nil
}

// settle puts a list page's edges in order (the statement leaves that to
// Go, so that it has no sort beyond its index scans) and cuts it to size.
func (page *Page) settle(size int, order RunOrder) {
	sort.Slice(page.Edges, func(i, j int) bool {
		a, b := page.Edges[i], page.Edges[j]
		less := a.Ordinal < b.Ordinal || (a.Ordinal == b.Ordinal && a.RunID < b.RunID)
		if order.key().desc {
			return !less
		}
		return less
	})
	if len(page.Edges) > size {
		page.Edges = page.Edges[:size]
		page.PageInfo.HasNextPage = true
	}
	if n := len(page.Edges); n > 0 {
		page.PageInfo.EndCursor = &page.Edges[n-1].Cursor
	}
}

// CountRuns counts the runs filter selects, up to upTo (0..MaxCountUpTo), in
// the read carried by ctx: it reads at most upTo+1 index entries, so its cost
// is bounded by upTo whatever the store holds.
func (r *Reader) CountRuns(ctx context.Context, filter RunFilter, upTo int64) (RunCount, error) {
	if upTo < 0 || upTo > MaxCountUpTo {
		return RunCount{}, fault.Errorf(fault.BadUserInput, "upTo must be between 0 and %d, got %d", MaxCountUpTo, upTo)
	}
	if err := filter.check(); err != nil {
		return RunCount{}, err
	}
	f := filter.canonical()
	if err := ScanOf(f, "", true).check(); err != nil {
		return RunCount{}, err
	}
	var out RunCount
	err := r.with(ctx, func(q *querier) error {
		if f.empty() {
			return nil
		}
		l := f.where(q.dialect())
		scope, err := q.expand(scopeOf(ctx), f, len(l.branches))
		if err != nil {
			return err
		}
		if !l.scoped(scope, f) {
			return nil
		}
		var n int64
		sql := "SELECT count(*) FROM (" + l.countSelect(f.countKey(), int(upTo)+1) + ") AS k"
		if err := q.eachOf(q.limited, sql, l.args, []any{&n}, "counting runs", func() error { return nil }); err != nil {
			return err
		}
		out = RunCount{Count: min(n, upTo), Capped: n > upTo}
		return nil
	})
	return out, err
}
