package snapshot

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/flowsnap/flowsnap/access"
	"github.com/flowsnap/flowsnap/cursor"
	"github.com/flowsnap/flowsnap/fault"
	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/vocab"
)

// StatusCount is how many runs of one status a filter selects, counted up
// to a bound (docs/contract.md#ops-api).
type StatusCount struct {
	Status vocab.Status
	// Count is the number of runs, at most the bound asked for.
	Count int64
	// Capped says that more runs than the bound match.
	Capped bool
}

// RunStats counts the runs filter selects, status by status, each up to
// upTo (0..MaxCountUpTo), in the read carried by ctx: one StatusCount per
// status of vocab.Statuses, in that order. A status the filter's status
// list leaves out counts 0. The counts are one statement, one bounded
// count per status the filter admits, each reading at most upTo+1 index
// entries, so its cost is what that many CountRuns cost. It fails as
// CountRuns does.
func (r *Reader) RunStats(ctx context.Context, filter RunFilter, upTo int64) ([]StatusCount, error) {
	if upTo < 0 || upTo > MaxCountUpTo {
		return nil, fault.Errorf(fault.BadUserInput, "upTo must be between 0 and %d, got %d", MaxCountUpTo, upTo)
	}
	if err := filter.check(); err != nil {
		return nil, err
	}
	f := filter.canonical()
	out := make([]StatusCount, len(vocab.Statuses))
	counted := StatsStatuses(f.Status)
	for i, s := range vocab.Statuses {
		out[i].Status = s
	}
	err := r.with(ctx, func(q *querier) error {
		if f.empty() || len(counted) == 0 {
			// The position is read all the same: the answer is at one.
			_, err := q.position()
			return err
		}
		// Each status is a count of its own, of the branches of the
		// filter's waiting kinds.
		scope, err := q.expand(scopeOf(ctx), f, max(1, len(f.WaitingKind)))
		if err != nil {
			return err
		}
		sql, args, ok := statsSQL(q.dialect(), f, counted, upTo, scope)
		if !ok {
			_, err := q.position()
			return err
		}
		n := make([]int64, len(counted))
		dest := make([]any, len(n))
		for i := range n {
			dest[i] = &n[i]
		}
		if err := q.each(sql, args, dest, "counting runs by status", func() error { return nil }); err != nil {
			return err
		}
		for i, s := range counted {
			at := slices.Index(vocab.Statuses, s)
			out[at].Count, out[at].Capped = min(n[i], upTo), n[i] > upTo
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// StatsStatuses are the statuses RunStats counts for a filter's status
// list: every status when the list is nil, else those in it, in the order
// of vocab.Statuses.
func StatsStatuses(list []vocab.Status) []vocab.Status {
	if list == nil {
		return vocab.Statuses
	}
	var out []vocab.Status
	for _, s := range vocab.Statuses {
		if slices.Contains(list, s) {
			out = append(out, s)
		}
	}
	return out
}

// statsSQL is the statement of RunStats: a column per status, each the
// count of a keyset bounded to upTo+1 entries, as CountRuns reads it.
// ok is false when nothing in scope can match.
func statsSQL(d store.Dialect, f RunFilter, statuses []vocab.Status, upTo int64, scope access.Scope) (string, []any, bool) {
	f.Status = nil
	l := f.where(d)
	if !l.scoped(scope, f) {
		return "", nil, false
	}
	base := l.branches
	cols := make([]string, len(statuses))
	for i, s := range statuses {
		term := "status = " + l.arg(string(s))
		l.branches = make([][]string, len(base))
		for j, b := range base {
			l.branches[j] = append(slices.Clone(b), term)
		}
		cols[i] = fmt.Sprintf("(SELECT count(*) FROM (%s) AS k%d) AS n%d", l.countSelect(f.countKey(), int(upTo)+1), i, i)
	}
	return "SELECT " + strings.Join(cols, ",\n"), l.args, true
}

// FlowPage is one page of distinct flow names.
type FlowPage struct {
	// Nodes are the names, in code-point order.
	Nodes    []string
	PageInfo PageInfo
}

// FlowsRequest asks for one page of the distinct flow names.
type FlowsRequest struct {
	// First is the page size, 1..MaxPageSize; nil means DefaultPageSize.
	First *int
	// After is the cursor of the page to continue after; nil means the start.
	After *string
	// Prefix, when set, keeps only the names that begin with it.
	Prefix *string
}

// Flows reads one page of the distinct flow names of the live runs, in
// code-point order, in the read carried by ctx (or a read of its own). The
// names are read by skipping through the flow-name index from one name to
// the next (a recursive statement, one index seek per name), never by
// scanning the runs: a page costs its size in seeks whatever the store
// holds. It fails with BAD_USER_INPUT for a page size outside
// 1..MaxPageSize or a prefix that is not valid UTF-8, BAD_CURSOR for a
// cursor of another store, kind or prefix, and PERSISTENCE_FAILED or
// TIMEOUT as any read.
func (r *Reader) Flows(ctx context.Context, req FlowsRequest) (*FlowPage, error) {
	size, err := pageSize(req.First)
	if err != nil {
		return nil, err
	}
	prefix := ""
	if req.Prefix != nil {
		prefix = *req.Prefix
	}
	if !utf8.ValidString(prefix) || strings.ContainsRune(prefix, 0) {
		return nil, fault.Errorf(fault.BadUserInput, "prefix must be valid UTF-8 without NUL")
	}
	scope := scopeOf(ctx)
	anchor := scopedAnchor(flowsDigest(prefix), scope.Key())
	var page *FlowPage
	err = r.with(ctx, func(q *querier) error {
		pos, err := q.position()
		if err != nil {
			return err
		}
		var after *string
		if req.After != nil {
			c, err := cursor.DecodeFor(*req.After, pos.Source, anchor, cursor.Flows)
			if err == nil {
				err = notBefore(c, pos)
			}
			if err != nil {
				return err
			}
			after = &c.Last
		}
		page = &FlowPage{Nodes: []string{}}
		if scope.None() {
			return nil
		}
		if page.Nodes, err = q.flowNames(prefix, after, size+1, scope); err != nil {
			return err
		}
		if len(page.Nodes) > size {
			page.Nodes, page.PageInfo.HasNextPage = page.Nodes[:size], true
		}
		if n := len(page.Nodes); n > 0 {
			start := cursor.Encode(cursor.Cursor{Source: pos.Source, Anchor: anchor, Kind: cursor.Flows, Last: page.Nodes[0], Revision: pos.Revision})
			end := cursor.Encode(cursor.Cursor{Source: pos.Source, Anchor: anchor, Kind: cursor.Flows, Last: page.Nodes[n-1], Revision: pos.Revision})
			page.PageInfo.StartCursor, page.PageInfo.EndCursor = &start, &end
		}
		return nil
	})
	return page, err
}

// flowsDigest is what a flows cursor is bound to: its list's prefix.
func flowsDigest(prefix string) string {
	sum := sha256.Sum256([]byte("flows\x00" + prefix))
	return hex.EncodeToString(sum[:16])
}

// flowsSQL is the statement of one page of Flows: a loose index scan, each
// step of the recursion one seek for the least name after the last one,
// the names beginning with prefix being the range [prefix, prefixEnd).
func flowsSQL(d store.Dialect, prefix string, after *string, limit int) (string, []any) {
	e := d.FlowNameKeyExpr()
	args := []any{prefix}
	from := e + " >= $1"
	if after != nil {
		// The prefix stays a bound of its own: every argument is used.
		args = append(args, *after)
		from += " AND " + e + " > $2"
	}
	upper := ""
	if end, ok := prefixEnd(prefix); ok {
		args = append(args, end)
		upper = fmt.Sprintf(" AND %s < $%d", e, len(args))
	}
	args = append(args, limit)
	lim := fmt.Sprintf("$%d", len(args))
	next := func(lower string) string {
		return "(SELECT " + e + " FROM flows_runs WHERE " + lower + upper + " ORDER BY " + e + " LIMIT 1)"
	}
	// The first step seeks from the prefix (or the cursor), each next one
	// from the name before; the recursion stops at the page's end or the
	// range's.
	return `WITH RECURSIVE names (name, n) AS (
  SELECT ` + next(from) + `, 1
  UNION ALL
  SELECT ` + next(e+" > names.name") + `, names.n + 1
  FROM names WHERE names.name IS NOT NULL AND names.n < ` + lim + `
)
SELECT name FROM names WHERE name IS NOT NULL`, args
}

// prefixEnd is the least string above every string that begins with p, in
// code-point order: p with its last code point below U+10FFFF raised by
// one, what follows it dropped. ok is false when there is none (p is
// empty, or only U+10FFFF): then every string at or after p begins with it.
func prefixEnd(p string) (end string, ok bool) {
	for p != "" {
		r, size := utf8.DecodeLastRuneInString(p)
		p = p[:len(p)-size]
		if r == utf8.MaxRune {
			continue
		}
		r++
		if r == 0xD800 { // surrogates are no code points of UTF-8 text
			r = 0xE000
		}
		return p + string(r), true
	}
	return "", false
}
