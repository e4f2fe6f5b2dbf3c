package store_test

import (
	"context"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/storetest"
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

// TestTextDests reads text, empty text, NULL and a blob from each dialect
// through TextDests: PostgreSQL's text as a *store.Text of its bytes,
// which stays distinct from NULL when empty; SQLite's as the string or
// blob it is.
func TestTextDests(t *testing.T) {
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		dsn := storetest.DSN(t, d)
		storetest.OpenDSN(t, dsn, true)
		db := storetest.OpenReader(t, dsn)
		ctx := context.Background()
		tx, err := db.BeginRead(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = tx.Rollback(ctx) }()
		var text, empty, null any
		dests := store.TextDests(&text, &empty, &null)
		if err := tx.QueryRow(ctx, `SELECT 'état', '', NULL`).Scan(dests...); err != nil {
			t.Fatal(err)
		}
		if s, ok := store.AsText(text); !ok || s != "état" {
			t.Errorf("text: %#v", text)
		}
		if s, ok := store.AsText(empty); !ok || s != "" {
			t.Errorf("empty text: %#v", empty)
		}
		if _, ok := store.AsText(null); ok || null != nil {
			t.Errorf("NULL: %#v", null)
		}
		if d == store.Postgres {
			if _, ok := text.(*store.Text); !ok {
				t.Errorf("PostgreSQL's text came as %T, not its bytes", text)
			}
			return
		}
		var blob any
		if err := tx.QueryRow(ctx, `SELECT x'6869'`).Scan(store.TextDests(&blob)...); err != nil {
			t.Fatal(err)
		}
		if b, ok := blob.([]byte); !ok || string(b) != "hi" {
			t.Errorf("a blob: %#v", blob)
		}
	})
}

// TestTextListInEveryExecMode reads a list of awkward ids back through
// TextList and TextListArg, on PostgreSQL in each of pgx's exec modes
// (which encode the argument by its declared type, by its Go type, or as
// a literal), and on SQLite.
func TestTextListInEveryExecMode(t *testing.T) {
	ids := []string{"plain", `"quoted"`, `back\slash`, "{braces},comma", "NULL", " spaced ", "état ☃ 𝄞", "tab\tnew\nline"}
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		dsn := storetest.DSN(t, d)
		storetest.OpenDSN(t, dsn, true)
		modes := []string{""}
		if d == store.Postgres {
			modes = store.ExecModes
		}
		for _, mode := range modes {
			ctx := context.Background()
			db, err := store.Open(ctx, dsn, store.Options{ReadOnly: true, PGExecMode: mode})
			if err != nil {
				t.Fatal(err)
			}
			got, err := readList(ctx, db, d.TextList(1), d.TextListArg(ids))
			db.Close()
			if err != nil {
				t.Fatalf("mode %q: %v", mode, err)
			}
			if !slices.Equal(got, ids) {
				t.Errorf("mode %q: read back %q, want %q", mode, got, ids)
			}
		}
	})
}

// readList returns the one text column of query's rows, read in a read
// transaction of db.
func readList(ctx context.Context, db *store.DB, query string, arg any) ([]string, error) {
	tx, err := db.BeginRead(ctx)
	if err != nil {
		return nil, err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	rows, err := tx.Query(ctx, query, arg)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		got = append(got, id)
	}
	return got, rows.Err()
}
