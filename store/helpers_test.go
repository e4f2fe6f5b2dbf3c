package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/flowsnap/flowsnap/store"
)

func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// mustExec runs the statements in one committed write transaction.
func mustExec(t *testing.T, db *store.DB, stmts ...string) {
	t.Helper()
	ctx := testContext(t)
	err := db.Write(ctx, func(tx store.Tx) error {
		for _, s := range stmts {
			if _, err := tx.Exec(ctx, s); err != nil {
				return errors.Join(errors.New(s), err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("writing: %v", err)
	}
}

// queryInt reads one integer in a read transaction.
func queryInt(t *testing.T, db *store.DB, query string, args ...any) int64 {
	t.Helper()
	ctx := testContext(t)
	tx, err := db.BeginRead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	var n int64
	if err := tx.QueryRow(ctx, query, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

// sourceRevision is the store's current revision.
func sourceRevision(t *testing.T, db *store.DB) int64 {
	t.Helper()
	return queryInt(t, db, `SELECT revision FROM flows_run_source WHERE singleton = 1`)
}

// change is a run's row in flows_run_changes.
type change struct {
	revision int64
	deleted  int64
	found    bool
}

func changeOf(t *testing.T, db *store.DB, runID string) change {
	t.Helper()
	ctx := testContext(t)
	tx, err := db.BeginRead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	var c change
	err = tx.QueryRow(ctx, `SELECT revision, deleted FROM flows_run_changes WHERE run_id = $1`, runID).Scan(&c.revision, &c.deleted)
	if errors.Is(err, store.ErrNoRows) {
		return c
	}
	if err != nil {
		t.Fatal(err)
	}
	c.found = true
	return c
}

// executionParent is a run's execution_parent_id, "" when NULL.
func executionParent(t *testing.T, db *store.DB, runID string) string {
	t.Helper()
	ctx := testContext(t)
	tx, err := db.BeginRead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	var p *string
	if err := tx.QueryRow(ctx, `SELECT execution_parent_id FROM flows_runs WHERE run_id = $1`, runID).Scan(&p); err != nil {
		t.Fatal(err)
	}
	if p == nil {
		return ""
	}
	return *p
}

// insertRun is a minimal pending run.
func insertRun(id string) string {
	return `INSERT INTO flows_runs (run_id, status, created_at_ms, state_json) VALUES ('` + id + `', 'pending', 1000, '{"flowName":"f"}')`
}

// dropTrigger is DROP TRIGGER in dialect d, where PostgreSQL names the table.
func dropTrigger(d store.Dialect, name, table string) string {
	if d == store.Postgres {
		return "DROP TRIGGER " + name + " ON " + table
	}
	return "DROP TRIGGER " + name
}
