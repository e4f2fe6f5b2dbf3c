package plan

import (
	"fmt"
	"testing"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
)

// TestHasRepeats checks the repeat test of collected fields on both of its
// paths, a few fields and many.
func TestHasRepeats(t *testing.T) {
	for _, n := range []int{1, 3, 16, 17, 40} {
		fields := make([]graphql.CollectedField, n)
		for i := range fields {
			fields[i] = graphql.CollectedField{Field: &ast.Field{Alias: fmt.Sprintf("f%d", i)}}
		}
		if hasRepeats(fields) {
			t.Fatalf("%d distinct fields have a repeat", n)
		}
		fields = append(fields, graphql.CollectedField{Field: &ast.Field{Alias: fmt.Sprintf("f%d", n/2)}})
		if !hasRepeats(fields) {
			t.Fatalf("%d fields and a repeat of one have none", n)
		}
	}
}
