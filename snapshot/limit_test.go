package snapshot_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/flowsnap/flowsnap/access"
	"github.com/flowsnap/flowsnap/fault"
	"github.com/flowsnap/flowsnap/snapshot"
	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/storetest"
	"github.com/flowsnap/flowsnap/store/vocab"
)

func TestExpensiveStatementsWaitInTheirOwnLaneAndNoLongerThanTheirLimit(t *testing.T) {
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		f := listFixture(t, d, 200)
		f.r.SetStatementLimit(300*time.Millisecond, 2)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		// Within the lane, lists and counts are read.
		if page, err := f.r.ListRuns(ctx, snapshot.ListRequest{First: ptr(5)}); err != nil || len(page.Edges) != 5 {
			t.Fatalf("a list in a free lane: %v", err)
		}
		giveBack := snapshot.TakeLane(f.r)
		defer func() { giveBack() }()
		start := time.Now()
		_, err := f.r.ListRuns(ctx, snapshot.ListRequest{Filter: snapshot.RunFilter{Status: []vocab.Status{vocab.StatusCompleted}}, First: ptr(1)})
		wantCode(t, err, fault.Timeout)
		_, err = f.r.CountRuns(ctx, snapshot.RunFilter{}, 1000)
		wantCode(t, err, fault.Timeout)
		if took := time.Since(start); took < 500*time.Millisecond || took > 5*time.Second {
			t.Fatalf("two statements waiting for a full lane of 300ms took %s", took)
		}
		// A cheap read does not wait for the lane.
		start = time.Now()
		if _, err := f.r.Runs(ctx, []string{"tie-a"}); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took > 250*time.Millisecond {
			t.Fatalf("a read by id took %s beside a full lane", took)
		}
		giveBack()
		giveBack = func() {}
		if _, err := f.r.CountRuns(ctx, snapshot.RunFilter{}, 1000); err != nil {
			t.Fatalf("a count once the lane is free: %v", err)
		}
	})
}

func TestAListOrCountPastTheStatementLimitIsTimeoutAndTheReadGoesOn(t *testing.T) {
	// SQLite only: a limit that has passed before the statement starts
	// ends it at once; PostgreSQL's statement_timeout, whose finest grain
	// is a millisecond, is tested with a slow statement in package store.
	f := listFixture(t, store.SQLite, 200)
	f.r.SetStatementLimit(time.Nanosecond, 1)
	ctx, rd := f.r.Begin(context.Background())
	defer rd.End()
	_, err := f.r.ListRuns(ctx, snapshot.ListRequest{First: ptr(5)})
	if e := wantCode(t, err, fault.Timeout); !store.StatementTimedOut(e) {
		t.Fatalf("the list's TIMEOUT is not its statement's limit: %v", e)
	}
	_, err = f.r.CountRuns(ctx, snapshot.RunFilter{}, 1000)
	wantCode(t, err, fault.Timeout)
	if _, err := f.r.Runs(ctx, []string{"tie-a"}); err != nil {
		t.Fatalf("the read after a list past its limit: %v", err)
	}
}

func TestTheScanOfAFilterSaysWhetherItsIndexServesIt(t *testing.T) {
	yes, no := true, false
	flow, parent := "f", "p"
	ms := snapshot.Millis(5)
	completed := []vocab.Status{vocab.StatusCompleted}
	for _, c := range []struct {
		name     string
		f        snapshot.RunFilter
		o        snapshot.RunOrder
		count    bool
		branches int
		served   bool
	}{
		{name: "no filter", branches: 1, served: true},
		{name: "a status", f: snapshot.RunFilter{Status: completed}, branches: 1, served: true},
		{name: "a flow and a status", f: snapshot.RunFilter{Status: completed, FlowName: &flow}, branches: 1, served: true},
		{name: "a status and a created range", f: snapshot.RunFilter{Status: completed, CreatedAfter: &ms}, branches: 1, served: true},
		{name: "a status and cancellation requested", f: snapshot.RunFilter{Status: completed, CancelRequested: &yes}, branches: 1, served: false},
		{name: "cancellation requested alone", f: snapshot.RunFilter{CancelRequested: &yes}, branches: 1, served: true},
		{name: "cancellation not requested", f: snapshot.RunFilter{CancelRequested: &no}, branches: 1, served: false},
		{name: "a parent and a status", f: snapshot.RunFilter{ParentRunID: &parent, Status: completed}, branches: 1, served: false},
		{name: "a heartbeat bound", f: snapshot.RunFilter{HeartbeatBefore: &ms}, branches: 1, served: false},
		{name: "a finished range in created order", f: snapshot.RunFilter{FinishedAfter: &ms}, o: snapshot.NewestFirst, branches: 1, served: false},
		{name: "a finished range in finished order", f: snapshot.RunFilter{FinishedAfter: &ms, Status: completed}, o: snapshot.FinishedNewestFirst, branches: 1, served: true},
		{name: "a finished range counted", f: snapshot.RunFilter{FinishedAfter: &ms}, count: true, branches: 1, served: true},
		{name: "two statuses and three kinds", f: snapshot.RunFilter{Status: []vocab.Status{vocab.StatusCompleted, vocab.StatusFailed}, WaitingKind: []vocab.WaitingKind{"timer", "signal", "other"}}, branches: 6, served: false},
	} {
		got := snapshot.ScanOf(c.f, c.o, c.count)
		if got.Branches != c.branches || got.Served != c.served {
			t.Errorf("%s: %+v, want %d branches, served %v", c.name, got, c.branches, c.served)
		}
	}
}

