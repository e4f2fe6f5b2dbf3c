package genqlient_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/Khan/genqlient/generate"
)

// TestGeneratedCodeIsCurrent runs genqlient over genqlient.yaml in memory
// and fails when what it makes differs from the committed generated.go: the
// client is never edited by hand, and never left behind the schema or the
// operations.
func TestGeneratedCodeIsCurrent(t *testing.T) {
	config, err := filepath.Abs("genqlient.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := generate.ReadAndValidateConfig(config)
	if err != nil {
		t.Fatal(err)
	}
	files, err := generate.Generate(cfg)
	if err != nil {
		t.Fatalf("genqlient refuses the schema or the operations: %v", err)
	}
	want := filepath.Join(filepath.Dir(config), "generated.go")
	if len(files) != 1 || files[want] == nil {
		names := make([]string, 0, len(files))
		for name := range files {
			names = append(names, name)
		}
		t.Fatalf("genqlient makes %v, want only %s", names, want)
	}
	committed, err := os.ReadFile(want)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(files[want], committed) {
		t.Fatal("generated.go differs from what genqlient makes: run `go generate ./clients/genqlient` and commit the result")
	}
}

// TestTheREADMEShowsThisConfiguration fails when the configuration the
// genqlient section of docs/clients.md shows is not genqlient.yaml as it is.
func TestTheREADMEShowsThisConfiguration(t *testing.T) {
	readme, err := os.ReadFile("../../docs/clients.md")
	if err != nil {
		t.Fatal(err)
	}
	config, err := os.ReadFile("genqlient.yaml")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "\n## Go: genqlient\n")
	if !ok {
		t.Fatal("docs/clients.md has no genqlient section")
	}
	_, block, ok := strings.Cut(section, "\n```yaml\n")
	if !ok {
		t.Fatal("the genqlient section of docs/clients.md shows no configuration")
	}
	block, _, _ = strings.Cut(block, "```\n")
	if block != string(config) {
		t.Fatalf("docs/clients.md shows\n%s\nbut genqlient.yaml is\n%s", block, config)
	}
}
