package main

import (
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"golang.org/x/tools/go/packages"
)

const modulePath = "github.com/flowsnap/flowsnap"

// TestPackagesImportOnlyWhatArchitectureAllows holds the module to the
// package table of ARCHITECTURE.md: every package has a row, no row names
// a package that does not exist, and no package's non-test files import a
// package of the module that its row's "may import" column does not list.
func TestPackagesImportOnlyWhatArchitectureAllows(t *testing.T) {
	t.Parallel()
	table := architectureTable(t)
	imports := moduleImports(t)
	if len(imports) < 10 {
		t.Fatalf("found %d packages in the module; the loader read the wrong tree", len(imports))
	}
	for _, v := range violations(table, imports) {
		t.Error(v)
	}
}

// TestTheImportCheckFindsAForbiddenImport keeps the check above from
// passing unseen: a table that allows less than the module imports, or
// lacks a package, must give a violation for each.
func TestTheImportCheckFindsAForbiddenImport(t *testing.T) {
	t.Parallel()
	imports := map[string][]string{"graph": {"plan", "snapshot"}, "plan": {"snapshot"}, "snapshot": nil}
	table := map[string][]string{"graph": {"plan"}, "plan": {"snapshot"}, "gone": nil}
	got := violations(table, imports)
	want := []string{
		`graph imports snapshot, which its row of ARCHITECTURE.md does not allow (may import: plan)`,
		`package gone has a row in ARCHITECTURE.md but is not in the module`,
		`package snapshot is not in the package table of ARCHITECTURE.md`,
	}
	if !slices.Equal(got, want) {
		t.Fatalf("violations\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// violations lists, sorted, how imports (package → the module packages
// its non-test files import, both relative to the module) break table
// (package → the packages it may import).
func violations(table, imports map[string][]string) []string {
	var out []string
	for pkg, deps := range imports {
		allowed, ok := table[pkg]
		if !ok {
			out = append(out, "package "+pkg+" is not in the package table of ARCHITECTURE.md")
			continue
		}
		for _, dep := range deps {
			if !slices.Contains(allowed, dep) {
				list := strings.Join(allowed, ", ")
				if list == "" {
					list = "nothing"
				}
				out = append(out, pkg+" imports "+dep+", which its row of ARCHITECTURE.md does not allow (may import: "+list+")")
			}
		}
	}
	for pkg := range table {
		if _, ok := imports[pkg]; !ok {
			out = append(out, "package "+pkg+" has a row in ARCHITECTURE.md but is not in the module")
		}
	}
	sort.Strings(out)
	return out
}

// architectureTable reads the package table of ARCHITECTURE.md: the first
// cell's first name in backticks is the package, the last cell's names in
// backticks what it may import ("nothing" for none).
func architectureTable(t *testing.T) map[string][]string {
	t.Helper()
	b, err := os.ReadFile("ARCHITECTURE.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## Packages\n")
	if !ok {
		t.Fatal("ARCHITECTURE.md has no Packages section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	name := regexp.MustCompile("`([^`]+)`")
	table := map[string][]string{}
	for line := range strings.SplitSeq(section, "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "| "), " | ")
		first := name.FindStringSubmatch(cells[0])
		if first == nil || len(cells) < 3 {
			t.Fatalf("a row of the package table without a package or columns: %s", line)
		}
		var allowed []string
		for _, m := range name.FindAllStringSubmatch(cells[len(cells)-1], -1) {
			allowed = append(allowed, m[1])
		}
		if allowed == nil && strings.TrimSpace(cells[len(cells)-1]) != "nothing" {
			t.Fatalf("the row of %s says neither packages nor nothing: %s", first[1], line)
		}
		table[first[1]] = allowed
	}
	if len(table) == 0 {
		t.Fatal("the package table of ARCHITECTURE.md has no rows")
	}
	return table
}

// moduleImports loads the module's packages (non-test files) and returns,
// for each, the module packages it imports, named as the table names
// them: relative to the module, main for the root.
func moduleImports(t *testing.T) map[string][]string {
	t.Helper()
	pkgs, err := packages.Load(&packages.Config{Mode: packages.NeedName | packages.NeedImports}, "./...")
	if err != nil {
		t.Fatal(err)
	}
	rel := func(path string) string {
		if path == modulePath {
			return "main"
		}
		return strings.TrimPrefix(path, modulePath+"/")
	}
	out := map[string][]string{}
	for _, p := range pkgs {
		if len(p.Errors) > 0 {
			t.Fatalf("%s: %v", p.PkgPath, p.Errors)
		}
		var deps []string
		for path := range p.Imports {
			if path == modulePath || strings.HasPrefix(path, modulePath+"/") {
				deps = append(deps, rel(path))
			}
		}
		sort.Strings(deps)
		out[rel(p.PkgPath)] = deps
	}
	return out
}
