// Package snapshottest writes what no engine should: rows that break the
// engine store's invariants, so that tests can check how snapshot reads
// refuse them. A store it has loosened is fit only for the test that made
// it.
package snapshottest

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/flowsnap/flowsnap/store"
)

// refusingTriggers are the triggers that refuse a run row whose
// execution_parent_id disagrees with its spawn edges. The triggers that
// record changes stay, so a broken row still gets a revision.
var refusingTriggers = []string{"flows_runs_execution_parent_insert", "flows_runs_execution_parent_update"}

// stateIndexes are the indexes over an expression of state_json (every
// one the inventory lists), which cannot be computed for a state that is
// not JSON: a loosened store drops them, so that such a state can be
// written.
var stateIndexes = func() []string {
	var names []string
	for _, o := range store.Inventory() {
		if o.Kind == store.KindIndex && (strings.Contains(o.SQLite, "state_json") || strings.Contains(o.Postgres, "state_json")) {
			names = append(names, o.Name)
		}
	}
	return names
}()

// Loose writes to a store without its CHECK constraints, without the
// triggers that refuse an inconsistent run and without the indexes over
// state_json's flow name: on SQLite through a connection
// of its own with ignore_check_constraints on, on PostgreSQL after dropping
// the CHECK constraints of flows_runs and flows_run_changes. Foreign keys,
// NOT NULL, unique indexes and SQLite's STRICT column types still hold.
type Loose struct {
	d    store.Dialect
	db   *store.DB
	conn *sql.Conn // SQLite
}

// Loosen makes db, a store opened for writing, accept broken rows through
// the returned Loose. Writes through db itself stay checked on SQLite.
func Loosen(t testing.TB, db *store.DB) *Loose {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l := &Loose{d: db.Dialect(), db: db}
	if l.d == store.Postgres {
		err := db.Write(ctx, func(tx store.Tx) error {
			drops, err := checkDrops(ctx, tx, "flows_runs", "flows_run_changes")
			if err != nil {
				return err
			}
			for _, trg := range refusingTriggers {
				drops = append(drops, "ALTER TABLE flows_runs DISABLE TRIGGER "+trg)
			}
			for _, idx := range stateIndexes {
				drops = append(drops, "DROP INDEX IF EXISTS "+idx)
			}
			return execAll(ctx, tx, drops)
		})
		if err != nil {
			t.Fatalf("loosening the store: %v", err)
		}
		return l
	}
	sdb, err := sql.Open("sqlite", "file:"+(&url.URL{Path: db.SQLitePath()}).EscapedPath()+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatalf("opening a loose connection: %v", err)
	}
	t.Cleanup(func() { sdb.Close() })
	l.conn, err = sdb.Conn(ctx)
	if err != nil {
		t.Fatalf("opening a loose connection: %v", err)
	}
	t.Cleanup(func() { l.conn.Close() })
	stmts := []string{"PRAGMA ignore_check_constraints = ON"}
	for _, trg := range refusingTriggers {
		stmts = append(stmts, "DROP TRIGGER IF EXISTS "+trg)
	}
	for _, idx := range stateIndexes {
		stmts = append(stmts, "DROP INDEX IF EXISTS "+idx)
	}
	for _, q := range stmts {
		if _, err := l.conn.ExecContext(ctx, q); err != nil {
			t.Fatalf("loosening the store: %v", err)
		}
	}
	return l
}

// Exec runs one statement, with $1, $2, … placeholders, in a transaction of
// its own, and fails the test when it fails.
func (l *Loose) Exec(t testing.TB, query string, args ...any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var err error
	if l.d == store.Postgres {
		err = l.db.Write(ctx, func(tx store.Tx) error {
			_, err := tx.Exec(ctx, query, args...)
			return err
		})
	} else {
		_, err = l.conn.ExecContext(ctx, query, args...)
	}
	if err != nil {
		t.Fatalf("loose write %q: %v", firstLine(query), err)
	}
}

// DropStrict makes flows_runs a table whose columns take values of any type,
// as a SQLite store written without STRICT tables would. SQLite only.
func (l *Loose) DropStrict(t testing.TB) {
	t.Helper()
	if l.d != store.SQLite {
		t.Fatalf("DropStrict is for SQLite stores")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var version int64
	if err := l.conn.QueryRowContext(ctx, "PRAGMA schema_version").Scan(&version); err != nil {
		t.Fatalf("reading the schema version: %v", err)
	}
	// Bumping the schema version makes every connection parse the new
	// table definition.
	for _, q := range []string{
		"PRAGMA writable_schema = ON",
		`UPDATE sqlite_schema SET sql = substr(sql, 1, length(sql) - length(' STRICT'))
			WHERE type = 'table' AND name = 'flows_runs' AND sql LIKE '%) STRICT'`,
		fmt.Sprintf("PRAGMA schema_version = %d", version+1),
		"PRAGMA writable_schema = OFF",
	} {
		if _, err := l.conn.ExecContext(ctx, q); err != nil {
			t.Fatalf("dropping STRICT from flows_runs: %v", err)
		}
	}
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + "…"
	}
	return s
}

// checkDrops returns the statements that drop the CHECK constraints of
// PostgreSQL's tables.
func checkDrops(ctx context.Context, tx store.Tx, tables ...string) ([]string, error) {
	var drops []string
	for _, table := range tables {
		rows, err := tx.Query(ctx, `SELECT conname FROM pg_constraint WHERE contype = 'c' AND conrelid = $1::regclass`, table)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var name string
			if err := rows.Scan(&name); err != nil {
				rows.Close()
				return nil, err
			}
			drops = append(drops, fmt.Sprintf("ALTER TABLE %s DROP CONSTRAINT %s", table, name))
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	return drops, nil
}

// execAll runs statements in tx, one after another.
func execAll(ctx context.Context, tx store.Tx, statements []string) error {
	for _, q := range statements {
		if _, err := tx.Exec(ctx, q); err != nil {
			return err
		}
	}
	return nil
}
