package snapshot

import (
	"github.com/flowsnap/flowsnap/cursor"
	"github.com/flowsnap/flowsnap/store"
)

// Hooks for the tests of package snapshot_test.

// ListSQL returns the statement and arguments ListRuns reads a page of req
// with after the cursor after (nil: the first page), for tests that read
// its plan.
func ListSQL(d store.Dialect, req ListRequest, after *cursor.Cursor) (string, []any) {
	f := req.Filter.canonical()
	if req.Order == "" {
		req.Order = NewestFirst
	}
	l := f.where(d)
	size, _ := pageSize(req.First)
	return listStatement(l.keyset(req.Order, after, size+1)), l.args
}

// ListDigest is the anchor of the list cursors of req.
func ListDigest(req ListRequest) string {
	if req.Order == "" {
		req.Order = NewestFirst
	}
	return digest(req.Filter.canonical(), req.Order)
}

// ListCursor is the cursor a page of req ending at (created, last) gives.
func ListCursor(source string, req ListRequest, created int64, last string) string {
	return cursor.Encode(cursor.Cursor{Source: source, Anchor: ListDigest(req), Kind: cursor.List, Ordinal: created, Last: last})
}
