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

// TestTheDirectAnswerKnowsEveryField reads the schema, not a list of
// fields: for every field of Run, MissingRun and every type reached from
// them (owner, claim, cancellation, waiting, parent, the children and
// rounds pages, their edges and page info, the journal's pages, steps of
// each kind, attempts, inbound events and log entries), and for every
// field of every type below the root fields that read by themselves
// (listRuns, changes, countRuns, position), it selects that field alone
// where it has a value, and requires the direct answer to write it, byte
// for byte as the executor does.
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
	writeDirectJournal(t, e.db, false)
	general := httptest.NewServer(endpoint.NewHandler(e.reader, endpoint.Options{NoDirect: true}))
	t.Cleanup(general.Close)
	schema := graph.NewExecutableSchema(graph.Config{Resolvers: &graph.Resolver{}}).Schema()

	// The run each of Run's fields is selected on, so that the object it
	// leads to is there to select fields of.
	runOf := map[string]string{"owner": "runner", "claim": "claimed", "cancellation": "cancelled", "waiting": "waiter",
		"parent": "child-001", "children": "parent", "rounds": "round-3",
		"steps": "j-all", "currentStep": "j-all", "inboundEvents": "j-all", "events": "j-all"}
	// The field through which the walk reaches the types of an interface:
	// one whose values are of every type (a step page holds each kind, a
	// run's current step one only).
	through := map[string]string{"Step": "StepEdge.node"}
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
				targets, cond := []string{target.Name}, func(_, s string) string { return s }
				if target.Kind == ast.Interface {
					targets = nil
					if via, ok := through[target.Name]; !ok || via == name {
						for _, impl := range schema.GetPossibleTypes(target) {
							targets = append(targets, impl.Name)
						}
					}
					cond = func(typ, s string) string { return "... on " + typ + " { " + s + " }" }
				}
				for _, next := range targets {
					nkey := next
					if root != "" {
						nkey += "@" + root
					}
					if _, ok := reach[nkey]; ok || seen[nkey] || schema.Types[next].Kind != ast.Object {
						continue
					}
					inner, wrap := f.Name, where.wrap
					reach[nkey] = at{where.id, func(s string) string { return wrap(inner + " { " + cond(next, s) + " }") }}
					queue = append(queue, nkey)
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
				if !bytes.Contains(dBody, []byte(`"`+f.Name+`":`)) {
					t.Errorf("%s: no run the walk selects it on has it: %s", query, dBody)
				}
				if !strings.Contains(logs.String(), `"direct":true`) {
					t.Errorf("%s is not answered directly (%s): write it in plan/direct.go", name, query)
				}
			})
		}
	}
	for _, typ := range []string{"Owner", "Claim", "Cancellation", "CancelAcknowledgement", "Waiting", "RunConnection", "RunEdge", "PageInfo",
		"StepConnection", "StepEdge", "RunStep", "SleepStep", "WaitStep", "Attempt",
		"InboundEventConnection", "InboundEventEdge", "InboundEvent", "RunEventConnection", "RunEventEdge", "RunEvent",
		"RunConnection@listRuns", "RunEdge@listRuns", "PageInfo@listRuns", "ChangeFeed@changes", "Change@changes", "RunCount@countRuns", "Position@position"} {
		if !seen[typ] {
			t.Errorf("the walk did not reach %s", typ)
		}
	}
}
