package endpoint

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/flowsnap/flowsnap/graph"
)

// TestArgCostsAreTheComplexityFunctions checks that each cost computed
// from a field's arguments is what the schema's complexity function gives
// for the same arguments, which it unmarshals first.
func TestArgCostsAreTheComplexityFunctions(t *testing.T) {
	es := graph.NewSchema(nil)
	ids := func(n int) []any {
		out := make([]any, n)
		for i := range out {
			out[i] = "run-" + string(rune('a'+i%26))
		}
		if n > 1 {
			out[1] = json.Number("42") // an ID may be an integer
		}
		return out
	}
	checked := 0
	for _, n := range []int{0, 1, 2, 100, 1000} {
		for _, child := range []int{0, 1, 7, 1 << 20} {
			args := map[string]any{"ids": ids(n)}
			got, ok := argCosts[fieldKey{"Query", "runs"}](child, args)
			want, wantOK := es.Complexity(context.Background(), "Query", "runs", child, args)
			if !ok || !wantOK || got != want {
				t.Errorf("%d ids, child %d: argument cost %d (%v), complexity function %d (%v)", n, child, got, ok, want, wantOK)
			}
			checked++
		}
	}
	if _, ok := argCosts[fieldKey{"Query", "runs"}](1, map[string]any{"ids": "not-a-list"}); ok {
		t.Error("a value that is not a list was costed instead of left to the complexity function")
	}
	if len(argCosts) != 1 || checked == 0 {
		t.Errorf("%d argument costs, %d checked: a new one needs its own cases here", len(argCosts), checked)
	}
}

// TestPlainCostsAreTheComplexityFunctions checks the fields whose cost the
// walk adds up without asking the schema: none has a complexity function,
// and a document selecting every field of a run, its pages and a list
// costs the same with the shortcut as without.
func TestPlainCostsAreTheComplexityFunctions(t *testing.T) {
	es := graph.NewSchema(nil)
	plain := plainCosts(es)
	def := func(typ, field string) *ast.FieldDefinition { return es.Schema().Types[typ].Fields.ForName(field) }
	checked := 0
	for _, typ := range es.Schema().Types {
		for _, f := range typ.Fields {
			if !plain[f] {
				continue
			}
			checked++
			for _, child := range []int{0, 3} {
				if c, ok := es.Complexity(context.Background(), typ.Name, f.Name, child, nil); ok {
					t.Errorf("%s.%s is priced (%d for child %d) but taken as plain", typ.Name, f.Name, c, child)
				}
			}
		}
	}
	if checked != len(plain) {
		t.Errorf("%d plain fields are the schema's, of %d", checked, len(plain))
	}
	for _, key := range []fieldKey{{"Run", "id"}, {"Run", "status"}, {"Run", "state"}, {"Waiting", "kind"}, {"RunEdge", "node"}} {
		if !plain[def(key.typ, key.field)] {
			t.Errorf("%s.%s is not taken as plain", key.typ, key.field)
		}
	}
	for _, key := range []fieldKey{{"Run", "children"}, {"Query", "runs"}, {"Query", "listRuns"}} {
		if plain[def(key.typ, key.field)] {
			t.Errorf("%s.%s, which has arguments, is taken as plain", key.typ, key.field)
		}
	}
	run := `... on Run { __typename id revision status flowName state createdAt startedAt finishedAt heartbeatAt
		owner { hostId pid nonce } claim { owner { hostId pid nonce } claimedAt } parentRunId executionParentId
		parent { __typename ... on Run { id status } ... on MissingRun { id deleted } } lineageId roundOrdinal
		cancellation { requestedAt acknowledgement { observedAt owner { hostId pid nonce } } }
		waiting { kind reason wakeAt tokenDigest request } }
		... on MissingRun { __typename id deleted deletedAtRevision }`
	page := `{ edges { cursor ordinal node { ` + run + ` } } pageInfo { hasNextPage endCursor } }`
	doc := `query($id: ID!, $n: Int) { run(id: $id) { ... on Run { children(first: $n) ` + page + ` rounds(first: 10) ` + page + ` } }
		runs(ids: ["a", "b", "c"]) { ` + run + ` }
		listRuns(filter: {status: [FAILED]}, first: 50) { edges { node { ` + run + ` } } } }`
	src, gerr := gqlparser.LoadQuery(es.Schema(), doc)
	if gerr != nil {
		t.Fatal(gerr)
	}
	// An operation's fields point to the schema's own definitions, by
	// which the walk finds them among the plain ones.
	onRun := src.Operations[0].SelectionSet[1].(*ast.Field).SelectionSet[0].(*ast.InlineFragment)
	if id := onRun.SelectionSet[1].(*ast.Field); id.Name != "id" || !plain[id.Definition] {
		t.Errorf("the walk does not find %s of runs(ids:) among the plain fields", id.Name)
	}
	vars := map[string]any{"id": "a", "n": int64(25)}
	walk := func(plain map[*ast.FieldDefinition]bool) measure {
		w := operationWalk{ctx: context.Background(), es: es, schema: es.Schema(), vars: vars, fragments: map[string]*measure{}, plain: plain}
		return w.set(src.Operations[0].SelectionSet)
	}
	with, without := walk(plain), walk(nil)
	if with != without || with.cost < 1000 {
		t.Errorf("with plain costs the walk measured %+v, without %+v", with, without)
	}
}
