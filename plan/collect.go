package plan

import (
	"sync"

	"github.com/99designs/gqlgen/graphql"
	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/vektah/gqlparser/v2/ast"
)

// The fields a selection set collects on a type depend on the operation's
// variables only through directives (@skip, @include, @defer with a
// variable condition). Most documents a dashboard sends have none, and
// then every operation of the document collects the same fields: the
// read-ahead and the direct answer collect them once per document and
// type, not once per request and list element's type.

// sharedFields are the fields collected for the documents that have no
// directive on any selection, by document; at most as many documents as
// the query cache holds.
var sharedFields = func() *lru.Cache[*ast.QueryDocument, *docFields] {
	c, err := lru.New[*ast.QueryDocument, *docFields](1000)
	if err != nil {
		panic(err)
	}
	return c
}()

// docFields are one document's collected fields, by selection set and
// type, and what the read-ahead found of them (mayRead); nil for a
// document whose fields depend on its variables.
type docFields struct {
	m     sync.Map // selectionKey → []graphql.CollectedField
	reads sync.Map // selectionKey of a field's selection and type → bool
}

// maxShared is the most selections a set may have to be shared: sets are
// most often a fragment or a handful of fields.
const maxShared = 8

// selectionKey names a selection set on a type by the document's own
// nodes, which every request of the document shares. The slice holding
// them is no key: the executor merges a field's selections into a new
// slice on every request, and a cache keyed by it grows without bound.
type selectionKey struct {
	sels [maxShared]ast.Selection
	n    int
	typ  string
}

// keyOf returns the shared key of sel on typ; false when sel has too many
// selections to be shared.
func keyOf(sel ast.SelectionSet, typ string) (selectionKey, bool) {
	k := selectionKey{n: len(sel), typ: typ}
	if len(sel) > maxShared {
		return k, false
	}
	copy(k.sels[:], sel)
	return k, true
}

// sharedOf returns the shared fields of oc's document; nil when its fields
// are not shared.
func sharedOf(oc *graphql.OperationContext) *docFields {
	if oc.Doc == nil {
		return nil
	}
	// Peek takes the cache's read lock only: documents leave it in the
	// order they came.
	d, ok := sharedFields.Peek(oc.Doc)
	if !ok {
		if withoutDirectives(oc.Doc) {
			d = &docFields{}
		}
		sharedFields.Add(oc.Doc, d)
	}
	return d
}

// collectFields returns graphql.CollectFields(oc, sel, implementors), the
// same fields in the same order, from the document's shared fields when it
// has them. The caller must not change the slice it gets.
func collectFields(oc *graphql.OperationContext, sel ast.SelectionSet, implementors []string) []graphql.CollectedField {
	var d *docFields
	if len(sel) > 0 && len(implementors) > 0 {
		d = sharedOf(oc)
	}
	// A type's implementors start with the type itself: the first names
	// the set.
	key, keyed := selectionKey{}, false
	if d != nil {
		key, keyed = keyOf(sel, implementors[0])
	}
	if !keyed {
		return graphql.CollectFields(oc, sel, implementors)
	}
	if fields, ok := d.m.Load(key); ok {
		return fields.([]graphql.CollectedField)
	}
	fields := graphql.CollectFields(oc, sel, implementors)
	d.m.Store(key, fields)
	return fields
}

// withoutDirectives reports whether no selection of doc, in its
// operations and fragments, carries a directive.
func withoutDirectives(doc *ast.QueryDocument) bool {
	for _, op := range doc.Operations {
		if !setWithoutDirectives(op.SelectionSet) {
			return false
		}
	}
	for _, f := range doc.Fragments {
		if len(f.Directives) > 0 || !setWithoutDirectives(f.SelectionSet) {
			return false
		}
	}
	return true
}

func setWithoutDirectives(set ast.SelectionSet) bool {
	for _, sel := range set {
		switch s := sel.(type) {
		case *ast.Field:
			if len(s.Directives) > 0 || !setWithoutDirectives(s.SelectionSet) {
				return false
			}
		case *ast.InlineFragment:
			if len(s.Directives) > 0 || !setWithoutDirectives(s.SelectionSet) {
				return false
			}
		case *ast.FragmentSpread:
			if len(s.Directives) > 0 {
				return false
			}
		}
	}
	return true
}
