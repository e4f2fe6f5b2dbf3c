package snapshot

import (
	"context"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/flowsnap/flowsnap/access"
	"github.com/flowsnap/flowsnap/fault"
)

// What a list or a count of runs costs (docs/contract.md#cost-model): the
// index entries its statement will visit, not only the runs it returns.
// Each branch of a filter (one per combination of its list values) walks
// one range of one index. When every term of the filter is part of that
// range (the index's equality columns and the range of its order), the
// walk stops after the rows it returns: a page of n visits n+1 entries per
// branch, a count up to n visits n+1. A term no index of the walk serves
// (a second equality, cancelRequested beside a status, a heartbeat bound)
// is checked row by row, and the walk may visit the whole range before it
// finds a match: it is costed at every run of the store (RunEstimate).

// MaxBranches bounds the branches of one filter: the product of the
// lengths of its status and waitingKind lists.
const MaxBranches = 16

// EntriesPerRun is how many index entries visited cost what one run read
// does.
const EntriesPerRun = 100

// Scan is what a filter's statement will walk.
type Scan struct {
	// Branches is how many index ranges it walks.
	Branches int
	// Served says the ranges serve every term of the filter, so that the
	// walk stops after the rows it returns.
	Served bool
}

// servedBy are the equality terms of each index on flows_runs whose
// trailing columns are an order's key (store/migrations), by the column of
// that key; a filter is served when the terms of its branches are exactly
// one of them.
var servedBy = map[string][]string{
	"created_at_ms": {
		"", "status", "flowName", "flowName,status", "parentRunId", "executionParentId",
		"rootsOnly", "lineageId", "waitingReason", "waitingKind", "cancelRequested",
	},
	"finished_at_ms": {"", "status", "flowName", "flowName,status"},
}

// countKey is the column a count of f walks its index in the order of:
// finish time for a finish window without a creation range, else creation
// time, as every index of flows_runs ends with one of them.
func (f RunFilter) countKey() string {
	if (f.FinishedAfter != nil || f.FinishedBefore != nil) && f.CreatedAfter == nil && f.CreatedBefore == nil {
		return "finished_at_ms"
	}
	return createdKey.column
}

// ScanOf returns what a list of f in order o (or, with count set, a count
// of f) walks, for a principal of scope (docs/contract.md#scopes; none
// given: every run). A scope of a few exact names makes a branch of each
// name, served by the flow name indexes; any other scope is a condition
// checked row by row.
func ScanOf(f RunFilter, o RunOrder, count bool, scope ...access.Scope) Scan {
	f = f.canonical()
	k := o.key()
	if count {
		k = key{column: f.countKey()}
	}
	s := Scan{Branches: max(1, len(f.Status)) * max(1, len(f.WaitingKind))}
	var eq []string
	residual := false
	on := func(set bool, name string) {
		if set {
			eq = append(eq, name)
		}
	}
	on(len(f.Status) > 0, "status")
	on(f.FlowName != nil, "flowName")
	on(f.ParentRunID != nil, "parentRunId")
	on(f.ExecutionParentID != nil, "executionParentId")
	on(f.LineageID != nil, "lineageId")
	on(f.WaitingReason != nil, "waitingReason")
	on(len(f.WaitingKind) > 0, "waitingKind")
	on(f.RootsOnly != nil && *f.RootsOnly, "rootsOnly")
	on(f.CancelRequested != nil && *f.CancelRequested, "cancelRequested")
	// cancelRequested false is the complement of a partial index, and a
	// heartbeat bound has no index: both are checked row by row.
	residual = residual || (f.CancelRequested != nil && !*f.CancelRequested) || f.HeartbeatBefore != nil
	// A range on the other time column than the order's is checked row by
	// row too.
	created := f.CreatedAfter != nil || f.CreatedBefore != nil
	finished := f.FinishedAfter != nil || f.FinishedBefore != nil
	if k.column == "finished_at_ms" {
		residual = residual || created
	} else {
		residual = residual || finished
	}
	if len(scope) > 0 {
		switch scopeOfFilter(scope[0], f, s.Branches) {
		case scopeBranches:
			s.Branches *= len(scope[0].Exact)
			eq = append(eq, "flowName")
		case scopeExpand:
			// Costed as the most branches its flow names may make;
			// prefixes that cover more names are checked row by row,
			// bounded by the statement timeout.
			s.Branches = MaxBranches
			eq = append(eq, "flowName")
		case scopeShared:
			residual = true
		}
	}
	sort.Strings(eq)
	s.Served = !residual && slices.Contains(servedBy[k.column], strings.Join(eq, ","))
	return s
}

// check refuses a filter of more than MaxBranches branches.
func (s Scan) check() error {
	if s.Branches > MaxBranches {
		return fault.Errorf(fault.BadUserInput, "the filter makes %d index ranges (its status values times its waitingKind values); at most %d: split it into several lists or counts", s.Branches, MaxBranches)
	}
	return nil
}

// ListCost is what a page of first runs of filter f in order o costs,
// each run's selection costing child, for a principal of scope (none
// given: every run).
func (r *Reader) ListCost(f RunFilter, o RunOrder, first, child int, scope ...access.Scope) int {
	s := ScanOf(f, o, false, scope...)
	// The rows returned are the page's own cost; the other branches'
	// pages are read and merged too.
	extra := int64(s.Branches-1) * int64(first+1)
	if !s.Served {
		extra = int64(s.Branches) * max(r.RunEstimate(), int64(first+1))
	}
	return clampCost(1 + int64(first)*int64(child) + extra/EntriesPerRun)
}

// CountCost is what a count of filter f up to upTo costs, for a principal
// of scope (none given: every run).
func (r *Reader) CountCost(f RunFilter, upTo int64, scope ...access.Scope) int {
	s := ScanOf(f, "", true, scope...)
	visited := int64(s.Branches) * upTo
	if !s.Served {
		visited = int64(s.Branches) * max(r.RunEstimate(), upTo)
	}
	return clampCost(1 + visited/EntriesPerRun)
}

func clampCost(c int64) int { return int(min(c, 1<<40)) }

// RunEstimate is how many runs the store held when last counted
// (RefreshRunEstimate); 0 before, and for a nil Reader.
func (r *Reader) RunEstimate() int64 {
	if r == nil {
		return 0
	}
	return r.runs.Load()
}

// RefreshRunEstimate counts the store's runs, in a read of its own, for
// the cost of walks an index cannot stop early.
func (r *Reader) RefreshRunEstimate(ctx context.Context) error {
	ctx, rd := r.Begin(ctx)
	defer rd.End()
	var n int64
	err := rd.do(ctx, func(q *querier) error {
		return q.each(`SELECT count(*) FROM flows_runs`, nil, []any{&n}, "counting the store's runs", func() error { return nil })
	})
	if err == nil {
		r.runs.Store(n)
	}
	return err
}

// KeepRunEstimate counts the store's runs now and then every interval
// until ctx ends (see RefreshRunEstimate); a failed count keeps the last.
func (r *Reader) KeepRunEstimate(ctx context.Context, every time.Duration) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for ctx.Err() == nil {
		cctx, cancel := context.WithTimeout(ctx, every)
		_ = r.RefreshRunEstimate(cctx)
		cancel()
		select {
		case <-ctx.Done():
		case <-tick.C:
		}
	}
}
