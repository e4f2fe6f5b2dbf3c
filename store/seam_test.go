package store_test

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/tools/go/packages"
)

const (
	module    = "github.com/flowsnap/flowsnap"
	storePath = module + "/store"
)

// seamProbe is a file laid over package snapshot while the seam is checked:
// each way of switching on the dialect, once, on the line its comment
// names. The check must find every one, so a rule that stops catching
// anything fails here rather than passing unseen.
const seamProbe = `package snapshot

import "github.com/flowsnap/flowsnap/store"

func seamProbe(db *store.DB) int {
	if db.Dialect() == store.SQLite { // probe: comparison; probe: constant
		return 1
	}
	switch db.Dialect() { // probe: switch
	case "postgres":
		return 2
	}
	if string(db.Dialect()) != "" { // probe: conversion
		return 3
	}
	return 0
}
`

// TestOnlyStoreSwitchesOnTheDialect fails when a package outside store
// branches on the dialect: compares a store.Dialect, switches on one, names
// store.SQLite or store.Postgres, or converts a Dialect to another type to
// compare it. Every difference between SQLite and PostgreSQL belongs behind
// a method of store. The packages are type-checked, so the check follows
// the value wherever it is stored or renamed.
//
// _test.go files may branch on the dialect, and so may test support: a
// package that no package's non-test files import (snapshot/snapshottest,
// store/storetest), since only tests reach it.
func TestOnlyStoreSwitchesOnTheDialect(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	probe := filepath.Join(root, "snapshot", "zz_seam_probe.go")
	cfg := &packages.Config{
		Mode:    packages.NeedName | packages.NeedFiles | packages.NeedImports | packages.NeedTypes | packages.NeedTypesInfo | packages.NeedSyntax,
		Dir:     root,
		Overlay: map[string][]byte{probe: []byte(seamProbe)},
	}
	pkgs, err := packages.Load(cfg, "./...")
	if err != nil {
		t.Fatal(err)
	}
	if packages.PrintErrors(pkgs) > 0 {
		t.Fatal("the module does not type-check")
	}

	imported := map[string]bool{}
	for _, p := range pkgs {
		for path := range p.Imports {
			imported[path] = true
		}
	}
	want := probeLines(t, seamProbe)
	found := map[string]bool{}
	checked := 0
	for _, p := range pkgs {
		if p.PkgPath == storePath || strings.HasPrefix(p.PkgPath, storePath+"/") {
			continue
		}
		if p.Name != "main" && !imported[p.PkgPath] {
			t.Logf("%s: test support (no package imports it), may name the dialect", p.PkgPath)
			continue
		}
		checked++
		for _, v := range dialectSwitches(p) {
			pos := p.Fset.Position(v.pos)
			if pos.Filename == probe {
				found[fmt.Sprintf("%d %s", pos.Line, v.what)] = true
				continue
			}
			t.Errorf("%s: %s; put the dialect difference behind a method of store", pos, v.what)
		}
	}
	if checked < 5 {
		t.Fatalf("only %d packages were checked", checked)
	}
	for _, w := range want {
		if !found[w] {
			t.Errorf("the check missed the probe's %q", w)
		}
	}
	for f := range found {
		if !slices.Contains(want, f) {
			t.Errorf("the check found %q in the probe, which marks no such line", f)
		}
	}
}

// probeLines returns "line what" for every "probe: what" comment of src.
func probeLines(t *testing.T, src string) []string {
	var out []string
	for i, line := range strings.Split(src, "\n") {
		_, marks, ok := strings.Cut(line, "// ")
		if !ok {
			continue
		}
		for m := range strings.SplitSeq(marks, ";") {
			if what, ok := strings.CutPrefix(strings.TrimSpace(m), "probe: "); ok {
				out = append(out, fmt.Sprintf("%d %s", i+1, what))
			}
		}
	}
	if len(out) == 0 {
		t.Fatal("the probe marks nothing")
	}
	return out
}

type violation struct {
	pos  token.Pos
	what string
}

// dialectSwitches returns where the non-test files of p branch on a
// store.Dialect.
func dialectSwitches(p *packages.Package) []violation {
	var out []violation
	isDialect := func(e ast.Expr) bool {
		tv, ok := p.TypesInfo.Types[e]
		if !ok {
			return false
		}
		n, ok := types.Unalias(tv.Type).(*types.Named)
		return ok && n.Obj().Pkg() != nil && n.Obj().Pkg().Path() == storePath && n.Obj().Name() == "Dialect"
	}
	for _, f := range p.Syntax {
		if strings.HasSuffix(p.Fset.Position(f.Pos()).Filename, "_test.go") {
			continue
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.BinaryExpr:
				if (n.Op == token.EQL || n.Op == token.NEQ) && (isDialect(n.X) || isDialect(n.Y)) {
					out = append(out, violation{n.OpPos, "comparison"})
				}
			case *ast.SwitchStmt:
				if n.Tag != nil && isDialect(n.Tag) {
					out = append(out, violation{n.Switch, "switch"})
				}
			case *ast.CallExpr:
				// A conversion of a Dialect to string (or another type).
				if tv, ok := p.TypesInfo.Types[n.Fun]; ok && tv.IsType() && len(n.Args) == 1 && isDialect(n.Args[0]) {
					out = append(out, violation{n.Lparen, "conversion"})
				}
			case *ast.Ident:
				if c, ok := p.TypesInfo.Uses[n].(*types.Const); ok && c.Pkg() != nil && c.Pkg().Path() == storePath &&
					(c.Name() == "SQLite" || c.Name() == "Postgres") {
					out = append(out, violation{n.Pos(), "constant"})
				}
			}
			return true
		})
	}
	return out
}
