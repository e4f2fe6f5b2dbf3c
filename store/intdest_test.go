package store_test

import (
	"testing"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/flowsnap/flowsnap/store"
)

// TestIntDests fills plain values as a scan into *any would: an integer as
// a pointer to it, NULL as nil, anything else as it came, a blob copied.
func TestIntDests(t *testing.T) {
	var a, b, c, d any
	dests := store.IntDests(&a, &b, &c, &d)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(dests[0].(*store.IntDest).ScanInt64(pgtype.Int8{Int64: 1 << 40, Valid: true}))
	must(dests[1].(*store.IntDest).ScanInt64(pgtype.Int8{}))
	blob := []byte("hi")
	must(dests[2].(*store.IntDest).Scan(blob))
	must(dests[3].(*store.IntDest).Scan("yesterday"))
	blob[0] = 'X'
	if p, ok := a.(*int64); !ok || *p != 1<<40 {
		t.Errorf("an integer: %#v", a)
	}
	if b != nil {
		t.Errorf("NULL: %#v", b)
	}
	if got, ok := c.([]byte); !ok || string(got) != "hi" {
		t.Errorf("a blob: %#v", c)
	}
	if d != "yesterday" {
		t.Errorf("text: %#v", d)
	}
}
