package store

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"path"
	"testing/fstest"
	"time"
)

// CatalogOf returns "kind name" for every object in the store's schema, read
// as Check reads it.
func CatalogOf(ctx context.Context, db *DB) (map[string]bool, error) {
	tx, err := db.BeginRead(ctx)
	if err != nil {
		return nil, err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	return db.catalog(ctx, tx)
}

// CatalogKey is how CatalogOf names an object.
func CatalogKey(kind Kind, name string) string { return catalogKey(kind, name) }

// ClimbWithRung migrates db through this flowsnap's ladder plus one more
// rung, version SchemaVersion+1, whose files hold sqlite and postgres and
// which creates objects. It returns the versions Migrate would, and the
// inventory of the longer ladder.
func ClimbWithRung(ctx context.Context, db *DB, sqlite, postgres string, objects []Object) (from, to int, inv []Object, err error) {
	fsys := fstest.MapFS{}
	for _, d := range []Dialect{SQLite, Postgres} {
		dir := path.Join("migrations", string(d))
		entries, err := fs.ReadDir(migrationFiles, dir)
		if err != nil {
			return 0, 0, nil, err
		}
		for _, e := range entries {
			b, err := fs.ReadFile(migrationFiles, path.Join(dir, e.Name()))
			if err != nil {
				return 0, 0, nil, err
			}
			fsys[path.Join(dir, e.Name())] = &fstest.MapFile{Data: b}
		}
	}
	name := fmt.Sprintf("%03d_test_rung.sql", SchemaVersion+1)
	fsys[path.Join("migrations", "sqlite", name)] = &fstest.MapFile{Data: []byte(sqlite)}
	fsys[path.Join("migrations", "postgres", name)] = &fstest.MapFile{Data: []byte(postgres)}
	rungs := append([]migration(nil), migrations...)
	for i := range rungs {
		rungs[i].statements = nil
	}
	rungs = append(rungs, migration{version: SchemaVersion + 1, name: "test rung"})
	l, err := loadLadder(fsys, rungs, append(append([]Object(nil), inventoryRows...), objects...))
	if err != nil {
		return 0, 0, nil, err
	}
	from, to, err = db.climb(ctx, l, l.version)
	return from, to, l.inventory, err
}

// LoadMigrations checks migration files, of one rung at version 1, as the
// embedded ones are checked.
func LoadMigrations(fsys fs.FS, objects []Object) error {
	_, err := loadLadder(fsys, []migration{{version: 1, name: "test rung"}}, objects)
	return err
}

// LadderVersion is the last rung of the embedded ladder.
func LadderVersion() int { return theLadder.version }

// MigrateTo migrates db up to version only, as an older flowsnap would.
func MigrateTo(ctx context.Context, db *DB, version int) (from, to int, err error) {
	return db.climb(ctx, theLadder, version)
}

// WALGateLook makes db's WAL gate look at the WAL now, as a read entering
// it would once its interval has passed, and returns how many times it has
// found the WAL in need of a reset: the drains it started, and the passes
// it made beside a long read.
func WALGateLook(db *DB) int {
	db.gate.mu.Lock()
	defer db.gate.mu.Unlock()
	db.gate.look()
	return db.gate.drains + db.gate.passes
}

// WALGatePasses returns how many times db's gate let reads through beside a
// long read rather than drain, and how many drains it started.
func WALGatePasses(db *DB) (passes, drains int) {
	db.gate.mu.Lock()
	defer db.gate.mu.Unlock()
	return db.gate.passes, db.gate.drains
}

// SetWALGateIdleWait sets how long db's gate waits for open reads to end
// before giving a drain up, and the age of an open read past which it does
// not drain: for measuring the gate as it was, which waited seconds.
func SetWALGateIdleWait(db *DB, d time.Duration) {
	db.gate.mu.Lock()
	defer db.gate.mu.Unlock()
	db.gate.idleWait = d
}

// WALGateThreshold is the WAL content size above which db's gate drains.
func WALGateThreshold(db *DB) int64 { return db.gate.threshold }

// WALStamp returns the stamp of the WAL at path, which changes at every
// reset.
func WALStamp(path string) [8]byte {
	s, _, _ := walStamp(path)
	return s
}

// BeginUngatedRead opens a read on db's reader pool past its WAL gate, as
// a reader of the file in another process would.
func BeginUngatedRead(ctx context.Context, db *DB) (Tx, error) {
	tx, err := db.reader.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	return &sqlTx{tx: tx}, nil
}

// CachedStatement reports whether db's reader has q prepared in its cache.
func CachedStatement(db *DB, q string) bool {
	db.readStmts.mu.Lock()
	defer db.readStmts.mu.Unlock()
	_, ok := db.readStmts.m[q]
	return ok
}

// SetWALGateThreshold sets the WAL content size above which db's gate
// drains, so that a benchmark reaches it in seconds.
func SetWALGateThreshold(db *DB, n int64) {
	db.gate.mu.Lock()
	defer db.gate.mu.Unlock()
	db.gate.threshold = n
}
