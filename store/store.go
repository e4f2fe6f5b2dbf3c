// Package store is the engine store: the database a workflow engine writes
// and flowsnap reads. It opens a store from a DSN (a SQLite file or a
// PostgreSQL URL), holds the schema inventory of both dialects and the
// migration ladder that applies it, and offers the one narrow seam between
// the dialects: a transaction with Exec, Query and QueryRow over numbered
// placeholders ($1, $2, …), which both SQLite and PostgreSQL accept.
//
// SQL text is written once for both dialects wherever the two agree; the
// Dialect is consulted only where they really differ (how a read transaction
// begins, array parameters, DDL).
package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/trace"
	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver

	"github.com/flowsnap/flowsnap/fault"
)

// Dialect names the database behind a store.
type Dialect string

// The supported dialects.
const (
	SQLite   Dialect = "sqlite"
	Postgres Dialect = "postgres"
)

// Options tune Open.
type Options struct {
	// ReadOnly opens the store for reading only: on SQLite every connection
	// is opened with mode=ro and query_only, so flowsnap can never write the
	// engine's file; BeginWrite then fails.
	ReadOnly bool
	// MaxReaders bounds the connections used by read transactions (0 means
	// DefaultReaders). On SQLite this bounds how many read snapshots can
	// pin the WAL at once.
	MaxReaders int
	// BusyTimeout is how long a SQLite write waits for a lock (0 means
	// 5s). Reads wait as long as their context allows.
	BusyTimeout time.Duration
	// PGExecMode is how pgx runs statements on PostgreSQL (see ExecModes);
	// empty means the DSN's default_query_exec_mode, else pgx's default,
	// which prepares each statement once per connection.
	PGExecMode string
	// Lazy skips the check that a PostgreSQL database answers: a replica
	// that is down when flowsnap starts is then read once it comes up.
	Lazy bool
	// TracerProvider, when set, makes each statement run under a recording
	// span a span of its own (see trace.go); nil traces nothing.
	TracerProvider trace.TracerProvider
	// NoWALGate turns off, on SQLite, the pause of new reads that lets the
	// engine's checkpoints reset a WAL that overlapping reads would keep
	// growing (see walGate). Only for measuring what the gate prevents.
	NoWALGate bool
}

// DB is an open engine store. It is safe for concurrent use.
type DB struct {
	dialect Dialect
	// readers is Options.MaxReaders as opened.
	readers int
	// SQLite: writer is a single connection, since SQLite admits one writer
	// at a time and queueing in Go beats spinning on SQLITE_BUSY; reader is
	// a pool of read-only connections.
	writer *sql.DB
	reader *sql.DB
	path   string
	// readStmts caches the reader's prepared statements: parsing dominates
	// the cost of flowsnap's larger queries on SQLite. pgx keeps such a cache
	// of its own.
	readStmts *stmtCache
	// file is the SQLite database file as opened: a file at path that is
	// not the same file (replaced) or no file (removed) fails every read.
	file os.FileInfo
	// foreign: the SQLite store, opened read-only, belongs to another user,
	// whose engine must create its -wal and -shm files (checkReadOnlyOpen).
	foreign bool
	// PostgreSQL.
	pool *pgxpool.Pool
	// where names the database for messages without revealing credentials.
	where string
	// gate, on SQLite, holds new reads back while the WAL needs a reset
	// (see walGate); nil without one.
	gate *walGate
	// alone are the statements ReadAlone has made.
	alone aloneStatements
	// tracer, on SQLite, makes statement spans; nil when tracing is off
	// (pgx traces PostgreSQL's statements itself).
	tracer trace.Tracer
}

