package endpoint

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unsafe"

	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/parser"
	"github.com/vektah/gqlparser/v2/validator"

	"github.com/flowsnap/flowsnap/graph"
)

// The prescan refuses before the tree is built only what the checks on the
// tree (measureDocument, validation, shapeLimit) refuse too, at each
// limit's edge.
func TestThePrescanRefusesNoMoreThanTheParsedDocumentChecks(t *testing.T) {
	es := graph.NewSchema(nil)
	opts := Options{MaxNodes: 12, MaxSameName: 3, MaxAliases: 2, MaxFields: 1000}.withDefaults()
	g := newDocumentGuard(opts, nil, nil, es.Schema())
	docs := []struct {
		name, doc string
		refused   bool
	}{
		{"aliases, one of them the field's own name", `{ a: __typename b: __typename __typename: __typename }`, false},
		{"one alias more", `{ a: __typename b: __typename c: __typename }`, true},
		{"aliases spread over two operations", `query A { a: __typename b: __typename } query B { c: __typename }`, false},
		{"names after a spread, an inline fragment and a directive", `{ ...F ... on Query { on: __typename } __typename @include(if: true) } fragment F on Query { __typename }`, false},
		{"three fields of one name in a set and one in a fragment", `{ __typename __typename __typename ... { __typename } }`, false},
		{"four of one name in one set", `{ __typename __typename __typename __typename }`, true},
		{"arguments, objects and strings hold no nodes", `query($v: Int = 1) { run(id: "{ a b c d e f g h i j k l m }") { __typename } }`, false},
		{"twelve nodes", `{ a0: __typename b: __typename ` + strings.Repeat("... { __typename } ", 5) + `}`, false},
		{"thirteen nodes", `{ a0: __typename b: __typename ` + strings.Repeat("... { __typename } ", 5) + `__typename }`, true},
		{"a repeated @include", `{ __typename @include(if: true) @include(if: true) }`, true},
		{"@include at two places", `{ __typename @include(if: true) a: __typename @include(if: true) }`, false},
		{"an unknown directive", `{ __typename @nope }`, true},
	}
	for _, d := range docs {
		t.Run(d.name, func(t *testing.T) {
			got := g.prescan(context.Background(), d.doc) != nil
			if got != d.refused {
				t.Fatalf("prescan refused: %v, want %v", got, d.refused)
			}
			doc, err := parser.ParseQuery(&ast.Source{Input: d.doc})
			if err != nil {
				t.Fatal(err)
			}
			m := measureDocument(doc, opts.MaxFields)
			aliases := 0
			if errs := validator.Validate(es.Schema(), doc); len(errs) == 0 {
				for _, op := range doc.Operations {
					w := operationWalk{ctx: context.Background(), es: es, schema: es.Schema(), fragments: map[string]*measure{}}
					aliases = max(aliases, w.set(op.SelectionSet).aliases)
				}
			} else {
				aliases = opts.MaxAliases + 1 // refused as invalid
			}
			later := m.nodes > opts.MaxNodes || m.sameName > opts.MaxSameName || aliases > opts.MaxAliases
			if got && !later {
				t.Fatalf("refused by the prescan, passed after parsing: %+v, %d aliases", m, aliases)
			}
		})
	}
}

// TestQueryTextReadsEscapedAndPlainStringsAlike checks the shortcut that
// takes a query without escapes as it stands against a full decode.
func TestQueryTextReadsEscapedAndPlainStringsAlike(t *testing.T) {
	for _, q := range []string{"{ position { revision } }", "{\n\tposition { revision }\n}", `{ run(id: "a\"b") { __typename } }`, "{ run(id: \"é\") { __typename } }", ""} {
		raw, err := json.Marshal(q)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := queryText(raw)
		if !ok || got != q {
			t.Errorf("queryText(%s) = %q, %v; want %q", raw, got, ok, q)
		}
	}
	if _, ok := queryText(json.RawMessage(`"\x"`)); ok {
		t.Error(`queryText accepted the bad escape "\x"`)
	}
}

// TestRememberedQueryTextsAreTheirQueries checks queryTexts against
// queryText: a query sent again is answered from its place, the same text;
// one whose place another took, or too long to keep, is unquoted again; and
// a bad literal is refused every time.
func TestRememberedQueryTextsAreTheirQueries(t *testing.T) {
	c := newQueryTexts()
	var raws []json.RawMessage
	for i := range 4 * queryTextSlots {
		raw, err := json.Marshal(fmt.Sprintf("{\n\trun(id: \"r%d\") { id }\n}", i))
		if err != nil {
			t.Fatal(err)
		}
		raws = append(raws, raw)
	}
	long, err := json.Marshal("{\n" + strings.Repeat("\tposition { revision }\n", maxRememberedQuery/20) + "}")
	if err != nil {
		t.Fatal(err)
	}
	raws = append(raws, long)
	for round := range 2 {
		for _, raw := range raws {
			want, _ := queryText(raw)
			got, ok := c.text(raw)
			if !ok || got != want {
				t.Fatalf("round %d: text(%s) = %q, %v; want %q", round, raw, got, ok, want)
			}
		}
	}
	last := raws[len(raws)-2]
	first, _ := c.text(last)
	again, _ := c.text(last)
	if unsafe.StringData(first) != unsafe.StringData(again) {
		t.Error("a query sent again was unquoted again")
	}
	first, _ = c.text(long)
	again, _ = c.text(long)
	if unsafe.StringData(first) == unsafe.StringData(again) {
		t.Error("a query longer than maxRememberedQuery was kept")
	}
	for range 2 {
		if _, ok := c.text(json.RawMessage(`"\x"`)); ok {
			t.Error(`text accepted the bad escape "\x"`)
		}
	}
}
