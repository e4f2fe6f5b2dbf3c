package store_test

import (
	"context"
	"runtime"
	"testing"

	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/storetest"
)

func TestReadersInUseCountsOpenReads(t *testing.T) {
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		dsn := storetest.DSN(t, d)
		storetest.OpenDSN(t, dsn, true)
		db := storetest.OpenReader(t, dsn)
		ctx := context.Background()
		if n := db.ReadersInUse(); n != 0 {
			t.Fatalf("before any read: %d in use", n)
		}
		a, err := db.BeginRead(ctx)
		if err != nil {
			t.Fatal(err)
		}
		b, err := db.BeginRead(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if n := db.ReadersInUse(); n != 2 {
			t.Fatalf("with two reads open: %d in use", n)
		}
		_ = a.Rollback(ctx)
		_ = b.Rollback(ctx)
		if n := db.ReadersInUse(); n != 0 {
			t.Fatalf("after both ended: %d in use", n)
		}
	})
}

// TestBusyReadersStillCacheStatements holds every read connection of a
// SQLite store, so that none is idle to prepare a new statement on: the
// read runs it unprepared, and caches it once it has ended.
func TestBusyReadersStillCacheStatements(t *testing.T) {
	dsn := storetest.DSN(t, store.SQLite)
	storetest.OpenDSN(t, dsn, true)
	ctx := context.Background()
	db, err := store.Open(ctx, dsn, store.Options{ReadOnly: true, MaxReaders: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	const q = `SELECT count(*) FROM flows_runs WHERE run_id > $1`
	tx, err := db.BeginRead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	if err := tx.QueryRow(ctx, q, "a").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if store.CachedStatement(db, q) {
		t.Fatal("cached while its one connection was held: the test holds nothing")
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if !store.CachedStatement(db, q) {
		t.Fatal("the statement a busy read ran is not cached once the read has ended")
	}
	// The cached statement serves the next read.
	tx, err = db.BeginRead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if err := tx.QueryRow(ctx, q, "a").Scan(&n); err != nil || n != 0 {
		t.Fatalf("the cached statement read %d, %v", n, err)
	}
}

// TestDefaultReaders opens each dialect without MaxReaders: PostgreSQL
// gets 8 read connections, SQLite twice the CPUs, at most 8, since each of
// its readers keeps a page cache of its own.
func TestDefaultReaders(t *testing.T) {
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		dsn := storetest.DSN(t, d)
		storetest.OpenDSN(t, dsn, true)
		db, err := store.Open(context.Background(), dsn, store.Options{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		want := 8
		if d == store.SQLite {
			want = min(8, 2*runtime.GOMAXPROCS(0))
		}
		if got := db.MaxReaders(); got != want || store.DefaultReaders(d) != want {
			t.Fatalf("%d readers (default %d), want %d", got, store.DefaultReaders(d), want)
		}
		if db, err := store.Open(context.Background(), dsn, store.Options{ReadOnly: true, MaxReaders: 3}); err != nil || db.MaxReaders() != 3 {
			t.Fatalf("MaxReaders 3: %v", err)
		} else {
			db.Close()
		}
	})
}
