package store_test

import (
	"context"
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
