package store_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/storetest"
)

// TestTheWALGateDrainsAWALRefilledWithoutAReset covers the WAL after its
// first reset: SQLite then writes it again from the start but does not
// shrink the file, so the file's size says nothing until the WAL outgrows
// its old extent. Reads that keep it from being reset while it refills must
// still be drained once its content passes the threshold, or the WAL would
// ratchet up by one look's worth of writes at every drain.
func TestTheWALGateDrainsAWALRefilledWithoutAReset(t *testing.T) {
	t.Parallel()
	db := storetest.Open(t, store.SQLite)
	ctx := context.Background()
	walPath := db.SQLitePath() + "-wal"
	if _, err := store.BeginUngatedRead(ctx, db); err != nil { // warms the reader pool
		t.Fatal(err)
	}
	pad := strings.Repeat("x", 3000)
	n := 0
	write := func() {
		t.Helper()
		n++
		err := db.Write(ctx, func(tx store.Tx) error {
			_, err := tx.Exec(ctx, `INSERT INTO flows_runs (run_id, status, created_at_ms, state_json)
				VALUES ($1, 'pending', 0, $2)`, fmt.Sprintf("run-%06d", n), `{"flowName":"wal","pad":"`+pad+`"}`)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	fileSize := func() int64 {
		fi, err := os.Stat(walPath)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}

	// Grow the WAL to three times the threshold while a read outside the
	// gate keeps it from being reset.
	pin, err := store.BeginUngatedRead(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	var rev int64
	var src string
	if err := pin.QueryRow(ctx, `SELECT source, revision FROM flows_run_source`).Scan(&src, &rev); err != nil {
		t.Fatal(err)
	}
	for fileSize() < 3*store.WALGateThreshold(db) {
		write()
	}
	pin.Rollback(ctx)
	// Write on until the engine has reset it.
	before := store.WALStamp(walPath)
	for i := 0; ; i++ {
		if store.WALStamp(walPath) != before {
			break
		}
		if i > 10000 {
			t.Fatal("the WAL was never reset")
		}
		write()
	}
	extent := fileSize()

	// Refill it past the threshold, within its old extent, while a read
	// through the gate is open, looking as reads entering the gate would.
	rd, err := db.BeginRead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Rollback(ctx)
	if err := rd.QueryRow(ctx, `SELECT source, revision FROM flows_run_source`).Scan(&src, &rev); err != nil {
		t.Fatal(err)
	}
	reset := store.WALStamp(walPath)
	for i := 0; ; i++ {
		write()
		if store.WALStamp(walPath) != reset || fileSize() > extent {
			t.Fatalf("the WAL was refilled to its old extent of %d bytes (%d writes) without a drain", extent, i)
		}
		if store.WALGateLook(db) > 0 {
			break
		}
	}
}