// Open opens the store named by dsn: a SQLite path or file: URI, or a
// postgres:// (or postgresql://) URL. It checks that the database answers,
// not that it holds an engine store (see Check). ctx bounds the check.
func Open(ctx context.Context, dsn string, opts Options) (*DB, error) {
	if opts.BusyTimeout <= 0 {
		opts.BusyTimeout = 5 * time.Second
	}
	switch {
	case dsn == "":
		return nil, errors.New("no database given: pass --db with a SQLite path, a file: URI or a postgres:// URL")
	case strings.HasPrefix(dsn, "postgres://"), strings.HasPrefix(dsn, "postgresql://"):
		if opts.MaxReaders <= 0 {
			opts.MaxReaders = DefaultReaders(Postgres)
		}
		return openPostgres(ctx, dsn, opts)
	case strings.HasPrefix(dsn, "file:"), !strings.Contains(dsn, "://"):
		if opts.MaxReaders <= 0 {
			opts.MaxReaders = DefaultReaders(SQLite)
		}
		return openSQLite(ctx, dsn, opts)
	default:
		scheme, _, _ := strings.Cut(dsn, "://")
		return nil, fmt.Errorf("unsupported database %q: use a SQLite path, a file: URI or a postgres:// URL", scheme+"://")
	}
}

func openPostgres(ctx context.Context, dsn string, opts Options) (*DB, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("parsing the PostgreSQL URL: %w", redactPG(err))
	}
	if cfg.MaxConns < int32(opts.MaxReaders)+2 {
		cfg.MaxConns = int32(opts.MaxReaders) + 2
	}
	// flowsnap's statements are few, prepared once per connection by pgx,
	// and their best plans do not depend on their parameters (index seeks
	// by key). PostgreSQL would otherwise plan many of them afresh on every
	// execution, which costs more than running them.
	if err := setExecMode(cfg, opts.PGExecMode); err != nil {
		return nil, err
	}
	tracePostgres(cfg, opts.TracerProvider)
	if _, set := cfg.ConnConfig.RuntimeParams["plan_cache_mode"]; !set && preparesOnce(cfg) {
		cfg.ConnConfig.RuntimeParams["plan_cache_mode"] = "force_generic_plan"
	}
	// Exec modes that do not ask the server for a statement's parameter
	// types find them by the argument's Go type.
	cfg.AfterConnect = func(_ context.Context, c *pgx.Conn) error {
		c.TypeMap().RegisterDefaultPgType(textArray(nil), "_text")
		return nil
	}
	where := fmt.Sprintf("PostgreSQL database %q on %s:%d", cfg.ConnConfig.Database, cfg.ConnConfig.Host, cfg.ConnConfig.Port)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", where, redactPG(err))
	}
	if opts.Lazy {
		return &DB{dialect: Postgres, pool: pool, where: where, readers: opts.MaxReaders}, nil
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("cannot reach %s: %w", where, redactPG(err))
	}
	return &DB{dialect: Postgres, pool: pool, where: where, readers: opts.MaxReaders}, nil
}

// redactPG drops the connection string a pgx error may quote.
func redactPG(err error) error {
	var pe *pgconn.ParseConfigError
	if errors.As(err, &pe) {
		if inner := errors.Unwrap(pe); inner != nil {
			return errors.New("the URL is malformed: " + inner.Error())
		}
		return errors.New("the URL is malformed")
	}
	return err
}

// sqliteDSNs returns the DSNs of the writer and of the reader connections.
// A plain path becomes a file: URI so that SQLite itself honours mode=ro
// (on a plain path the driver drops SQLite's URI parameters).
func sqliteDSNs(dsn string, opts Options) (path, writer, reader string, err error) {
	raw := dsn
	if !strings.HasPrefix(raw, "file:") {
		abs, err := filepath.Abs(raw)
		if err != nil {
			return "", "", "", fmt.Errorf("resolving SQLite path: %w", err)
		}
		raw = "file:" + (&url.URL{Path: abs}).EscapedPath()
	}
	base, query, _ := strings.Cut(strings.TrimPrefix(raw, "file:"), "?")
	params, err := url.ParseQuery(query)
	if err != nil {
		return "", "", "", fmt.Errorf("parsing SQLite URI parameters: %w", err)
	}
	path, err = url.PathUnescape(base)
	if err != nil {
		return "", "", "", fmt.Errorf("parsing SQLite URI path: %w", err)
	}
	params.Del("mode")
	common := func(extra url.Values) string {
		p := url.Values{}
		for k, v := range params {
			p[k] = v
		}
		p.Add("_pragma", "foreign_keys(1)")
		for k, v := range extra {
			p[k] = append(p[k], v...)
		}
		return "file:" + base + "?" + p.Encode()
	}
	writer = common(url.Values{
		"_pragma": {fmt.Sprintf("busy_timeout(%d)", opts.BusyTimeout.Milliseconds()), "journal_mode(WAL)", "synchronous(NORMAL)"},
		"_txlock": {"immediate"},
	})
	// A read waits for a lock as long as its context allows (the driver's
	// busy handler gives up when the context is done), so a lock wait ends
	// as TIMEOUT at the operation's deadline, whatever that is.
	reader = common(url.Values{"mode": {"ro"}, "_pragma": {"query_only(1)", fmt.Sprintf("busy_timeout(%d)", readBusyTimeout.Milliseconds())}})
	return path, writer, reader, nil
}

