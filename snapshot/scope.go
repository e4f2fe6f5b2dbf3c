package snapshot

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/flowsnap/flowsnap/access"
	"github.com/flowsnap/flowsnap/fault"
	"github.com/flowsnap/flowsnap/store"
)

// A read shows only the runs in the scope of the principal its context
// carries (docs/contract.md#scopes): a run outside it reads as a run that
// never existed, wherever it surfaces, and lists, counts and feeds leave it
// out in SQL, before their limits. A run whose flow is not known — a
// tombstone, or a row that does not decode — is seen only by a scope of
// every run, since no pattern can be checked against it.

// scopeOf is the scope of the principal ctx carries: every run when it
// carries none (a server without authentication, or the server's own reads).
func scopeOf(ctx context.Context) access.Scope {
	return access.FromContext(ctx).Scope()
}

// show is what a read in scope s shows of a snapshot decoded as (snap, err).
func show(s access.Scope, snap Snapshot, err error) (Snapshot, error) {
	if s.All {
		return snap, err
	}
	if err != nil {
		var fe *fault.Error
		if errors.As(err, &fe) && fe.Code == fault.DecodeFailed && fe.RunID != "" {
			return &Missing{ID: fe.RunID}, nil
		}
		return snap, err
	}
	switch v := snap.(type) {
	case *Run:
		if s.Sees(v.FlowName, true) {
			return v, nil
		}
		return &Missing{ID: v.ID}, nil
	case *Missing:
		if v.Deleted {
			return &Missing{ID: v.ID}, nil
		}
	}
	return snap, nil
}

// showResult is show of a Result.
func showResult(s access.Scope, r Result[Snapshot]) Result[Snapshot] {
	r.Value, r.Err = show(s, r.Value, r.Err)
	return r
}

// showEdges applies show to the nodes of a page's edges.
func showEdges(s access.Scope, edges []Edge) {
	if s.All {
		return
	}
	for i := range edges {
		edges[i].Node = showResult(s, edges[i].Node)
	}
}

// scopeFilter is a scope as SQL terms over flows_runs, for a statement that
// selects runs by filter: what scoped lists, counts, stats, activity and
// the change feed add to their WHERE. It is the one place the scope
// becomes SQL.
type scopeFilter struct {
	// none says that the scope admits no run of the statement at all.
	none bool
	// names are exact flow names, each an equality on the flow name
	// index: a statement may make one branch of each.
	names []string
	// term is the whole scope as one condition ("" for none needed), its
	// placeholders numbered from the arguments given to scopeTerms.
	term string
}

// scopeTerms spells scope s over the flow name of a run in dialect d, its
// arguments added through arg (which returns the placeholder of each).
// fixed, when set, is a flow name the statement already selects by: the
// scope then is a constant, and adds no term. Exact names are an IN list on
// the flow name index's expression; a prefix is a range of the code-point
// ordered one, [prefix, successor), which both dialects seek.
func scopeTerms(d store.Dialect, s access.Scope, fixed *string, arg func(any) string) scopeFilter {
	switch {
	case s.All:
		return scopeFilter{}
	case s.None():
		return scopeFilter{none: true}
	case fixed != nil:
		return scopeFilter{none: !s.Sees(*fixed, true)}
	}
	var ors []string
	if len(s.Exact) > 0 {
		ph := make([]string, len(s.Exact))
		for i, n := range s.Exact {
			ph[i] = arg(n)
		}
		ors = append(ors, d.FlowNameExpr()+" IN ("+strings.Join(ph, ", ")+")")
	}
	key := d.FlowNameKeyExpr()
	for _, p := range s.Prefixes {
		term := key + " >= " + arg(p)
		if end, ok := prefixEnd(p); ok {
			term = fmt.Sprintf("(%s AND %s < %s)", term, key, arg(end))
		}
		ors = append(ors, term)
	}
	f := scopeFilter{term: "(" + strings.Join(ors, " OR ") + ")"}
	if len(s.Prefixes) == 0 {
		f.names = s.Exact
	}
	return f
}

// scoped adds scope s to l, a filter f as SQL: exact names as one branch
// each when the branches stay within MaxBranches (each then an equality on
// the flow name index, so that a page is still one range per branch), else
// one condition every branch shares. It reports false when nothing in
// scope can match: the statement need not run.
func (l *listQuery) scoped(s access.Scope, f RunFilter) bool {
	switch scopeOfFilter(s, f, len(l.branches)) {
	case scopeNone:
		return false
	case scopeBranches:
		l.branches = l.cross(l.branches, len(s.Exact), func(i int) string {
			return l.d.FlowNameExpr() + " = " + l.arg(s.Exact[i])
		})
	case scopeShared, scopeExpand:
		l.shared = append(l.shared, scopeTerms(l.d, s, nil, l.arg).term)
	}
	return true
}

// expand returns s with its prefixes replaced by the flow names under them
// that the store holds, read in q's snapshot by the skip scan of Flows (a
// seek per name), when those and s's exact names make at most MaxBranches
// branches of a filter of branches: then each name is a range of the flow
// name index, as a list by flowName is. Otherwise, or when s has no
// prefix, it returns s, whose prefixes the statement then checks row by
// row.
func (q *querier) expand(s access.Scope, f RunFilter, branches int) (access.Scope, error) {
	if scopeOfFilter(s, f, branches) != scopeExpand {
		return s, nil
	}
	room := MaxBranches/branches - len(s.Exact)
	names := slices.Clone(s.Exact)
	for _, p := range s.Prefixes {
		sql, args := flowsSQL(q.dialect(), p, nil, room+1)
		var name string
		if err := q.each(sql, args, []any{&name}, "listing the flows of a scope", func() error {
			names = append(names, name)
			return nil
		}); err != nil {
			return s, err
		}
		if len(names) > MaxBranches/branches {
			return s, nil
		}
	}
	slices.Sort(names)
	return access.Scope{Exact: slices.Compact(names)}, nil
}

