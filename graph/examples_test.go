package graph_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"testing"

	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/validator"
	"github.com/vektah/gqlparser/v2/validator/rules"

	"github.com/flowsnap/flowsnap/engine"
	"github.com/flowsnap/flowsnap/graph"
	"github.com/flowsnap/flowsnap/graph/explorer"
	"github.com/flowsnap/flowsnap/snapshot"
	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/storetest"
)

// TestExplorerExamplesMatchTheSchema validates every example of the page at
// / against the served schema, its variables included: an example that
// names a field the API does not have fails here, not in a person's
// browser.
func TestExplorerExamplesMatchTheSchema(t *testing.T) {
	t.Parallel()
	schema := graph.NewExecutableSchema(graph.Config{Resolvers: &graph.Resolver{}}).Schema()
	for _, ex := range explorer.Examples() {
		t.Run(ex.Name, func(t *testing.T) {
			doc, errs := gqlparser.LoadQueryWithRules(schema, ex.Query, rules.NewDefaultRules())
			if len(errs) > 0 {
				t.Fatalf("the query does not validate: %v", errs)
			}
			var vars map[string]any
			if err := json.Unmarshal([]byte(ex.Variables), &vars); err != nil {
				t.Fatal(err)
			}
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
	srv := httptest.NewServer(graph.NewHandler(snapshot.NewReader(storetest.OpenReader(t, dsn)), graph.Options{}))
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
			if len(get(data, "run", "steps", "edges").([]any)) < 3 || get(data, "run", "currentStep", "id") == nil {
				t.Fatalf("run = %v", get(data, "run"))
			}
		},
		"Journal: events": func(t *testing.T, data map[string]any) {
			edges := get(data, "run", "events", "edges").([]any)
			if get(edges, len(edges)-1, "node", "cancellationReason") == nil || len(get(data, "run", "inboundEvents", "nodes").([]any)) == 0 {
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
	for _, ex := range explorer.Examples() {
		t.Run(ex.Name, func(t *testing.T) {
			var vars map[string]any
			if err := json.Unmarshal([]byte(ex.Variables), &vars); err != nil {
				t.Fatal(err)
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
