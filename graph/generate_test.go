package graph_test

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestGeneratedCodeIsCurrent regenerates the GraphQL code in a copy of the
// module and fails when any generated file differs from the one committed:
// generated code is never edited by hand, and never left stale.
func TestGeneratedCodeIsCurrent(t *testing.T) {
	if testing.Short() {
		t.Skip("regenerating takes a few seconds")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if strings.HasPrefix(d.Name(), ".") && rel != "." || d.Name() == "testdata" || d.Name() == "flowsnap-data" {
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(work, rel), 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(work, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "tool", "gqlgen", "generate")
	cmd.Dir = work
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go tool gqlgen generate: %v\n%s", err, out)
	}
	generated, _ := filepath.Glob(filepath.Join(root, "graph", "*.go"))
	for _, path := range generated {
		name := filepath.Base(path)
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		want, _ := os.ReadFile(path)
		got, err := os.ReadFile(filepath.Join(work, "graph", name))
		if err != nil {
			t.Errorf("%s is no longer generated: %v", name, err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("graph/%s differs from what `go generate ./...` makes: run it and commit the result", name)
		}
	}
}
