// Package plan reads an operation's data in as few statements as its
// shape allows, and writes the answers it knows without gqlgen's executor.
//
// Each query operation gets its own loaders (loaders.go), which every
// resolver that reads asks by key (fields.go). Before the first root field
// resolves, the read-ahead (readahead.go) walks the operation's selection
// level by level and asks each loader for every key of a level at once; a
// query that one statement can read is read in that one statement. The
// root fields that read by themselves (a page of listRuns, the change
// feed, a count) are read once per operation (roots.go), and what they
// select below is read ahead the same way. The
// direct answer (direct.go) then writes the response of the queries whose
// every field it knows straight from the loaders, byte for byte as the
// executor would. The package is given the schema the operations were
// validated against (New); it knows the GraphQL names of the fields that
// read, and nothing of HTTP.
package plan

import (
	"context"

	"github.com/vektah/gqlparser/v2/ast"

	"github.com/flowsnap/flowsnap/snapshot"
)

// Planner plans the reads of operations validated against one schema.
type Planner struct {
	schema *ast.Schema
	// implementors are, per object type, the type conditions its fields
	// are selected under: itself, its interfaces and the unions it belongs
	// to.
	implementors map[string][]string
	// rootArgs decodes root fields' arguments (WithRootArgs); nil leaves
	// the root fields that read by themselves to the executor.
	rootArgs RootArgs
}

// New returns the planner of operations validated against schema.
func New(schema *ast.Schema) *Planner {
	impl := map[string][]string{}
	for name, def := range schema.Types {
		if def.Kind != ast.Object {
			continue
		}
		impl[name] = append([]string{name}, def.Interfaces...)
	}
	for name, def := range schema.Types {
		if def.Kind == ast.Union {
			for _, member := range def.Types {
				impl[member] = append(impl[member], name)
			}
		}
	}
	return &Planner{schema: schema, implementors: impl}
}

// Begin returns ctx carrying the loaders of one operation, which read
// through reader in the operation's read rd (nil for a subscription's
// event, whose read the context carries already). Nothing is read yet.
func (p *Planner) Begin(ctx context.Context, reader *snapshot.Reader, rd *snapshot.Read) context.Context {
	return context.WithValue(ctx, loadersKey{}, newLoaders(p, reader, rd))
}
