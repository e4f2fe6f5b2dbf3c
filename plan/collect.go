package plan

import (
	"sync"

	"github.com/99designs/gqlgen/graphql"
	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/vektah/gqlparser/v2/ast"
)

// The fields a selection set collects on a type depend on the operation's
// variables only through directives (@skip, @include, @defer with a
// variable condition). Most selection sets a dashboard sends have none,
// and then every operation of the document collects the same fields: the
// read-ahead and the direct answer collect them once per document and
// type, not once per request and list element's type. A set with a
// directive is collected anew each time.

// sharedFields are the fields collected for the documents served, by
// document; at most as many documents as the query cache holds.
var sharedFields = func() *lru.Cache[*ast.QueryDocument, *docFields] {
	c, err := lru.New[*ast.QueryDocument, *docFields](1000)
	if err != nil {
		panic(err)
	}
	return c
}()

// docFields are one document's collected fields that no variable changes,
// by selection set and type, what the read-ahead found of them (walkSet,
// mayRead, readsParentsOnly) and how the direct answer writes them.
type docFields struct {
	m           sync.Map // selectionKey → []graphql.CollectedField
	sets        sync.Map // selectionKey → *fieldSet
	walks       sync.Map // selectionKey → []walkField
	reads       sync.Map // selectionKey of a field's selection and type → bool
	parentsOnly sync.Map // selectionKey of a field's selection and type → parentsOnlyRead
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

// sharedKey returns the shared fields of oc's document and the key of sel
// on typ among them; nil when sel is not shared (no document, or too many
// selections).
func sharedKey(oc *graphql.OperationContext, sel ast.SelectionSet, typ string) (*docFields, selectionKey) {
	k := selectionKey{n: len(sel), typ: typ}
	if oc.Doc == nil || len(sel) == 0 || len(sel) > maxShared {
		return nil, k
	}
	copy(k.sels[:], sel)
	// Peek takes the cache's read lock only: documents leave it in the
	// order they came.
	d, ok := sharedFields.Peek(oc.Doc)
	if !ok {
		d = &docFields{}
		sharedFields.Add(oc.Doc, d)
	}
	return d, k
}

// collectFields returns graphql.CollectFields(oc, sel, implementors), the
// same fields in the same order, from the document's shared fields when it
// has them. The caller must not change the slice it gets.
func collectFields(oc *graphql.OperationContext, sel ast.SelectionSet, implementors []string) []graphql.CollectedField {
	fields, _ := collectFixed(oc, sel, implementors)
	return fields
}

// collectFixed is collectFields, and says whether the fields are the same
// for every request of the document (fixed).
func collectFixed(oc *graphql.OperationContext, sel ast.SelectionSet, implementors []string) ([]graphql.CollectedField, bool) {
	fields, d, _ := collectShared(oc, sel, implementors)
	return fields, d != nil
}

// collectShared is collectFields, with the document's shared fields and
// the set's key among them when the fields are fixed; d is nil otherwise.
func collectShared(oc *graphql.OperationContext, sel ast.SelectionSet, implementors []string) (fields []graphql.CollectedField, d *docFields, key selectionKey) {
	if len(implementors) == 0 {
		return graphql.CollectFields(oc, sel, implementors), nil, key
	}
	// A type's implementors start with the type itself: the first names
	// the set.
	d, key = sharedKey(oc, sel, implementors[0])
	if d == nil {
		return graphql.CollectFields(oc, sel, implementors), nil, key
	}
	if fields, ok := d.m.Load(key); ok {
		return fields.([]graphql.CollectedField), d, key
	}
	fields = graphql.CollectFields(oc, sel, implementors)
	if !fixed(oc.Doc, sel) {
		return fields, nil, key
	}
	d.m.Store(key, fields)
	return fields, d, key
}

// fixed reports whether the fields sel collects are the same whatever the
// variables: no directive on its selections, nor on the inline fragments
// and fragment spreads it collects through, nor on their fragments.
func fixed(doc *ast.QueryDocument, sel ast.SelectionSet) bool {
	for _, s := range sel {
		switch s := s.(type) {
		case *ast.Field:
			if len(s.Directives) > 0 {
				return false
			}
		case *ast.InlineFragment:
			if len(s.Directives) > 0 || !fixed(doc, s.SelectionSet) {
				return false
			}
		case *ast.FragmentSpread:
			f := s.Definition
			if f == nil {
				f = doc.Fragments.ForName(s.Name)
			}
			if len(s.Directives) > 0 || f == nil || len(f.Directives) > 0 || !fixed(doc, f.SelectionSet) {
				return false
			}
		}
	}
	return true
}
