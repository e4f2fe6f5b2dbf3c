// Package storetest gives tests real engine stores of their own: a SQLite
// file in WAL mode in t.TempDir(), or a PostgreSQL schema of its own in the
// server named by FLOWSNAP_TEST_POSTGRES, dropped when the test ends.
//
// When PostgreSQL cannot be reached a test is skipped, unless CI=true, where
// it fails: CI must exercise both dialects.
package storetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/flowsnap/flowsnap/store"
)

// DefaultPostgres is the server tests use when FLOWSNAP_TEST_POSTGRES is unset.
const DefaultPostgres = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// Dialects lists the dialects every conformance test runs against.
var Dialects = []store.Dialect{store.SQLite, store.Postgres}

// Each runs fn as a subtest per dialect, named after it.
func Each(t *testing.T, fn func(t *testing.T, d store.Dialect)) {
	t.Helper()
	for _, d := range Dialects {
		t.Run(string(d), func(t *testing.T) { fn(t, d) })
	}
}

// PostgresURL returns the server tests use.
func PostgresURL() string {
	if u := os.Getenv("FLOWSNAP_TEST_POSTGRES"); u != "" {
		return u
	}
	return DefaultPostgres
}

// DSN returns the DSN of a fresh, empty database of dialect d that exists
// for the rest of the test: a SQLite file path, or a postgres:// URL whose
// search_path is a schema of its own.
func DSN(t testing.TB, d store.Dialect) string {
	t.Helper()
	if d == store.SQLite {
		return filepath.Join(t.TempDir(), "engine.db")
	}
	base := PostgresURL()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("PostgreSQL is required in CI (FLOWSNAP_TEST_POSTGRES): %v", err)
		}
		t.Skipf("PostgreSQL not reachable (set FLOWSNAP_TEST_POSTGRES): %v", err)
	}
	defer conn.Close(ctx)
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "flowsnap_test_" + hex.EncodeToString(b[:])
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("creating test schema: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Errorf("dropping test schema %s: %v", schema, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Errorf("dropping test schema %s: %v", schema, err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("parsing FLOWSNAP_TEST_POSTGRES: %v", err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// Open returns a fresh, migrated engine store of dialect d, closed when the
// test ends.
func Open(t testing.TB, d store.Dialect) *store.DB {
	t.Helper()
	return OpenDSN(t, DSN(t, d), true)
}

// OpenDSN opens dsn for writing, migrating it first when migrate is set, and
// closes it when the test ends.
func OpenDSN(t testing.TB, dsn string, migrate bool) *store.DB {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db, err := store.Open(ctx, dsn, store.Options{})
	if err != nil {
		t.Fatalf("opening store: %v", err)
	}
	t.Cleanup(db.Close)
	if migrate {
		if _, _, err := db.Migrate(ctx); err != nil {
			t.Fatalf("migrating store: %v", err)
		}
	}
	return db
}

// OpenReader opens dsn read-only, as flowsnap serve does, and closes it when
// the test ends.
func OpenReader(t testing.TB, dsn string) *store.DB {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	db, err := store.Open(ctx, dsn, store.Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("opening store read-only: %v", err)
	}
	t.Cleanup(db.Close)
	return db
}
