package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"reflect"
	"regexp"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/Khan/genqlient/graphql"
	"github.com/vektah/gqlparser/v2/gqlerror"

	client "github.com/flowsnap/flowsnap/clients/genqlient"
	"github.com/flowsnap/flowsnap/engine"
	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/storetest"
	"github.com/flowsnap/flowsnap/store/vocab"
)

// recorder is an http.Client transport that keeps the variables of every
// request it sends, to show what genqlient puts on the wire.
type recorder struct {
	mu   sync.Mutex
	vars []map[string]json.RawMessage
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		body, err := io.ReadAll(req.Body)
		if err != nil {
			return nil, err
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		var b struct{ Variables map[string]json.RawMessage }
		if err := json.Unmarshal(body, &b); err != nil {
			return nil, err
		}
		r.mu.Lock()
		r.vars = append(r.vars, b.Variables)
		r.mu.Unlock()
	}
	return http.DefaultTransport.RoundTrip(req)
}

// last returns the raw value of the variable name in the latest request.
func (r *recorder) last(name string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return string(r.vars[len(r.vars)-1][name])
}

// sameJSON reports whether a and b are the same JSON value.
func sameJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatalf("%s: %v", a, err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return reflect.DeepEqual(x, y)
}

func ptr[T any](v T) *T { return &v }

