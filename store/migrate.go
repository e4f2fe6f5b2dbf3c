package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"
)

// SchemaVersion is the version of the engine-store schema this flowsnap
// creates and serves. A store records the versions applied to it in
// flows_schema_version; its version is the highest one.
const SchemaVersion = 5

// The kinds of error Check and Migrate return when a database is not a store
// they can use. The errors themselves name the database and say what to do;
// test for the kind with errors.Is.
var (
	// ErrNotEngineStore: the database holds no engine store, or one that
	// flowsnap migrate did not create.
	ErrNotEngineStore = errors.New("not a flowsnap engine store")
	// ErrSchemaNewer: the store was migrated by a newer flowsnap.
	ErrSchemaNewer = errors.New("engine store schema newer than this flowsnap")
	// ErrSchemaOlder: the store needs flowsnap migrate before it can be
	// served.
	ErrSchemaOlder = errors.New("engine store schema older than this flowsnap")
	// ErrSchemaIncomplete: the store records a version but lacks objects or
	// rows that version has.
	ErrSchemaIncomplete = errors.New("engine store schema incomplete")
)

// schemaError is an error of one of the kinds above with a message for the
// operator.
type schemaError struct {
	kind error
	msg  string
}

func (e *schemaError) Error() string { return e.msg }
func (e *schemaError) Unwrap() error { return e.kind }

// migration is one rung of the ladder: it runs its migration file of the
// store's dialect (migrations/<dialect>/NNN_name.sql), statement by
// statement, then runs then, all in one transaction that also records the
// version and name. Every store, fresh or old, climbs the same rungs in the
// same order, so a rung's file may assume exactly the schema the rungs
// before it leave (an ALTER of an object an earlier rung created is fine).
type migration struct {
	version int
	name    string
	then    func(ctx context.Context, tx Tx) error
	// statements are filled from the files by loadLadder.
	statements []dialectStatements
}

// migrations are the rungs of the ladder, one per pair of files.
var migrations = []migration{
	{version: 1, name: "engine store: runs, changes, spawn edges, journal", then: createSource},
	{version: 2, name: listingRung},
	{version: 3, name: opsRung},
	{version: 4, name: statsRung},
	{version: 5, name: tokenDigestRung},
}

// createSource gives a new store its identity: 128 random bits, so that two
// stores never share a source and a cursor can never be used on a store it
// was not made for.
func createSource(ctx context.Context, tx Tx) error {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails: crypto/rand aborts the process instead
	_, err := tx.Exec(ctx, `INSERT INTO flows_run_source (singleton, source, revision) VALUES (1, $1, 0)`,
		hex.EncodeToString(b[:]))
	return err
}

// migrationLock serialises migrators of the same PostgreSQL schema; two
// processes running migrate at once then apply each step once. SQLite needs
// none: its write transactions begin IMMEDIATE and so exclude each other.
const migrationLock = `SELECT pg_advisory_xact_lock(hashtext('flowsnap migrate'), hashtext(current_schema()))`

// Migrate creates the engine store in an empty database, or upgrades an
// older one, to SchemaVersion, and reports the version it found and the one
// it left. Each step runs in one write transaction, so a failure leaves the
// store at the previous version; running Migrate again on a current store
// changes nothing. It refuses a database that holds tables of an engine
// store flowsnap did not create, and a store newer than SchemaVersion. ctx
// cancels the step in progress.
func (db *DB) Migrate(ctx context.Context) (from, to int, err error) {
	return db.climb(ctx, theLadder, theLadder.version)
}

// climb applies the rungs of l up to version upTo that the store has not
// climbed yet.
func (db *DB) climb(ctx context.Context, l ladder, upTo int) (from, to int, err error) {
	from = -1
	for _, m := range l.rungs {
		if m.version > upTo {
			break
		}
		err := db.Write(ctx, func(tx Tx) error {
			if db.dialect == Postgres {
				if _, err := tx.Exec(ctx, migrationLock); err != nil {
					return db.persistence(err, "locking out other migrators")
				}
			}
			st, err := db.probe(ctx, tx)
			if err != nil {
				return err
			}
			if from < 0 {
				from = st.version
			}
			to = st.version
			if err := db.migratable(st, l.version); err != nil {
				return err
			}
			if st.version >= m.version {
				return nil
			}
			if err := db.apply(ctx, tx, m); err != nil {
				return fmt.Errorf("migrating %s to schema version %d (%s): %w", db.where, m.version, m.name, err)
			}
			to = m.version
			return nil
		})
		if err != nil {
			return from, to, err
		}
	}
	return from, to, nil
}

