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
			var ids []string
			for rows.Next() {
				var id string
				if err := rows.Scan(&id); err != nil {
					t.Fatal(err)
				}
				ids = append(ids, id)
			}
			rows.Close()
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
