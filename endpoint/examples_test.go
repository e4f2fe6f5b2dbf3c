package endpoint_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/validator"
	"github.com/vektah/gqlparser/v2/validator/rules"

	"github.com/flowsnap/flowsnap/endpoint"
	"github.com/flowsnap/flowsnap/engine"
	"github.com/flowsnap/flowsnap/graph"
	"github.com/flowsnap/flowsnap/live"
	"github.com/flowsnap/flowsnap/snapshot"
	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/storetest"
	"github.com/flowsnap/flowsnap/web"
)

// TestExplorerExamplesMatchTheSchema validates every example of the page at
// / against the served schema, its variables included: an example that
// names a field the API does not have fails here, not in a person's
// browser.
func TestExplorerExamplesMatchTheSchema(t *testing.T) {
	t.Parallel()
	schema := graph.NewExecutableSchema(graph.Config{Resolvers: &graph.Resolver{}}).Schema()
	for _, ex := range web.Examples() {
		t.Run(ex.Name, func(t *testing.T) {
			doc, errs := gqlparser.LoadQueryWithRules(schema, ex.Query, rules.NewDefaultRules())
			if len(errs) > 0 {
				t.Fatalf("the query does not validate: %v", errs)
			}
			vars := ex.Variables
			if len(doc.Operations) != 1 {
				t.Fatalf("%d operations, want 1", len(doc.Operations))
			}
			if _, err := validator.VariableValues(schema, doc.Operations[0], vars); err != nil {
				t.Fatalf("the variables do not fit: %v", err)
			}
		})
	}
}

// demoRuns and demoSeed are what the demo seeds a new store with (the
// flowsnap command's defaults); the examples name runs of that store.
const (
	demoRuns = 20_000
	demoSeed = 1
)