func openSQLite(ctx context.Context, dsn string, opts Options) (*DB, error) {
	path, writerDSN, readerDSN, err := sqliteDSNs(dsn, opts)
	if err != nil {
		return nil, err
	}
	where := fmt.Sprintf("SQLite database %s", filepath.Base(path))
	db := &DB{dialect: SQLite, where: where, path: path, readers: opts.MaxReaders}
	if opts.TracerProvider != nil {
		db.tracer = opts.TracerProvider.Tracer(tracerName)
	}
	if !opts.ReadOnly {
		if dir := filepath.Dir(path); dir != "" {
			if _, err := os.Stat(dir); err != nil {
				return nil, fmt.Errorf("opening %s: its folder does not exist", where)
			}
		}
		db.writer, err = sql.Open("sqlite", writerDSN)
		if err != nil {
			return nil, fmt.Errorf("opening %s: %w", where, err)
		}
		db.writer.SetMaxOpenConns(1)
		db.writer.SetConnMaxIdleTime(0)
		// The first connection creates the file and switches it to WAL,
		// which the read-only connections need.
		if err := db.writer.PingContext(ctx); err != nil {
			db.Close()
			return nil, fmt.Errorf("opening %s: %w", where, err)
		}
	} else if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("opening %s: the file does not exist", where)
	} else if db.foreign, err = checkReadOnlyOpen(dsn, path, where); err != nil {
		return nil, err
	}
	db.reader, err = sql.Open("sqlite", readerDSN)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("opening %s: %w", where, err)
	}
	if db.file, err = os.Stat(path); err != nil {
		db.Close()
		return nil, fmt.Errorf("opening %s: the file does not exist", where)
	}
	db.readStmts = newStmtCache(db.reader)
	if !opts.NoWALGate {
		db.gate = newWALGate(path)
	}
	db.reader.SetMaxOpenConns(opts.MaxReaders)
	db.reader.SetMaxIdleConns(opts.MaxReaders)
	if err := db.reader.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("opening %s for reading: %w", where, err)
	}
	return db, nil
}

// SQLitePath returns the path of the SQLite database file, or "" on
// PostgreSQL.
func (db *DB) SQLitePath() string { return db.path }

// ReadersInUse reports how many of the store's connections are lent out
// now; on a read-only store, how many read transactions are open.
func (db *DB) ReadersInUse() int {
	if db.pool != nil {
		return int(db.pool.Stat().AcquiredConns())
	}
	if db.reader != nil {
		return db.reader.Stats().InUse
	}
	return 0
}

// Dialect reports which database the store is.
func (db *DB) Dialect() Dialect { return db.dialect }

// String names the database without credentials, for messages.
func (db *DB) String() string { return db.where }

// Close closes every connection.
func (db *DB) Close() {
	if db.pool != nil {
		db.pool.Close()
	}
	if db.readStmts != nil {
		db.readStmts.close()
	}
	if db.reader != nil {
		db.reader.Close()
	}
	// The writer closes last: SQLite's last connection to a store
	// checkpoints its WAL and removes the -wal and -shm files, which a
	// read-only one cannot.
	if db.writer != nil {
		db.writer.Close()
	}
}