func (db *DB) apply(ctx context.Context, tx Tx, m migration) error {
	for _, s := range m.statementsFor(db.dialect) {
		if _, err := tx.Exec(ctx, s.ddl); err != nil {
			return fmt.Errorf("creating %s %s: %w", s.kind, s.name, err)
		}
	}
	if m.then != nil {
		if err := m.then(ctx, tx); err != nil {
			return err
		}
	}
	_, err := tx.Exec(ctx, `INSERT INTO flows_schema_version (version, name, applied_at_ms) VALUES ($1, $2, $3)`,
		m.version, m.name, time.Now().UnixMilli())
	return err
}

// Version reports the schema version of the store, 0 for a database without
// one (empty, or not an engine store). It reads in a read transaction, so it
// works on a store opened read-only.
func (db *DB) Version(ctx context.Context) (int, error) {
	tx, err := db.BeginRead(ctx)
	if err != nil {
		return 0, err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	st, err := db.probe(ctx, tx)
	return st.version, err
}

// Check tells whether flowsnap can serve the store: an engine store created
// by flowsnap migrate, at SchemaVersion, with its identity row and every
// object of the inventory (objects it does not list are allowed: an engine
// may add its own). It reads in one read transaction and never writes, so it
// works on a store opened read-only. The error says what is wrong and what
// to do; its kind is one of the Err* values above, or a persistence failure.
func (db *DB) Check(ctx context.Context) error {
	tx, err := db.BeginRead(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	st, err := db.probe(ctx, tx)
	if err != nil {
		return err
	}
	switch {
	case !st.source:
		return &schemaError{ErrNotEngineStore,
			fmt.Sprintf("%s is not a flowsnap engine store (no flows_run_source table)", db.where)}
	case st.version == 0:
		return &schemaError{ErrNotEngineStore,
			fmt.Sprintf("%s is not a flowsnap engine store: it has a flows_run_source table but no recorded schema version (flows_schema_version), so flowsnap migrate did not create it", db.where)}
	case st.version > SchemaVersion:
		return db.tooNew(st.version)
	case st.version < SchemaVersion:
		return &schemaError{ErrSchemaOlder,
			fmt.Sprintf("%s has schema version %d, older than this flowsnap needs (%d): run flowsnap migrate", db.where, st.version, SchemaVersion)}
	}
	var source string
	var revision int64
	err = tx.QueryRow(ctx, `SELECT source, revision FROM flows_run_source WHERE singleton = 1`).Scan(&source, &revision)
	if errors.Is(err, ErrNoRows) {
		return &schemaError{ErrSchemaIncomplete,
			fmt.Sprintf("%s has no flows_run_source row: the store has lost its identity", db.where)}
	}
	if err != nil {
		return db.persistence(err, "reading the store's identity")
	}
	found, err := db.catalog(ctx, tx)
	if err != nil {
		return err
	}
	var missing []string
	for _, o := range inventory {
		if o.Since <= st.version && o.In(db.dialect) && !found[catalogKey(o.Kind, o.Name)] {
			missing = append(missing, string(o.Kind)+" "+o.Name)
		}
	}
	if len(missing) > 0 {
		return &schemaError{ErrSchemaIncomplete,
			fmt.Sprintf("%s records schema version %d but lacks %s: restore them from the inventory, or migrate a fresh store",
				db.where, st.version, strings.Join(missing, ", "))}
	}
	return nil
}

func (db *DB) tooNew(version int) error {
	return &schemaError{ErrSchemaNewer,
		fmt.Sprintf("%s has schema version %d, newer than this flowsnap knows (%d): upgrade flowsnap", db.where, version, SchemaVersion)}
}

// migratable refuses what Migrate must not touch: tables of an engine store
// without a recorded version, and a store newer than this flowsnap.
func (db *DB) migratable(st schemaState, version int) error {
	switch {
	case st.version > version:
		return &schemaError{ErrSchemaNewer,
			fmt.Sprintf("%s has schema version %d, newer than this flowsnap knows (%d): upgrade flowsnap", db.where, st.version, version)}
	case st.version == 0 && (st.source || st.versioned):
		return &schemaError{ErrNotEngineStore,
			fmt.Sprintf("%s holds engine store tables without a recorded schema version: flowsnap migrate did not create them and will not change them", db.where)}
	}
	return nil
}

// schemaState is what a store says of its own schema.
type schemaState struct {
	source    bool // a flows_run_source table exists
	versioned bool // a flows_schema_version table exists
	version   int  // the highest recorded version, 0 when none
}

// probe reads the schema state inside tx. On PostgreSQL it looks in
// current_schema(), where unqualified DDL creates tables.
func (db *DB) probe(ctx context.Context, q Querier) (schemaState, error) {
	var st schemaState
	var err error
	if st.source, err = db.tableExists(ctx, q, "flows_run_source"); err != nil {
		return st, err
	}
	if st.versioned, err = db.tableExists(ctx, q, "flows_schema_version"); err != nil {
		return st, err
	}
	if st.versioned {
		var v int64
		if err := q.QueryRow(ctx, `SELECT COALESCE(MAX(version), 0) FROM flows_schema_version`).Scan(&v); err != nil {
			return st, db.persistence(err, "reading the schema version")
		}
		st.version = int(v)
	}
	return st, nil
}

func (db *DB) tableExists(ctx context.Context, q Querier, name string) (bool, error) {
	query := `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = $1`
	if db.dialect == Postgres {
		query = `SELECT count(*) FROM pg_catalog.pg_tables WHERE schemaname = current_schema() AND tablename = $1`
	}
	var n int64
	if err := q.QueryRow(ctx, query, name).Scan(&n); err != nil {
		return false, db.persistence(err, "reading the catalog")
	}
	return n > 0, nil
}

// The catalog queries list every schema object a store holds, by kind and
// name, as the inventory names them. Indexes backing a primary key or UNIQUE
// constraint (SQLite's sqlite_autoindex_*, PostgreSQL's constraint indexes)
// belong to their table and are left out, as are SQLite's internal tables.
// Kinds the inventory never uses (view, sequence, type) are listed too, so
// that nothing can hide from a comparison with it.
const (
	sqliteCatalog = `SELECT type, name FROM sqlite_master WHERE name NOT LIKE 'sqlite\_%' ESCAPE '\'`

	postgresCatalog = `WITH ns AS (SELECT oid FROM pg_catalog.pg_namespace WHERE nspname = current_schema())
SELECT CASE WHEN c.relkind IN ('i', 'I') THEN 'index'
            WHEN c.relkind IN ('v', 'm') THEN 'view'
            WHEN c.relkind = 'S' THEN 'sequence'
            ELSE 'table' END,
       c.relname::text
FROM pg_catalog.pg_class AS c
WHERE c.relnamespace = (SELECT oid FROM ns)
  AND c.relkind IN ('r', 'p', 'f', 'i', 'I', 'v', 'm', 'S')
  AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_constraint AS k
                  WHERE k.conindid = c.oid AND k.contype IN ('p', 'u', 'x'))
UNION ALL
SELECT 'trigger', t.tgname::text
FROM pg_catalog.pg_trigger AS t JOIN pg_catalog.pg_class AS c ON c.oid = t.tgrelid
WHERE c.relnamespace = (SELECT oid FROM ns) AND NOT t.tgisinternal
UNION ALL
SELECT 'function', p.proname::text
FROM pg_catalog.pg_proc AS p
WHERE p.pronamespace = (SELECT oid FROM ns)
UNION ALL
SELECT 'type', y.typname::text
FROM pg_catalog.pg_type AS y
WHERE y.typnamespace = (SELECT oid FROM ns) AND y.typtype IN ('d', 'e', 'r', 'm')`
)

// catalog returns the set of catalogKey(kind, name) of every object in the
// store's schema.
func (db *DB) catalog(ctx context.Context, q Querier) (map[string]bool, error) {
	query := sqliteCatalog
	if db.dialect == Postgres {
		query = postgresCatalog
	}
	rows, err := q.Query(ctx, query)
	if err != nil {
		return nil, db.persistence(err, "reading the catalog")
	}
	defer rows.Close()
	found := map[string]bool{}
	for rows.Next() {
		var kind, name string
		if err := rows.Scan(&kind, &name); err != nil {
			return nil, db.persistence(err, "reading the catalog")
		}
		found[catalogKey(Kind(kind), name)] = true
	}
	if err := rows.Err(); err != nil {
		return nil, db.persistence(err, "reading the catalog")
	}
	return found, nil
}

func catalogKey(kind Kind, name string) string { return string(kind) + " " + name }
