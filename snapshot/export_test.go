package snapshot

import (
	"github.com/flowsnap/flowsnap/access"
	"github.com/flowsnap/flowsnap/cursor"
	"github.com/flowsnap/flowsnap/store"
)

// Hooks for the tests of package snapshot_test.

// ListSQL returns the statement and arguments ListRuns reads a page of req
// with after the cursor after (nil: the first page) through a Reader as
// NewReader makes it, for tests that read its plan: on SQLite, whose
// readers have a run cache, the page's change rows (listRevisions).
func ListSQL(d store.Dialect, req ListRequest, after *cursor.Cursor) (string, []any) {
	f := req.Filter.canonical()
	if req.Order == "" {
		req.Order = NewestFirst
	}
	l := f.where(d)
	size, _ := pageSize(req.First)
	if d.InProcess() {
		return listRevisions(l.keyset(req.Order.key(), after, size+1)), l.args
	}
	return l.page(req.Order.key(), after, size+1), l.args
}

// ListDigest is the anchor of the list cursors of req.
func ListDigest(req ListRequest) string {
	if req.Order == "" {
		req.Order = NewestFirst
	}
	return digest(req.Filter.canonical(), req.Order)
}

// ListCursor is the cursor a page of req ending at (created, last) gives.
func ListCursor(source string, req ListRequest, created int64, last string) string {
	return cursor.Encode(cursor.Cursor{Source: source, Anchor: ListDigest(req), Kind: cursor.List, Ordinal: created, Last: last})
}

// PageSQL returns the statement and arguments that read one page of kind
// (children, rounds or a journal list) keyed by key after ordinal after, and
// the change feed's, for tests that read their plans.
func PageSQL(d store.Dialect, kind cursor.Kind, key string, after int64) (string, []any) {
	l, ok := runLists[kind]
	switch kind {
	case cursor.Steps:
		l, ok = stepList, true
	case cursor.InboundEvents:
		l, ok = inboundList, true
	case cursor.Events:
		l, ok = runEventList, true
	case cursor.Kind(roundsOfAnchor.name):
		l, ok = roundsOfAnchor, true
	}
	if !ok {
		return selectChanges(d), []any{after, after + 10, 11}
	}
	return l.sql(d, []pageWant{{key: key, after: cursor.Cursor{Ordinal: after, Last: ""}, size: 10}})
}

// TakeLane takes every place of the reader's lane of expensive statements
// (see SetStatementLimit) and returns the function that gives them back.
func TakeLane(r *Reader) func() {
	for range cap(r.lane) {
		r.lane <- struct{}{}
	}
	return func() {
		for range cap(r.lane) {
			<-r.lane
		}
	}
}

// ActivitySQL returns the statement and arguments RunActivity reads req
// with, for tests that read its plan.
func ActivitySQL(d store.Dialect, req ActivityRequest) (string, []any) {
	args := []any{int64(req.Since), int64(req.Until), int64(req.Bucket)}
	if req.FlowName != nil {
		args = append(args, *req.FlowName)
	}
	return activityStatement(d, req.FlowName != nil), args
}

// CountSQL returns the statement and arguments CountRuns counts filter with.
func CountSQL(d store.Dialect, filter RunFilter, upTo int) (string, []any) {
	f := filter.canonical()
	l := f.where(d)
	return "SELECT count(*) FROM (" + l.countSelect(f.countKey(), upTo+1) + ") AS k", l.args
}

// StatsSQL returns the statement and arguments RunStats counts filter with.
func StatsSQL(d store.Dialect, filter RunFilter, upTo int64) (string, []any) {
	f := filter.canonical()
	sql, args, _ := statsSQL(d, f, StatsStatuses(f.Status), upTo, access.Everyone.Scope())
	return sql, args
}

// FlowsSQL returns the statement and arguments of a page of Flows.
func FlowsSQL(d store.Dialect, prefix string, after *string, limit int) (string, []any) {
	return flowsSQL(d, prefix, after, limit)
}

// FlowsCursor is the cursor a page of flows of prefix ending at last gives.
func FlowsCursor(source, prefix, last string) string {
	return cursor.Encode(cursor.Cursor{Source: source, Anchor: flowsDigest(prefix), Kind: cursor.Flows, Last: last})
}

// PrefixEnd is prefixEnd, for its tests.
var PrefixEnd = prefixEnd

// ScopedListSQL is ListSQL at the start of the list, for a principal of
// scope s, whose prefixes are taken as they are (querier.expand turns them
// into names first when it can: pass the names to see that statement).
func ScopedListSQL(d store.Dialect, req ListRequest, s access.Scope) (string, []any) {
	f := req.Filter.canonical()
	if req.Order == "" {
		req.Order = NewestFirst
	}
	l := f.where(d)
	l.scoped(s, f)
	size, _ := pageSize(req.First)
	return runsIn(d, listStatement(l.keyset(req.Order.key(), nil, size+1))), l.args
}

// RunsAndParentsSQL returns the statement and arguments RunsAndParents
// reads a few ids and their parents with.
func RunsAndParentsSQL(d store.Dialect, ids []string) (string, []any) {
	return selectRunsAndParents(d), []any{d.TextListArg(ids)}
}

// DashboardSQL returns the statement and arguments that read a run, its
// children and its rounds (pages of 10), and the parents of them all, as
// RunsPagesAndParents does for a dashboard.
func DashboardSQL(d store.Dialect, anchor string) (string, []any) {
	wants := []pageWant{
		{req: 0, l: runLists[cursor.Children], key: anchor, after: cursor.Cursor{Ordinal: -1}, size: 10},
		{req: 1, l: roundsOfAnchor, key: anchor, after: cursor.Cursor{Ordinal: -1}, size: 10},
	}
	return pagesSQL(d, runPages, wants, []string{anchor}, Parents{OfRuns: true, OfPages: true}.of())
}

// RunsSQL returns the statement and arguments Runs reads ids with.
func RunsSQL(d store.Dialect, ids []string) (string, []any) {
	return selectRuns(d), []any{d.TextListArg(ids)}
}