// TestExplorerExamplesOnTheDemoStore runs every example against a store
// seeded as the demo seeds its own, through the real handler: each answers
// without errors (but the one that shows an error), and the journal
// examples find what their descriptions promise.
func TestExplorerExamplesOnTheDemoStore(t *testing.T) {
	if testing.Short() {
		t.Skip("seeding the demo's store takes a few seconds")
	}
	t.Parallel()
	dsn := storetest.DSN(t, store.SQLite)
	db := storetest.OpenDSN(t, dsn, true)
	if _, err := engine.Seed(context.Background(), db, engine.SeedOptions{Runs: demoRuns, Seed: demoSeed}); err != nil {
		t.Fatal(err)
	}
	reader := snapshot.NewReader(storetest.OpenReader(t, dsn))
	watcher := live.New(reader, live.Options{})
	wctx, stop := context.WithCancel(context.Background())
	t.Cleanup(stop)
	go func() { _ = watcher.Run(wctx) }()
	<-watcher.Ready()
	srv := httptest.NewServer(endpoint.NewHandler(reader, endpoint.Options{Live: watcher}))
	t.Cleanup(srv.Close)
	e := &env{t: t, db: db, url: srv.URL}

	checks := map[string]func(t *testing.T, data map[string]any){
		"Journal: a failing run": func(t *testing.T, data map[string]any) {
			steps := get(data, "run", "steps", "nodes").([]any)
			last := get(steps, len(steps)-1)
			attempts := get(last, "attempts").([]any)
			if get(data, "run", "status") != "FAILED" || get(last, "state") != "FAILED" || len(attempts) < 2 {
				t.Fatalf("run = %v", get(data, "run"))
			}
			for i, a := range attempts {
				if get(a, "errorMessage") == nil || (get(a, "nextAttemptAt") == nil) != (i == len(attempts)-1) {
					t.Errorf("attempt %d = %v", i, a)
				}
			}
		},
		"Journal: a waiting run": func(t *testing.T, data map[string]any) {
			cur := get(data, "run", "currentStep")
			if get(data, "run", "status") != "SUSPENDED" || get(cur, "__typename") != "WaitStep" || get(cur, "state") != "WAITING" || get(cur, "eventName") == nil {
				t.Fatalf("currentStep = %v", cur)
			}
		},
		"Journal: steps": func(t *testing.T, data map[string]any) {
			if len(get(data, "run", "steps", "edges").([]any)) < 1 || get(data, "run", "currentStep", "id") == nil {
				t.Fatalf("run = %v", get(data, "run"))
			}
		},
		"Journal: events": func(t *testing.T, data map[string]any) {
			edges := get(data, "run", "events", "edges").([]any)
			if get(edges, len(edges)-1, "node", "cancellationReason") == nil || get(data, "run", "inboundEvents", "nodes") == nil {
				t.Fatalf("run = %v", get(data, "run"))
			}
		},
		"List: failed runs": func(t *testing.T, data map[string]any) {
			edges := get(data, "listRuns", "edges").([]any)
			if len(edges) != 20 || get(data, "listRuns", "pageInfo", "hasNextPage") != true || get(data, "countRuns", "count").(float64) <= 20 {
				t.Fatalf("listRuns = %v, countRuns = %v", get(data, "listRuns", "pageInfo"), get(data, "countRuns"))
			}
		},
		"List: stale workers": func(t *testing.T, data map[string]any) {
			nodes := get(data, "listRuns", "nodes").([]any)
			if len(nodes) == 0 {
				t.Fatal("no stale workers on the demo's store")
			}
			for _, n := range nodes {
				if at, _ := get(n, "heartbeatAt").(string); at == "" || at >= "2026-10-31T23:58:00.000Z" {
					t.Errorf("run %v is not stale", n)
				}
			}
		},
		"Change feed": func(t *testing.T, data map[string]any) {
			if len(get(data, "changes", "changes").([]any)) != 10 || get(data, "changes", "hasMore") != true {
				t.Fatalf("changes = %v", get(data, "changes"))
			}
		},
	}
	for _, ex := range web.Examples() {
		t.Run(ex.Name, func(t *testing.T) {
			vars := fillExample(t, e, ex)
			if strings.HasPrefix(ex.Query, "subscription") {
				// The first event, over SSE.
				ev := next(t, subscribeSSE(t, srv.URL, ex.Query, vars).events)
				if len(ev.Errors) > 0 || ev.Extensions.Position == nil || len(ev.Data) == 0 {
					t.Fatalf("first event: %+v", ev)
				}
				return
			}
			r := e.do(ex.Query, vars)
			if ex.Name == "A bad cursor" {
				if !r.hasCode("BAD_CURSOR") {
					t.Fatalf("codes = %v", r.codes())
				}
				return
			}
			if len(r.Errors) > 0 {
				t.Fatalf("errors: %+v", r.Errors)
			}
			if run, ok := r.Data["run"].(map[string]any); ok && run["__typename"] == "MissingRun" {
				t.Fatalf("the example's run is missing from the demo's store")
			}
			if check := checks[ex.Name]; check != nil {
				check(t, r.Data)
			}
		})
	}
}

// fillExample does what the explorer page does before it shows an example:
// it picks the runs the example needs from the store with listRuns and puts
// their ids in place of the "$NAME" variables.
func fillExample(t *testing.T, e *env, ex web.Example) map[string]any {
	t.Helper()
	found := map[string]string{}
	for name, f := range ex.Find {
		pick := f.Pick
		if pick == "" {
			pick = "id"
		}
		r := e.do(`query($f: RunFilter) { listRuns(filter: $f, first: 100) { nodes { ... on Run { id parentRunId lineageId } } } }`, map[string]any{"f": f.Filter})
		if len(r.Errors) > 0 {
			t.Fatalf("finding %s: %+v", name, r.Errors)
		}
		for _, n := range get(r.Data, "listRuns", "nodes").([]any) {
			if v, _ := get(n, pick).(string); v != "" && (pick == "id" || v != get(n, "id")) {
				found[name] = v
				break
			}
		}
		if found[name] == "" {
			t.Fatalf("no run for %s (%v)", name, f)
		}
	}
	var subst func(v any) any
	subst = func(v any) any {
		switch v := v.(type) {
		case string:
			if id, ok := found[strings.TrimPrefix(v, "$")]; ok && strings.HasPrefix(v, "$") {
				return id
			}
		case []any:
			out := make([]any, len(v))
			for i, x := range v {
				out[i] = subst(x)
			}
			return out
		}
		return v
	}
	vars := map[string]any{}
	for k, v := range ex.Variables {
		vars[k] = subst(v)
	}
	return vars
}
