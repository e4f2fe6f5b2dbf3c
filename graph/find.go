package graph

import "github.com/flowsnap/flowsnap/snapshot"

// findComplexity gives the change feed and the run lists their real cost: a
// batch or page costs its size times its selection.
func findComplexity(c *ComplexityRoot) {
	c.Query.Changes = func(child int, _ int64, _ *string, first *int) int {
		n := snapshot.DefaultChangesSize
		if first != nil && *first > 0 {
			n = *first
		}
		return 1 + n*child
	}
}