// Pool returns the PostgreSQL pool, or nil on SQLite. For statistics in tests
// and metrics.
func (db *DB) Pool() *pgxpool.Pool { return db.pool }

// SQLReader returns SQLite's pool of read-only connections, or nil on
// PostgreSQL. For statistics in tests and metrics.
func (db *DB) SQLReader() *sql.DB { return db.reader }

// BeginRead opens a read-only snapshot transaction: on PostgreSQL
// REPEATABLE READ READ ONLY, on SQLite a deferred BEGIN on a read-only
// connection (SQLite fixes the snapshot at the first read in it, not at
// BEGIN). The caller must Rollback it on every path; ctx cancels the begin
// and, on PostgreSQL, the statements.
func (db *DB) BeginRead(ctx context.Context) (Tx, error) {
	switch db.dialect {
	case Postgres:
		tx, err := db.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
		if err != nil {
			return nil, db.persistence(err, "beginning a read")
		}
		return newPgTx(tx), nil
	default:
		release, err := db.enterRead(ctx)
		if err != nil {
			return nil, err
		}
		tx, err := db.reader.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
		if err != nil {
			release()
			return nil, db.persistence(withContext(ctx, err), "beginning a read")
		}
		return &sqlTx{tx: tx, stmts: db.readStmts, release: release, tracer: db.tracer, gate: db.gate}, nil
	}
}

// enterRead lets a SQLite read begin: the store file must be the one
// opened, and the WAL gate must let the read in. The read calls release
// once it has ended.
func (db *DB) enterRead(ctx context.Context) (release func(), err error) {
	if err := db.sameFile(); err != nil {
		return nil, err
	}
	if db.foreign && !walFilesExist(db.path) {
		return nil, fault.Errorf(fault.PersistenceFailed, "the store's -wal and -shm files are gone and belong to its owner's engine to create: flowsnap reads again once the engine runs")
	}
	if db.gate == nil {
		return func() {}, nil
	}
	if release, err = db.gate.enter(ctx); err != nil {
		return nil, fault.Wrap(fault.Timeout, err, "waiting to read the store")
	}
	return release, nil
}

// MaxReaders is how many read transactions the store lets be open at once.
func (db *DB) MaxReaders() int { return db.readers }

// DefaultReaders is how many read connections a store of dialect d gets
// unless told: 8 on PostgreSQL; on SQLite twice the CPUs, at most 8. Each
// SQLite connection keeps a page cache of its own (up to 2 MiB), holding
// much the same pages as the others', while reads that find their pages
// cached need a CPU each: beyond the CPUs, readers add memory and WAL
// pins, not reads per second.
func DefaultReaders(d Dialect) int {
	if d == Postgres {
		return 8
	}
	return min(8, 2*runtime.GOMAXPROCS(0))
}

// WALGate reports how many read transactions the SQLite WAL gate counts as
// open and how many drains it has started; zeros on PostgreSQL or without
// a gate.
func (db *DB) WALGate() (open, drains int) {
	if db.gate == nil {
		return 0, 0
	}
	db.gate.mu.Lock()
	defer db.gate.mu.Unlock()
	return db.gate.active, db.gate.drains
}

// readBusyTimeout is the SQLite busy timeout of read connections: longer
// than any operation, so that the operation's context ends the wait.
const readBusyTimeout = time.Hour

// sameFile refuses to read when the SQLite file at the store's path is no
// longer the file it opened (device and inode): pooled connections would
// go on reading the old one while new ones read the new, two stores in
// turn.
func (db *DB) sameFile() error {
	now, err := os.Stat(db.path)
	switch {
	case err != nil:
		return fault.Wrap(fault.PersistenceFailed, fmt.Errorf("%s: %w", db.where, err), "the store file was removed")
	case !os.SameFile(now, db.file):
		return fault.Errorf(fault.PersistenceFailed, "the store file was replaced")
	}
	return nil
}