// scopeWalk is how a filter's statement walks a scope.
type scopeWalk int

const (
	// scopeFree: the scope adds nothing (every run, or a flowName filter
	// in scope).
	scopeFree scopeWalk = iota
	// scopeNone: nothing in scope can match.
	scopeNone
	// scopeBranches: each exact name is a branch of its own, an equality
	// on the flow name index.
	scopeBranches
	// scopeShared: one condition every branch checks row by row.
	scopeShared
	// scopeExpand: prefixes the store's flow names may make branches of
	// (querier.expand); a condition as scopeShared until they do.
	scopeExpand
)

// scopeOfFilter is how a filter f of branches branches walks scope s, for
// the statement (listQuery.scoped) and its cost (ScanOf) alike.
func scopeOfFilter(s access.Scope, f RunFilter, branches int) scopeWalk {
	switch {
	case s.All:
		return scopeFree
	case s.None() || (f.FlowName != nil && !s.Sees(*f.FlowName, true)):
		return scopeNone
	case f.FlowName != nil:
		return scopeFree
	case len(s.Prefixes) == 0 && branches*len(s.Exact) <= MaxBranches:
		return scopeBranches
	case len(s.Prefixes) > 0 && branches*(len(s.Exact)+len(s.Prefixes)) <= MaxBranches:
		return scopeExpand
	}
	return scopeShared
}

// scopedAnchor binds a list cursor's anchor to the scope whose key is key,
// so that a cursor made in one scope is BAD_CURSOR in another; the scope
// of every run (key "") leaves it as it was.
func scopedAnchor(anchor, key string) string {
	if key == "" {
		return anchor
	}
	sum := sha256.Sum256([]byte(anchor + "\x00" + key))
	return hex.EncodeToString(sum[:16])
}

// readableTables are the tables a read of the API selects from besides
// flows_runs, whose columns selectRuns names: serve needs SELECT on each,
// and on flows_runs on every column but waiting_token
// (docs/contract.md#least-privilege).
var readableTables = []string{"flows_schema_version", "flows_run_source", "flows_run_changes", "flows_run_parents",
	"flows_steps", "flows_step_attempts", "flows_inbound_events", "flows_run_events"}

// Readable checks, in a read of its own, that the store's role may read
// everything serving reads: the position, the columns of a run read (an
// empty batch of selectRuns, which names each) and every other table (a
// statement that selects none of its rows, whose privileges are checked
// all the same). It fails with PERSISTENCE_FAILED naming what could not be
// read; a server whose role lacks a privilege would otherwise fail every
// operation that meets it. It runs a statement per table.
func (r *Reader) Readable(ctx context.Context) error {
	ctx, rd := r.Begin(ctx)
	defer rd.End()
	return rd.do(ctx, func(q *querier) error {
		if _, err := q.position(); err != nil {
			return err
		}
		var raw rawRun
		if err := q.each(r.selectRuns, []any{q.dialect().TextListArg(nil)}, raw.dest(), "reading the columns of runs", func() error { return nil }); err != nil {
			return err
		}
		for _, t := range readableTables {
			var one int64
			if err := q.each(`SELECT 1 FROM (SELECT * FROM `+t+` WHERE 1 = 0) AS t`, nil, []any{&one}, "reading "+t, func() error { return nil }); err != nil {
				return err
			}
		}
		return nil
	})
}

// flowNames reads up to limit distinct flow names beginning with prefix,
// after after (nil: from the first), in code-point order, of the runs in
// scope s: for every run, one skip scan of the flow names; else one skip
// scan per range of s that meets prefix — an exact name a seek of its own,
// a prefix the range [prefix, successor) — in order, so that the names out
// of scope are never walked, however many runs they have.
func (q *querier) flowNames(prefix string, after *string, limit int, s access.Scope) ([]string, error) {
	names := []string{}
	read := func(p string, n int) ([]string, error) {
		sql, args := flowsSQL(q.dialect(), p, after, n)
		got := []string{}
		var name string
		err := q.each(sql, args, []any{&name}, "listing flows", func() error {
			got = append(got, name)
			return nil
		})
		return got, err
	}
	if s.All {
		return read(prefix, limit)
	}
	// The ranges of a normalised scope are disjoint, so that in the order
	// of their starts their names are in order too.
	type span struct {
		from  string
		exact bool
	}
	var spans []span
	for _, n := range s.Exact {
		if strings.HasPrefix(n, prefix) {
			spans = append(spans, span{n, true})
		}
	}
	for _, p := range s.Prefixes {
		switch {
		case strings.HasPrefix(p, prefix):
			spans = append(spans, span{p, false})
		case strings.HasPrefix(prefix, p):
			spans = append(spans, span{prefix, false})
		}
	}
	slices.SortFunc(spans, func(a, b span) int { return strings.Compare(a.from, b.from) })
	for _, sp := range spans {
		if len(names) >= limit {
			break
		}
		if sp.exact && after != nil && sp.from <= *after {
			continue
		}
		n := limit - len(names)
		if sp.exact {
			n = 1
		}
		got, err := read(sp.from, n)
		if err != nil {
			return nil, err
		}
		if sp.exact {
			// The seek finds the least name beginning with the name.
			if len(got) == 1 && got[0] == sp.from {
				names = append(names, sp.from)
			}
			continue
		}
		names = append(names, got...)
	}
	return names, nil
}
