package endpoint_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/vektah/gqlparser/v2/ast"

	"github.com/flowsnap/flowsnap/endpoint"
	"github.com/flowsnap/flowsnap/engine"
	"github.com/flowsnap/flowsnap/graph"
	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/storetest"
)

// leftToTheExecutor are the fields of the types a run is written with
// that the direct answer does not write yet, with the types they lead to
// (the journal's): selecting one sends the whole operation to gqlgen's
// executor. TestTheDirectAnswerKnowsEveryField
// fails when a field is missing from both the direct answer and this list,
// and when a field listed here is answered directly, so the list only
// shrinks.
var leftToTheExecutor = map[string]bool{
	"Run.steps": true, "Run.currentStep": true, "Run.inboundEvents": true, "Run.events": true,
}

// TestTheDirectAnswerKnowsEveryField reads the schema, not a list of
// fields: for every field of Run, MissingRun and every type reached from
// them (owner, claim, cancellation, waiting, parent, the children and
// rounds pages, their edges and page info), and for every field of every
// type below the root fields that read by themselves (listRuns, changes,
// countRuns, position), it selects that field alone where it has a value,
// and requires the direct answer to write it, byte for byte as the
// executor does.
func TestTheDirectAnswerKnowsEveryField(t *testing.T) {
	for _, d := range storetest.Dialects {
		t.Run(string(d), func(t *testing.T) { directAnswerKnowsEveryField(t, d) })
	}
}

func directAnswerKnowsEveryField(t *testing.T, d store.Dialect) {
	logs := &syncBuffer{}
	e := fixture(t, d, endpoint.Options{Logger: slog.New(slog.NewJSONHandler(logs, nil))})
	ctx := context.Background()
	w := engine.NewWriter(e.db, func() int64 { return createdAt })
	must(t, w.CreateRun(ctx, engine.NewRun{ID: "claimed", FlowName: "ops"}))
	must(t, w.Claim(ctx, "claimed", ownerOdd))
	general := httptest.NewServer(endpoint.NewHandler(e.reader, endpoint.Options{NoDirect: true}))
	t.Cleanup(general.Close)
	schema := graph.NewExecutableSchema(graph.Config{Resolvers: &graph.Resolver{}}).Schema()

	// The run each of Run's fields is selected on, so that the object it
	// leads to is there to select fields of.
	runOf := map[string]string{"owner": "runner", "claim": "claimed", "cancellation": "cancelled", "waiting": "waiter",
		"parent": "child-001", "children": "parent", "rounds": "round-3"}
	type at struct {
		id   string
		wrap func(sel string) string // the selection that reaches the type
	}
	seen := map[string]bool{}
	var queue []string
	reach := map[string]at{
		"Run":        {"runner", func(sel string) string { return "... on Run { " + sel + " }" }},
		"MissingRun": {"gone", func(sel string) string { return "... on MissingRun { " + sel + " }" }},
	}
	queue = append(queue, "Run", "MissingRun")
	// The root fields that read by themselves: each type below them is
	// walked again under its root ("Type@root"), where wrap makes the
	// whole operation.
	for root, op := range map[string]func(sel string) string{
		"listRuns": func(sel string) string {
			return `query($id: ID!) { listRuns(filter: {parentRunId: $id}, first: 3) { ` + sel + ` } }`
		},
		"changes": func(sel string) string { return `{ changes(since: 0, first: 3) { ` + sel + ` } }` },
		"countRuns": func(sel string) string {
			return `query($id: ID!) { countRuns(filter: {parentRunId: $id}, upTo: 5) { ` + sel + ` } }`
		},
		"position": func(sel string) string { return `{ position { ` + sel + ` } }` },
	} {
		typ := schema.Types["Query"].Fields.ForName(root).Type.Name()
		reach[typ+"@"+root] = at{"parent", op}
		queue = append(queue, typ+"@"+root)
	}
	for len(queue) > 0 {
		key := queue[0]
		queue = queue[1:]
		if seen[key] {
			continue
		}
		seen[key] = true
		typ, root, _ := strings.Cut(key, "@")
		def := schema.Types[typ]
		for _, f := range def.Fields {
			if strings.HasPrefix(f.Name, "__") {
				continue
			}
			name := typ + "." + f.Name
			where := reach[key]
			if typ == "Run" && runOf[f.Name] != "" {
				where.id = runOf[f.Name]
			}
			target := schema.Types[f.Type.Name()]
			sel := f.Name
			if target.Kind != ast.Scalar && target.Kind != ast.Enum {
				sel += " { __typename }"
				// The types a field left to the executor leads to are
				// left with it.
				tkey := target.Name
				if root != "" {
					tkey += "@" + root
				}
				if target.Kind == ast.Object && !seen[tkey] && !leftToTheExecutor[name] {
					if _, ok := reach[tkey]; !ok {
						inner, wrap := f.Name, where.wrap
						reach[tkey] = at{where.id, func(s string) string { return wrap(inner + " { " + s + " }") }}
						queue = append(queue, tkey)
					}
				}
			}
			query := `query($id: ID!) { run(id: $id) { ` + where.wrap(sel) + ` } }`
			if root != "" {
				query = where.wrap(sel)
			}
			t.Run(key+"."+f.Name, func(t *testing.T) {
				logs.Reset()
				dStatus, dBody := postRaw(t, e.url, query, map[string]any{"id": where.id})
				gStatus, gBody := postRaw(t, general.URL, query, map[string]any{"id": where.id})
				if dStatus != gStatus || !bytes.Equal(dBody, gBody) {
					t.Fatalf("%s: the answers differ:\ndirect   %d %s\nexecutor %d %s", query, dStatus, dBody, gStatus, gBody)
				}
				if bytes.Contains(dBody, []byte(`"errors"`)) {
					t.Fatalf("%s: %s", query, dBody)
				}
				direct := strings.Contains(logs.String(), `"direct":true`)
				switch {
				case !direct && !leftToTheExecutor[name]:
					t.Errorf("%s is not answered directly (%s): write it in plan/direct.go", name, query)
				case direct && leftToTheExecutor[name]:
					t.Errorf("%s is answered directly: take it off leftToTheExecutor", name)
				}
			})
		}
	}
	for name := range leftToTheExecutor {
		typ, field, _ := strings.Cut(name, ".")
		if schema.Types[typ] == nil || schema.Types[typ].Fields.ForName(field) == nil {
			t.Errorf("%s is listed as left to the executor but is no field of the schema", name)
		}
	}
	for _, typ := range []string{"Owner", "Claim", "Cancellation", "CancelAcknowledgement", "Waiting", "RunConnection", "RunEdge", "PageInfo",
		"RunConnection@listRuns", "RunEdge@listRuns", "PageInfo@listRuns", "ChangeFeed@changes", "Change@changes", "RunCount@countRuns", "Position@position"} {
		if !seen[typ] {
			t.Errorf("the walk did not reach %s", typ)
		}
	}
}