// BeginWrite opens a read-write transaction (on SQLite BEGIN IMMEDIATE on the
// one writer connection). The caller must Commit or Rollback it.
func (db *DB) BeginWrite(ctx context.Context) (Tx, error) {
	switch db.dialect {
	case Postgres:
		tx, err := db.pool.Begin(ctx)
		if err != nil {
			return nil, db.persistence(err, "beginning a write")
		}
		return newPgTx(tx), nil
	default:
		if db.writer == nil {
			return nil, fmt.Errorf("%s was opened read-only", db.where)
		}
		tx, err := db.writer.BeginTx(ctx, nil)
		if err != nil {
			return nil, db.persistence(err, "beginning a write")
		}
		return &sqlTx{tx: tx, tracer: db.tracer}, nil
	}
}

// Write runs fn in one read-write transaction and commits it when fn returns
// nil; otherwise, or on panic, it rolls back and nothing of fn remains.
func (db *DB) Write(ctx context.Context, fn func(Tx) error) (err error) {
	tx, err := db.BeginWrite(ctx)
	if err != nil {
		return err
	}
	defer func() {
		p := recover()
		if err != nil || p != nil {
			_ = tx.Rollback(context.WithoutCancel(ctx))
		}
		if p != nil {
			panic(p)
		}
	}()
	if err := fn(tx); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// Ping checks that the database answers.
func (db *DB) Ping(ctx context.Context) error {
	var err error
	if db.pool != nil {
		err = db.pool.Ping(ctx)
	} else {
		err = db.reader.PingContext(ctx)
	}
	if err != nil {
		return db.persistence(err, "reaching the store")
	}
	return nil
}

// persistence reports a failed database call. The message, which a client
// may see, says what failed; which database, and the driver's words, stay in
// the cause, for logs.
func (db *DB) persistence(err error, doing string) error {
	return fault.Wrap(fault.PersistenceFailed, fmt.Errorf("%s: %w", db.where, err), "%s in the store failed", doing)
}

// Bound returns placeholder n for a value a read compares with the columns
// of the one index it means to seek. SQLite, built with STAT4 as this
// driver is, reads such a value to plan the statement once the store has
// been analysed (ANALYZE, or PRAGMA optimize), and from then on marks the
// prepared statement to be prepared again whenever that placeholder is
// bound, which is every use: a page statement was parsed and planned anew
// on every read, at twice the cost of running it. A unary plus makes the
// value an expression the planner does not read, and leaves the plan the
// one the index gives. PostgreSQL has no unary plus for text, and needs
// none.
func (d Dialect) Bound(n int) string {
	if d == Postgres {
		return fmt.Sprintf("$%d", n)
	}
	return fmt.Sprintf("+$%d", n)
}

// SpellsLimits reports whether a page's LIMIT is written into its
// statement rather than bound: PostgreSQL plans a statement prepared once
// generically (Options.PGExecMode), and a generic plan reads a bound LIMIT
// as a tenth of the rows the filter matches, which made a list page
// hash-join whole tables. SQLite's plans do not weigh the LIMIT.
func (d Dialect) SpellsLimits() bool { return d == Postgres }

// ReadsRanges reports whether a list page whose filter is one range of an
// index reads its runs in that range, joined to their changes, rather than
// reading the range's run ids and joining the runs to them by primary key.
// On PostgreSQL the ids' join costs a second index descent and heap visit
// per run of the page, for rows the range's own scan reaches (see
// docs/benchmarks.md). SQLite keeps the keyset statement its benchmarks
// measure, whose ids its indexes hold.
func (d Dialect) ReadsRanges() bool { return d == Postgres }

// TextList returns a SELECT of one text column, id, holding the elements of
// the list bound to placeholder n (see TextListArg): unnest of a text array
// on PostgreSQL, json_each of a JSON array on SQLite, which has no arrays.
func (d Dialect) TextList(n int) string {
	if d == Postgres {
		return fmt.Sprintf("SELECT unnest($%d::text[]) AS id", n)
	}
	return fmt.Sprintf("SELECT value AS id FROM json_each($%d)", n)
}

// TextListArg returns the argument that binds ids to a TextList placeholder.
func (d Dialect) TextListArg(ids []string) any {
	if d == Postgres {
		return textArray(ids)
	}
	b, _ := json.Marshal(ids) // []string always marshals
	return string(b)
}
