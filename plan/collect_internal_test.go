package plan

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"
)

// TestWhatVariablesDecideIsNeverShared: a document's collected fields and
// what the read-ahead finds below them are kept for its later requests
// only where no directive decides them; where one does, each request
// answers for its own variables.
func TestWhatVariablesDecideIsNeverShared(t *testing.T) {
	schema := loadSchema(t)
	p := New(schema)
	doc := gqlparser.MustLoadQuery(schema, `query($x: Boolean!) {
		a: run(id: "a") { ... on Run { id children(first: 1) @include(if: $x) { edges { cursor } } } }
		b: run(id: "b") { ... on Run { id children(first: 1) { edges { cursor } } } }
		c: run(id: "c") { ...F }
	}
	fragment F on Run { id rounds(first: 1) @skip(if: $x) { edges { cursor } } }`)
	alternately(t, doc, "may read", p.mayRead, func(x bool) map[string]bool {
		return map[string]bool{"a": x, "b": true, "c": !x}
	})
	keptOnlyFixed(t, doc, func(d *docFields) *sync.Map { return &d.reads })
}

// keptOnlyFixed checks what table, one of doc's shared tables, kept:
// something, and nothing of a selection a directive decides.
func keptOnlyFixed(t *testing.T, doc *ast.QueryDocument, table func(d *docFields) *sync.Map) {
	t.Helper()
	d, _ := sharedFields.Peek(doc)
	if d == nil {
		t.Fatal("the document's fields are not shared")
	}
	kept := 0
	table(d).Range(func(k, v any) bool {
		kept++
		if key := k.(selectionKey); !fixed(doc, key.sels[:key.n]) {
			t.Errorf("a selection a directive decides was kept: %v", key)
		}
		return true
	})
	if kept == 0 {
		t.Error("nothing was kept of what no variable decides")
	}
}

// alternately asks answer of each root field of doc, whose variable x is
// false, true, false and true in turn (a request each), and checks that
// each alias answers what want(x) says; what names the answer in errors.
func alternately[V comparable](t *testing.T, doc *ast.QueryDocument, what string,
	answer func(oc *graphql.OperationContext, f graphql.CollectedField) V, want func(x bool) map[string]V) {
	t.Helper()
	for _, x := range []bool{false, true, false, true} {
		oc := &graphql.OperationContext{Doc: doc, Operation: doc.Operations[0], Variables: map[string]any{"x": x}}
		got := map[string]V{}
		for _, f := range collectFields(oc, doc.Operations[0].SelectionSet, []string{"Query"}) {
			got[f.Alias] = answer(oc, f)
		}
		for alias, w := range want(x) {
			if got[alias] != w {
				t.Errorf("x=%v: %s %s %+v, want %+v", x, alias, what, got[alias], w)
			}
		}
	}
}

// TestWhatReadsBelowAPageIsSharedOnlyWhereNoVariableDecides: whether a
// list page reads nothing below it but its runs' parents is kept for the
// document's later requests only where no directive decides it.
func TestWhatReadsBelowAPageIsSharedOnlyWhereNoVariableDecides(t *testing.T) {
	schema := loadSchema(t)
	p := New(schema)
	doc := gqlparser.MustLoadQuery(schema, `query($x: Boolean!) {
		a: listRuns { edges { node { ... on Run { id parent { ... on Run { id } } children(first: 1) @include(if: $x) { edges { cursor } } } } } }
		b: listRuns { edges { node { ... on Run { id parent { ... on Run { id } } } } } }
		c: listRuns { nodes { ... on Run { id parent @skip(if: $x) { ... on Run { id } } } } }
	}`)
	type only struct{ parents, ok bool }
	alternately(t, doc, "reads only parents", func(oc *graphql.OperationContext, f graphql.CollectedField) only {
		parents, ok := p.readsParentsOnly(oc, f)
		return only{parents, ok}
	}, func(x bool) map[string]only {
		return map[string]only{"a": {!x, !x}, "b": {true, true}, "c": {!x, true}}
	})
	keptOnlyFixed(t, doc, func(d *docFields) *sync.Map { return &d.parentsOnly })
}