// TestGenqlientClient runs the generated genqlient client against a served,
// seeded SQLite store with runs of known values: DateTime arrives as
// time.Time, SafeInt as int64 (beyond 32 bits), JSON as the raw value; the
// Snapshot union decodes to its members through fragments; children and
// listRuns page with a nil cursor (sent as null) and with "" (genqlient's
// zero value), alike; a DateTime variable round-trips; one finer than a
// millisecond is refused with its code.
func TestGenqlientClient(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := storetest.DSN(t, store.SQLite)
	db := storetest.OpenDSN(t, dsn, true)
	if _, err := engine.Seed(ctx, db, engine.SeedOptions{Runs: 150, Seed: 3}); err != nil {
		t.Fatal(err)
	}
	const created = 1893456000123 // 2030-01-01T00:00:00.123Z, after every seeded run
	clock := int64(created)
	w := engine.NewWriter(db, func() int64 { clock += 1000; return clock })
	owner := vocab.Owner{HostID: "gq-host", PID: 1 << 40, Nonce: "n1"}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(w.CreateRun(ctx, engine.NewRun{ID: "gq-parent", FlowName: "gq-flow", State: json.RawMessage(`{"input":{"n":1,"tags":["a","b"]}}`), CreatedAt: created}))
	must(w.Start(ctx, "gq-parent", owner))
	var children []string
	for i := range 5 {
		id := "gq-child-" + string(rune('0'+i))
		children = append(children, id)
		must(w.CreateRun(ctx, engine.NewRun{ID: id, FlowName: "gq-child-flow", Parents: []engine.ParentEdge{{ParentID: "gq-parent", Seq: int64(i)}}}))
	}
	const wakeAt = 1893459600000
	must(w.Start(ctx, "gq-child-1", owner))
	must(w.Wait(ctx, "gq-child-1", engine.Waiting{Reason: "approval", WakeAt: wakeAt, Token: "secret", Request: json.RawMessage(`{"question":"ship it?","amount":12.5}`)}))
	must(w.Start(ctx, "gq-child-2", owner))
	must(w.Complete(ctx, "gq-child-2", json.RawMessage(`{"ok":true}`)))
	must(w.CreateRun(ctx, engine.NewRun{ID: "gq-gone", FlowName: "gq-flow"}))
	must(w.Delete(ctx, "gq-gone"))

	addr, _ := startServe(t, noEnv, "--db", dsn)
	base := "http://" + addr
	rec := &recorder{}
	c := graphql.NewClient(base+"/graphql", &http.Client{Transport: rec})

	t.Run("a run decodes with typed times, ints and raw JSON", func(t *testing.T) {
		res, err := client.RunWithChildren(ctx, c, "gq-parent", ptr(2), nil)
		if err != nil {
			t.Fatal(err)
		}
		run, ok := res.Run.(*client.RunWithChildrenRun)
		if !ok {
			t.Fatalf("run is %T, want a Run", res.Run)
		}
		if run.Id != "gq-parent" || run.Status != client.RunStatusRunning || run.FlowName != "gq-flow" || run.RoundOrdinal != 0 || run.Revision <= 0 {
			t.Fatalf("run = %+v", run.RunFields)
		}
		if !run.CreatedAt.Equal(time.UnixMilli(created)) || run.StartedAt == nil || !run.StartedAt.Equal(time.UnixMilli(created+1000)) || run.FinishedAt != nil {
			t.Fatalf("createdAt %v startedAt %v finishedAt %v", run.CreatedAt, run.StartedAt, run.FinishedAt)
		}
		if run.Owner == nil || run.Owner.HostId != "gq-host" || run.Owner.Pid != 1<<40 {
			t.Fatalf("owner = %+v, want pid 2^40", run.Owner)
		}
		if run.State == nil || !sameJSON(t, *run.State, []byte(`{"flowName":"gq-flow","input":{"n":1,"tags":["a","b"]}}`)) {
			t.Fatalf("state = %v", run.State)
		}
		if got := rec.last("after"); got != "null" {
			t.Fatalf("a nil cursor went out as %s, want null", got)
		}
		page := run.Children
		if page == nil || len(page.Edges) != 2 || !page.PageInfo.HasNextPage || page.PageInfo.EndCursor == nil {
			t.Fatalf("children = %+v", page)
		}
		waiting, ok := page.Edges[1].Node.(*client.RunWithChildrenRunChildrenRunConnectionEdgesRunEdgeNodeRun)
		if !ok || waiting.Id != "gq-child-1" || page.Edges[1].Ordinal != 1 || waiting.Status != client.RunStatusSuspended {
			t.Fatalf("second child = %T %+v", page.Edges[1].Node, page.Edges[1].Node)
		}
		wt := waiting.Waiting
		if wt == nil || wt.Kind != client.WaitingKindApproval || wt.WakeAt == nil || !wt.WakeAt.Equal(time.UnixMilli(wakeAt)) ||
			wt.Request == nil || !sameJSON(t, *wt.Request, []byte(`{"question":"ship it?","amount":12.5}`)) {
			t.Fatalf("waiting = %+v", wt)
		}
	})

	// pages reads every child of gq-parent, two at a time, with next
	// choosing how the cursor goes out.
	pages := func(t *testing.T, next func(after string) ([]string, string, bool)) []string {
		t.Helper()
		var got []string
		after := ""
		for range 10 {
			ids, end, more := next(after)
			got = append(got, ids...)
			if !more {
				return got
			}
			after = end
		}
		t.Fatal("the children never end")
		return nil
	}

	t.Run("children page alike with a null cursor and an empty string", func(t *testing.T) {
		withPointer := pages(t, func(after string) ([]string, string, bool) {
			var a *string
			if after != "" {
				a = &after
			}
			res, err := client.RunWithChildren(ctx, c, "gq-parent", ptr(2), a)
			if err != nil {
				t.Fatal(err)
			}
			p := res.Run.(*client.RunWithChildrenRun).Children
			var ids []string
			for _, e := range p.Edges {
				ids = append(ids, e.Node.(*client.RunWithChildrenRunChildrenRunConnectionEdgesRunEdgeNodeRun).Id)
			}
			return ids, *p.PageInfo.EndCursor, p.PageInfo.HasNextPage
		})
		withString := pages(t, func(after string) ([]string, string, bool) {
			res, err := client.ChildrenFromString(ctx, c, "gq-parent", ptr(2), after)
			if err != nil {
				t.Fatal(err)
			}
			if after == "" {
				if got := rec.last("after"); got != `""` {
					t.Fatalf("an empty cursor went out as %s, want \"\"", got)
				}
			}
			p := res.Run.(*client.ChildrenFromStringRun).Children
			var ids []string
			for _, e := range p.Edges {
				ids = append(ids, e.Node.(*client.ChildrenFromStringRunChildrenRunConnectionEdgesRunEdgeNodeRun).Id)
			}
			return ids, *p.PageInfo.EndCursor, p.PageInfo.HasNextPage
		})
		if !slices.Equal(withPointer, children) || !slices.Equal(withString, children) {
			t.Fatalf("pages with null: %v, with \"\": %v, want %v", withPointer, withString, children)
		}
	})

	t.Run("the Snapshot union decodes to Run and MissingRun through fragments", func(t *testing.T) {
		res, err := client.Runs(ctx, c, []string{"gq-parent", "gq-gone", "gq-never", "gq-child-2"})
		if err != nil {
			t.Fatal(err)
		}
		if !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(res.Position.Source) || res.Position.Revision <= 0 {
			t.Fatalf("position = %+v", res.Position)
		}
		if len(res.Runs) != 4 {
			t.Fatalf("%d runs, want 4", len(res.Runs))
		}
		if r, ok := res.Runs[0].(*client.RunsRunsRun); !ok || r.Id != "gq-parent" {
			t.Fatalf("runs[0] = %T %+v", res.Runs[0], res.Runs[0])
		}
		gone, ok := res.Runs[1].(*client.RunsRunsMissingRun)
		if !ok || gone.Id != "gq-gone" || !gone.Deleted || gone.DeletedAtRevision == nil || *gone.DeletedAtRevision <= 0 || *gone.DeletedAtRevision > res.Position.Revision {
			t.Fatalf("runs[1] = %T %+v", res.Runs[1], res.Runs[1])
		}
		never, ok := res.Runs[2].(*client.RunsRunsMissingRun)
		if !ok || never.Deleted || never.DeletedAtRevision != nil {
			t.Fatalf("runs[2] = %T %+v", res.Runs[2], res.Runs[2])
		}
		done, ok := res.Runs[3].(*client.RunsRunsRun)
		if !ok || done.Status != client.RunStatusCompleted || done.FinishedAt == nil || !done.FinishedAt.After(done.CreatedAt) || done.Owner != nil ||
			done.State == nil || !sameJSON(t, *done.State, []byte(`{"flowName":"gq-child-flow","output":{"ok":true}}`)) {
			t.Fatalf("runs[3] = %T %+v", res.Runs[3], res.Runs[3])
		}
	})

	t.Run("listRuns with a filter, an order and a DateTime variable", func(t *testing.T) {
		f := &client.RunFilter{ParentRunId: ptr("gq-parent")}
		res, err := client.ListRuns(ctx, c, f, ptr(client.RunOrderOldestFirst), ptr(3), nil)
		if err != nil {
			t.Fatal(err)
		}
		if res.CountRuns.Count != 5 || res.CountRuns.Capped || len(res.ListRuns.Edges) != 3 || !res.ListRuns.PageInfo.HasNextPage {
			t.Fatalf("count %+v, page %+v", res.CountRuns, res.ListRuns)
		}
		var got []string
		for _, e := range res.ListRuns.Edges {
			n := e.Node.(*client.ListRunsListRunsRunConnectionEdgesRunEdgeNodeRun)
			if e.Ordinal != n.CreatedAt.UnixMilli() {
				t.Fatalf("edge ordinal %d, createdAt %v", e.Ordinal, n.CreatedAt)
			}
			got = append(got, n.Id)
		}
		if !slices.Equal(got, children[:3]) {
			t.Fatalf("oldest children = %v, want %v", got, children[:3])
		}
		third := res.ListRuns.Edges[2].Node.(*client.ListRunsListRunsRunConnectionEdgesRunEdgeNodeRun).CreatedAt
		res, err = client.ListRuns(ctx, c, &client.RunFilter{ParentRunId: ptr("gq-parent"), CreatedAfter: &third}, ptr(client.RunOrderOldestFirst), nil, ptr(""))
		if err != nil {
			t.Fatal(err)
		}
		got = got[:0]
		for _, e := range res.ListRuns.Edges {
			got = append(got, e.Node.(*client.ListRunsListRunsRunConnectionEdgesRunEdgeNodeRun).Id)
		}
		if !slices.Equal(got, children[2:]) || res.CountRuns.Count != 3 {
			t.Fatalf("created at or after %v: %v (count %d), want %v", third, got, res.CountRuns.Count, children[2:])
		}
	})

	t.Run("the typed newest page is the page the API serves", func(t *testing.T) {
		res, err := client.ListRuns(ctx, c, nil, nil, ptr(25), nil)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range res.ListRuns.Edges {
			got = append(got, e.Node.(*client.ListRunsListRunsRunConnectionEdgesRunEdgeNodeRun).Id)
		}
		want := ids(api(t, base, `{ listRuns(first: 25) { edges { node { ... on Run { id } } } } }`, nil)["listRuns"])
		if len(got) != 25 || !slices.Equal(got, want) {
			t.Fatalf("typed page %v, want %v", got, want)
		}
	})

	t.Run("a DateTime finer than a millisecond is refused with its code", func(t *testing.T) {
		fine := time.UnixMilli(created).Add(time.Microsecond)
		_, err := client.ListRuns(ctx, c, &client.RunFilter{CreatedAfter: &fine}, nil, nil, nil)
		var list gqlerror.List
		if !errors.As(err, &list) || len(list) == 0 || list[0].Extensions["code"] != "BAD_USER_INPUT" {
			t.Fatalf("err = %#v", err)
		}
		t.Logf("refused: %v", err)
		fine = fine.Truncate(time.Millisecond)
		if _, err := client.ListRuns(ctx, c, &client.RunFilter{CreatedAfter: &fine}, nil, nil, nil); err != nil {
			t.Fatalf("truncated to the millisecond: %v", err)
		}
	})

	// What genqlient's optional: value would send for a RunFilter's unset
	// fields, and why the configuration asks for pointers.
	t.Run("zero values in a filter select nothing or are refused", func(t *testing.T) {
		res, err := client.ListRuns(ctx, c, &client.RunFilter{FlowName: ptr("")}, nil, nil, nil)
		if err != nil || res.CountRuns.Count != 0 || len(res.ListRuns.Edges) != 0 {
			t.Fatalf("flowName \"\": %v %+v", err, res)
		}
		_, err = client.ListRuns(ctx, c, &client.RunFilter{CreatedBefore: &time.Time{}}, nil, nil, nil)
		var list gqlerror.List
		if !errors.As(err, &list) || len(list) == 0 || list[0].Extensions["code"] != "BAD_USER_INPUT" {
			t.Fatalf("a zero time.Time: %#v", err)
		}
	})

	t.Run("the GET client reads the same", func(t *testing.T) {
		get := graphql.NewClientUsingGet(base+"/graphql", http.DefaultClient)
		res, err := client.Runs(ctx, get, []string{"gq-parent"})
		if err != nil {
			t.Fatal(err)
		}
		if r, ok := res.Runs[0].(*client.RunsRunsRun); !ok || r.Owner.Pid != 1<<40 || !r.CreatedAt.Equal(time.UnixMilli(created)) {
			t.Fatalf("runs[0] = %+v", res.Runs[0])
		}
	})
}
