package plan

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/99designs/gqlgen/codegen/config"
	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/flowsnap/flowsnap/snapshot"
)

// TestEveryBatchedFieldHasKeys fails when a field marked batch: true in
// gqlgen.yml has no entry in batchFields: its resolver would read with keys
// readAhead does not know, and an operation would silently lose its batching.
// It also fails on entries for fields the schema does not have.
func TestEveryBatchedFieldHasKeys(t *testing.T) {
	f, err := os.Open("../gqlgen.yml")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cfg, err := config.ReadConfig(f)
	if err != nil {
		t.Fatal(err)
	}
	batched := 0
	for typ, model := range cfg.Models {
		for name, fc := range model.Fields {
			if fc.Batch == nil || !*fc.Batch {
				continue
			}
			batched++
			if _, ok := batchFields[typ+"."+name]; !ok {
				t.Errorf("%s.%s is batch: true in gqlgen.yml but has no entry in batchFields", typ, name)
			}
		}
	}
	if batched == 0 {
		t.Fatal("gqlgen.yml marks no field batch: true; the check reads the wrong file")
	}
	schema := loadSchema(t)
	for _, table := range []map[string]bool{keysOf(batchFields), keysOf(throughFields)} {
		for key := range table {
			typ, name, _ := strings.Cut(key, ".")
			def := schema.Types[typ]
			if def == nil || def.Fields.ForName(name) == nil {
				t.Errorf("%s is in a read-ahead table but not in the schema", key)
			}
		}
	}
}

// loadSchema parses the schema the resolvers serve, from its source.
func loadSchema(t *testing.T) *ast.Schema {
	t.Helper()
	files, err := filepath.Glob("../graph/*.graphqls")
	if err != nil || len(files) == 0 {
		t.Fatalf("no schema files: %v", err)
	}
	var sources []*ast.Source
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		sources = append(sources, &ast.Source{Name: f, Input: string(b)})
	}
	schema, gqlErr := gqlparser.LoadSchema(sources...)
	if gqlErr != nil {
		t.Fatal(gqlErr)
	}
	return schema
}

func keysOf[V any](m map[string]V) map[string]bool {
	out := map[string]bool{}
	for k := range m {
		out[k] = true
	}
	return out
}

// TestByTypeGroupsInFirstAppearance checks the grouping of a level's
// objects: by type in the order the types first appear, without the
// objects readAhead does not follow, and a level of one type as it is.
func TestByTypeGroupsInFirstAppearance(t *testing.T) {
	a, b := &snapshot.Run{ID: "a"}, &snapshot.Run{ID: "b"}
	page := &snapshot.Page{Anchor: "a"}
	var none *snapshot.Run
	missing := &snapshot.Missing{ID: "gone"}
	groups := byType([]any{a, none, page, missing, b, page})
	if len(groups) != 2 || groups[0].name != "Run" || groups[1].name != "RunConnection" {
		t.Fatalf("groups %+v", groups)
	}
	if g := groups[0].objs; len(g) != 2 || g[0] != a || g[1] != b {
		t.Fatalf("runs %v", g)
	}
	if g := groups[1].objs; len(g) != 2 || g[0] != page || g[1] != page {
		t.Fatalf("pages %v", g)
	}
	same := []any{a, b}
	if groups := byType(same); len(groups) != 1 || groups[0].name != "Run" || &groups[0].objs[0] != &same[0] {
		t.Fatalf("one type: %+v", groups)
	}
	for _, objs := range [][]any{nil, {none}, {missing, none}} {
		if groups := byType(objs); len(groups) != 0 {
			t.Fatalf("%v: groups %+v", objs, groups)
		}
	}
}
