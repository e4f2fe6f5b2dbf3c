package store_test

import (
	"errors"
	"testing"

	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/storetest"
)

func TestBeginReadWith(t *testing.T) {
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		db := storetest.Open(t, d)
		ctx := testContext(t)
		mustExec(t, db, `INSERT INTO flows_runs (run_id, status, created_at_ms, state_json) VALUES ('a', 'pending', 1, '{"flowName":"f"}')`)

		t.Run("reads the first row and the query's rows in one snapshot", func(t *testing.T) {
			var src string
			var rev int64
			tx, rows, err := db.BeginReadWith(ctx, `SELECT source, revision FROM flows_run_source WHERE singleton = 1`, []any{&src, &rev},
				`SELECT run_id FROM flows_runs WHERE run_id = $1`, "a")
			if err != nil {
				t.Fatal(err)
			}
			ids := scanIDs(t, rows)
			if rows.Err() != nil || len(ids) != 1 || ids[0] != "a" || len(src) != 32 || rev < 1 {
				t.Fatalf("ids %v, position (%q, %d), err %v", ids, src, rev, rows.Err())
			}
			// The transaction goes on after the batch.
			var n int64
			if err := tx.QueryRow(ctx, `SELECT count(*) FROM flows_runs`).Scan(&n); err != nil || n != 1 {
				t.Fatalf("count = %d, %v", n, err)
			}
			if _, err := tx.Exec(ctx, `DELETE FROM flows_runs`); err == nil {
				t.Fatal("a read transaction wrote")
			}
			if err := tx.Rollback(ctx); err != nil && d == store.SQLite {
				t.Fatal(err)
			}
		})

		t.Run("a first statement without a row is ErrNoRows", func(t *testing.T) {
			var s string
			_, _, err := db.BeginReadWith(ctx, `SELECT run_id FROM flows_runs WHERE run_id = 'none'`, []any{&s}, `SELECT 1`)
			if !errors.Is(err, store.ErrNoRows) {
				t.Fatalf("err = %v", err)
			}
		})

		t.Run("a failing query leaves nothing open", func(t *testing.T) {
			var src string
			var rev int64
			for range 20 { // more than the pool holds
				_, _, err := db.BeginReadWith(ctx, `SELECT source, revision FROM flows_run_source`, []any{&src, &rev}, `SELECT no_such_column FROM flows_runs`)
				if err == nil {
					t.Fatal("a broken query succeeded")
				}
			}
			tx, err := db.BeginRead(ctx)
			if err != nil {
				t.Fatal(err)
			}
			_ = tx.Rollback(ctx)
		})
	})
}

// TestQueryLastEndsTheTransaction runs a transaction's last statement with
// its ROLLBACK behind it (store.LastQuerier), in every PostgreSQL exec
// mode: the rows are the statement's, closing them gives the connection
// back, Rollback after does nothing; a statement that fails leaves nothing
// open either.
func TestQueryLastEndsTheTransaction(t *testing.T) {
	dsn := storetest.DSN(t, store.Postgres)
	w := storetest.OpenDSN(t, dsn, true)
	mustExec(t, w, `INSERT INTO flows_runs (run_id, status, created_at_ms, state_json) VALUES ('a', 'pending', 1, '{"flowName":"f"}')`)
	for _, mode := range store.ExecModes {
		t.Run(mode, func(t *testing.T) {
			ctx := testContext(t)
			app := "flowsnap-querylast-" + mode
			db, err := store.Open(ctx, dsn+"&application_name="+app, store.Options{ReadOnly: true, PGExecMode: mode, MaxReaders: 1})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			begin := func() store.LastQuerier {
				t.Helper()
				var src string
				var rev int64
				tx, rows, err := db.BeginReadWith(ctx, `SELECT source, revision FROM flows_run_source WHERE singleton = 1`, []any{&src, &rev}, `SELECT 1`)
				if err != nil {
					t.Fatal(err)
				}
				rows.Close()
				last, ok := tx.(store.LastQuerier)
				if !ok {
					t.Fatalf("%T runs no last statement", tx)
				}
				t.Cleanup(func() {
					if err := tx.Rollback(ctx); err != nil {
						t.Errorf("Rollback after the last statement: %v", err)
					}
				})
				return last
			}
			for range 3 { // more than the pool holds
				rows, err := begin().QueryLast(ctx, `SELECT run_id FROM flows_runs WHERE run_id = $1`, "a")
				if err != nil {
					t.Fatal(err)
				}
				ids := scanIDs(t, rows)
				if rows.Err() != nil || len(ids) != 1 || ids[0] != "a" {
					t.Fatalf("ids %v, err %v", ids, rows.Err())
				}
				if n := db.Pool().Stat().AcquiredConns(); n != 0 {
					t.Fatalf("%d connections held after the last statement's rows closed", n)
				}
			}
			for range 3 {
				rows, err := begin().QueryLast(ctx, `SELECT no_such_column FROM flows_runs`)
				if err == nil {
					for rows.Next() {
					}
					err = rows.Err()
					rows.Close()
				}
				if err == nil {
					t.Fatal("a broken last statement succeeded")
				}
				if n := db.Pool().Stat().AcquiredConns(); n != 0 {
					t.Fatalf("%d connections held after a failed last statement", n)
				}
			}
			var idle int64
			if err := w.Pool().QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 AND state LIKE 'idle in transaction%'`, app).Scan(&idle); err != nil {
				t.Fatal(err)
			}
			if idle != 0 {
				t.Fatalf("%d sessions idle in a transaction", idle)
			}
		})
	}
}

// scanIDs returns the one text column of every row, and closes rows.
func scanIDs(t *testing.T, rows store.Rows) []string {
	t.Helper()
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids
}
