package endpoint

import (
	"context"
	"encoding/json"
	"testing"

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