// TestWhatTheDirectAnswerWritesIsSharedOnlyWhereNoVariableDecides: the
// fields the direct answer writes of a selection set, and their keys, are
// kept for the document's later requests only where no directive decides
// them; each request writes the fields of its own variables.
func TestWhatTheDirectAnswerWritesIsSharedOnlyWhereNoVariableDecides(t *testing.T) {
	schema := loadSchema(t)
	p := New(schema)
	doc := gqlparser.MustLoadQuery(schema, `query($x: Boolean!) {
		a: run(id: "a") { ... on Run { id status @include(if: $x) flowName } }
		b: run(id: "b") { ... on Run { id status flowName createdAt } }
	}`)
	alternately(t, doc, "writes", func(oc *graphql.OperationContext, f graphql.CollectedField) string {
		w := &directWriter{oc: oc, l: &loaders{p: p}}
		set, ok := w.collect(f.Selections, "Run")
		if !ok {
			t.Fatalf("%s's fields were not collected", f.Alias)
		}
		return strings.Join(set.keys, "")
	}, func(x bool) map[string]string {
		want := map[string]string{"a": `{"id":,"flowName":`, "b": `{"id":,"status":,"flowName":,"createdAt":`}
		if x {
			want["a"] = `{"id":,"status":,"flowName":`
		}
		return want
	})
	keptOnlyFixed(t, doc, func(d *docFields) *sync.Map { return &d.sets })
}

// TestWhatTheWalkActsOnIsSharedOnlyWhereNoVariableDecides: the fields of a
// selection set the read-ahead walk acts on, and whether anything below
// each may read, are kept for the document's later requests only where no
// directive decides them, on the set or anywhere below its fields.
func TestWhatTheWalkActsOnIsSharedOnlyWhereNoVariableDecides(t *testing.T) {
	schema := loadSchema(t)
	p := New(schema)
	doc := gqlparser.MustLoadQuery(schema, `query($x: Boolean!) {
		a: run(id: "a") { ... on Run { id children(first: 1) @include(if: $x) { edges { cursor } } } }
		b: run(id: "b") { ... on Run { id owner { hostId } children(first: 1) { edges { cursor } } } }
		c: run(id: "c") { ... on Run { id cancellation { requestedAt } parent { ... on Run { id rounds(first: 1) @skip(if: $x) { edges { cursor } } } } } }
	}`)
	alternately(t, doc, "has the walk act on", func(oc *graphql.OperationContext, f graphql.CollectedField) string {
		var acts []string
		for _, wf := range p.walkSet(oc, f.Selections, "Run") {
			acts = append(acts, fmt.Sprintf("%s:%v", wf.f.Name, wf.reads))
		}
		return strings.Join(acts, " ")
	}, func(x bool) map[string]string {
		want := map[string]string{"a": "", "b": "children:false", "c": "parent:true"}
		if x {
			want["a"], want["c"] = "children:false", "parent:false"
		}
		return want
	})
	keptOnlyFixed(t, doc, func(d *docFields) *sync.Map { return &d.walks })
}

// TestAWriterFindsEachOfManySelectionSets: a writer keeps the sets it has
// collected in a table and, past maxCollected, in a map; each set, on each
// type, is found again as it was kept, whichever holds it.
func TestAWriterFindsEachOfManySelectionSets(t *testing.T) {
	schema := loadSchema(t)
	p := New(schema)
	var q strings.Builder
	q.WriteString("{\n")
	const n = 2 * maxCollected
	for i := range n {
		fmt.Fprintf(&q, "r%d: run(id: \"r%d\") { ... on Run { run%d: id } ... on MissingRun { missing%d: id } }\n", i, i, i, i)
	}
	q.WriteString("}")
	doc := gqlparser.MustLoadQuery(schema, q.String())
	oc := &graphql.OperationContext{Doc: doc, Operation: doc.Operations[0], Variables: map[string]any{}}
	w := &directWriter{oc: oc, l: &loaders{p: p}}
	roots := collectFields(oc, doc.Operations[0].SelectionSet, []string{"Query"})
	kept := map[string]*fieldSet{}
	for round := range 2 {
		for i, f := range roots {
			for _, typ := range []string{"Run", "MissingRun"} {
				set, ok := w.collect(f.Selections, typ)
				if !ok {
					t.Fatalf("%s's fields on %s were not collected", f.Alias, typ)
				}
				want := fmt.Sprintf(`{"run%d":`, i)
				if typ == "MissingRun" {
					want = fmt.Sprintf(`{"missing%d":`, i)
				}
				if got := strings.Join(set.keys, ""); got != want {
					t.Fatalf("round %d: %s on %s writes %s, want %s", round, f.Alias, typ, got, want)
				}
				key := f.Alias + " " + typ
				if round == 0 {
					kept[key] = set
				} else if kept[key] != set {
					t.Errorf("%s on %s was collected again, not found", f.Alias, typ)
				}
			}
		}
	}
	if w.nCollected != maxCollected || len(w.collectedMap) != 2*n-maxCollected {
		t.Errorf("the table holds %d sets and the map %d; want %d and %d", w.nCollected, len(w.collectedMap), maxCollected, 2*n-maxCollected)
	}
}