func TestTheScanOfAScopedFilter(t *testing.T) {
	flow, other := "ops", "billing-x"
	completed := []vocab.Status{vocab.StatusCompleted, vocab.StatusFailed}
	scope := func(flows ...string) access.Scope { return (&access.Principal{Flows: flows}).Scope() }
	many := make([]string, 9)
	prefixes := make([]string, 9)
	for i := range many {
		many[i] = fmt.Sprintf("flow-%d", i)
		prefixes[i] = many[i] + "-*"
	}
	for _, c := range []struct {
		name     string
		f        snapshot.RunFilter
		s        access.Scope
		branches int
		served   bool
	}{
		{name: "every run", s: scope("*"), branches: 1, served: true},
		{name: "two names: a branch each on the flow index", s: scope("ops", "audit"), branches: 2, served: true},
		{name: "two names and two statuses", f: snapshot.RunFilter{Status: completed}, s: scope("ops", "audit"), branches: 4, served: true},
		{name: "names past the branch bound: a condition", f: snapshot.RunFilter{Status: completed}, s: scope(many...), branches: 2, served: false},
		{name: "a prefix: costed as the most names it may expand to", s: scope("billing-*"), branches: snapshot.MaxBranches, served: true},
		{name: "prefixes past the branch bound: a condition", f: snapshot.RunFilter{Status: completed}, s: scope(prefixes...), branches: 2, served: false},
		{name: "a flow filter in scope: nothing more", f: snapshot.RunFilter{FlowName: &flow}, s: scope("ops", "audit"), branches: 1, served: true},
		{name: "a flow filter out of scope: nothing to walk", f: snapshot.RunFilter{FlowName: &other}, s: scope("ops"), branches: 1, served: true},
		{name: "a parent and names: a condition beside the parent's", f: snapshot.RunFilter{ParentRunID: &flow}, s: scope("ops"), branches: 1, served: false},
	} {
		got := snapshot.ScanOf(c.f, snapshot.NewestFirst, false, c.s)
		if got.Branches != c.branches || got.Served != c.served {
			t.Errorf("%s: %+v, want %d branches, served %v", c.name, got, c.branches, c.served)
		}
	}
}

func TestAFilterOfTooManyBranchesIsRefused(t *testing.T) {
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		f := newFixture(t, d)
		ctx := context.Background()
		filter := snapshot.RunFilter{
			Status:      []vocab.Status{vocab.StatusPending, vocab.StatusRunning, vocab.StatusCompleted, vocab.StatusFailed, vocab.StatusCancelled, vocab.StatusSuspended},
			WaitingKind: []vocab.WaitingKind{"timer", "approval", "quota", "human", "signal", "other"},
		}
		_, err := f.r.CountRuns(ctx, filter, 100)
		if e := wantCode(t, err, fault.BadUserInput); !strings.Contains(e.Message, "36 index ranges") {
			t.Fatalf("refusal: %s", e.Message)
		}
		_, err = f.r.ListRuns(ctx, snapshot.ListRequest{Filter: filter})
		wantCode(t, err, fault.BadUserInput)
	})
}
