package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"go.opentelemetry.io/otel/trace"
	"modernc.org/sqlite"
)

// Querier runs statements with numbered placeholders ($1, $2, …). Scan
// targets that work in both dialects: *string, *int64, *bool is not one
// (store booleans as 0/1 integers), and pointers to those (**string,
// **int64) for nullable columns.
type Querier interface {
	Exec(ctx context.Context, sql string, args ...any) (rowsAffected int64, err error)
	Query(ctx context.Context, sql string, args ...any) (Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) Row
}

// Tx is a transaction in either dialect. It is not safe for concurrent use:
// one statement at a time, and a Rows must be closed before the next.
type Tx interface {
	Querier
	Commit(ctx context.Context) error
	Rollback(ctx context.Context) error
}

// Rows is the result of Query. Close it on every path.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close()
}

// Row is the result of QueryRow; Scan returns ErrNoRows when there is none.
type Row interface {
	Scan(dest ...any) error
}

// ErrNoRows is what Row.Scan returns when the query found no row, in either
// dialect.
var ErrNoRows = errors.New("no rows in result set")

// pgQuerier is what a pgx transaction and a pooled connection share: the
// one adapter (pgQueries) makes either a Querier.
type pgQuerier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// pgQueries adapts pgx's statements to Querier.
type pgQueries struct{ q pgQuerier }

func (p pgQueries) Exec(ctx context.Context, q string, args ...any) (int64, error) {
	tag, err := p.q.Exec(ctx, q, args...)
	return tag.RowsAffected(), err
}

func (p pgQueries) Query(ctx context.Context, q string, args ...any) (Rows, error) {
	rows, err := p.q.Query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	return rows, nil
}

func (p pgQueries) QueryRow(ctx context.Context, q string, args ...any) Row {
	return pgRow{p.q.QueryRow(ctx, q, args...)}
}

// pgTx is a pgx transaction.
type pgTx struct {
	pgQueries
	tx pgx.Tx
}

func newPgTx(tx pgx.Tx) *pgTx { return &pgTx{pgQueries: pgQueries{tx}, tx: tx} }

func (t *pgTx) Commit(ctx context.Context) error   { return t.tx.Commit(ctx) }
func (t *pgTx) Rollback(ctx context.Context) error { return t.tx.Rollback(ctx) }

type pgRow struct{ row pgx.Row }

func (r pgRow) Scan(dest ...any) error {
	err := r.row.Scan(dest...)
	if errors.Is(err, pgx.ErrNoRows) {
		return ErrNoRows
	}
	return err
}

type sqlTx struct {
	tx    *sql.Tx
	stmts *stmtCache // nil: statements are not cached
	// release, for a read, tells the WAL gate the read has ended; nil once
	// it has been told, and for a write.
	release func()
	// later are the statements to cache once the transaction has ended.
	later []string
	// tracer makes the statements' spans; nil when tracing is off.
	tracer trace.Tracer
	// gate is the WAL gate a read entered; an expensive statement waits
	// in it while the WAL needs a reset (see walGate.heavyWait).
	gate *walGate
}

// stmtCache holds prepared statements by SQL text. database/sql prepares a
// Stmt on each connection once and a transaction reuses its connection's
// preparation, so a cached statement is parsed once per connection.
type stmtCache struct {
	db *sql.DB
	mu sync.Mutex
	m  map[string]*sql.Stmt
}

// maxCachedStmts bounds the cache: statements whose text varies with a
// batch's size come in a bounded number of shapes, but a bound keeps an
// unusual workload from holding statements forever. A full cache adds no
// more rather than evicting, as an LRU would: closing a statement that
// another transaction has just taken from it would fail that transaction.
const maxCachedStmts = 512

func newStmtCache(db *sql.DB) *stmtCache { return &stmtCache{db: db, m: map[string]*sql.Stmt{}} }

// stmt returns the cached statement for q, preparing it when new; nil when
// the cache is full, when preparing fails (the caller then runs q
// unprepared, and meets the error there), or, with later true, when no
// connection was idle to prepare it on: the caller's transaction then
// prepares it once it has ended and given its own connection back (see
// sqlTx.ended), or a busy pool would never cache a statement it had not
// met while idle.
func (c *stmtCache) stmt(ctx context.Context, q string) (s *sql.Stmt, later bool) {
	c.mu.Lock()
	s, ok := c.m[q]
	full := len(c.m) >= maxCachedStmts
	c.mu.Unlock()
	switch {
	case ok:
		return s, false
	case full:
		return nil, false
	}
	return c.prepare(ctx, q)
}

// prepare prepares q and caches it; nil when preparing fails, or, with
// busy true, when no connection is idle.
//
// Preparing needs a connection of the pool besides the caller's own, so it
// is tried only when one is idle and for at most a millisecond, and never
// under the cache's lock: with every connection held by an open read, a
// caller waiting for one while holding the lock would stop all the others.
func (c *stmtCache) prepare(ctx context.Context, q string) (_ *sql.Stmt, busy bool) {
	if c.db.Stats().Idle == 0 {
		return nil, true
	}
	pctx, cancel := context.WithTimeout(ctx, time.Millisecond)
	defer cancel()
	s, err := c.db.PrepareContext(pctx, q)
	if err != nil {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.m[q]; ok {
		_ = s.Close()
		return old, false
	}
	if len(c.m) >= maxCachedStmts {
		_ = s.Close()
		return nil, false
	}
	c.m[q] = s
	return s, false
}

func (c *stmtCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for q, s := range c.m {
		_ = s.Close()
		delete(c.m, q)
	}
}

// prepared returns the transaction's use of the cached statement for q, or
// nil.
func (t *sqlTx) prepared(ctx context.Context, q string) *sql.Stmt {
	if t.stmts == nil {
		return nil
	}
	s, later := t.stmts.stmt(ctx, q)
	if s != nil {
		return t.tx.StmtContext(ctx, s)
	}
	if later && !slices.Contains(t.later, q) {
		t.later = append(t.later, q)
	}
	return nil
}

func (t *sqlTx) Exec(ctx context.Context, q string, args ...any) (int64, error) {
	ctx, span := startStatement(ctx, t.tracer, q)
	res, err := t.tx.ExecContext(ctx, q, args...)
	endStatement(span, err)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// query runs q through its cached statement when there is one.
func (t *sqlTx) query(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	if s := t.prepared(ctx, q); s != nil {
		return s.QueryContext(ctx, args...)
	}
	return t.tx.QueryContext(ctx, q, args...)
}

func (t *sqlTx) Query(ctx context.Context, q string, args ...any) (Rows, error) {
	ctx, span := startStatement(ctx, t.tracer, q)
	rows, err := t.query(ctx, q, args...)
	if err != nil {
		err = withContext(ctx, err)
		endStatement(span, err)
		return nil, err
	}
	if span != nil {
		return tracedRows{rows, span}, nil
	}
	return sqlRows{rows}, nil
}

func (t *sqlTx) QueryRow(ctx context.Context, q string, args ...any) Row {
	ctx, span := startStatement(ctx, t.tracer, q)
	var row Row
	if s := t.prepared(ctx, q); s != nil {
		row = sqlRow{ctx, s.QueryRowContext(ctx, args...)}
	} else {
		row = sqlRow{ctx, t.tx.QueryRowContext(ctx, q, args...)}
	}
	if span != nil {
		return tracedRow{row, span}
	}
	return row
}

func (t *sqlTx) Commit(context.Context) error {
	defer t.ended()
	return t.tx.Commit()
}

func (t *sqlTx) Rollback(context.Context) error {
	defer t.ended()
	err := t.tx.Rollback()
	if errors.Is(err, sql.ErrTxDone) {
		return nil
	}
	return err
}

// ended releases the transaction's place in the WAL gate, once, and
// prepares the statements it ran unprepared for want of an idle
// connection, now that its own is back in the pool.
func (t *sqlTx) ended() {
	if t.release != nil {
		t.release()
		t.release = nil
	}
	for _, q := range t.later {
		_, _ = t.stmts.prepare(context.Background(), q)
	}
	t.later = nil
}

type sqlRows struct{ *sql.Rows }

func (r sqlRows) Close() { _ = r.Rows.Close() }

type sqlRow struct {
	ctx context.Context
	row *sql.Row
}

func (r sqlRow) Scan(dest ...any) error {
	err := r.row.Scan(dest...)
	if errors.Is(err, sql.ErrNoRows) {
		return ErrNoRows
	}
	return withContext(r.ctx, err)
}

// withContext adds ctx's error to a driver error made while ctx was done:
// SQLite reports a lock wait or statement cut short by the context as busy
// or interrupted, and it is the deadline (TIMEOUT) that ended it. A lock
// SQLite gave up waiting for without the context ending (some WAL locks are
// not waited for at all) is reported the same way, as a lock wait that did
// not end in time: never as a broken store.
func withContext(ctx context.Context, err error) error {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if ctx.Err() != nil {
		return fmt.Errorf("%w: %w", ctx.Err(), err)
	}
	var se *sqlite.Error
	if errors.As(err, &se) && (se.Code()&0xff == sqliteBusy || se.Code()&0xff == sqliteLocked) {
		return lockWait{err}
	}
	return err
}

// SQLite's primary result codes for a lock held elsewhere.
const (
	sqliteBusy   = 5
	sqliteLocked = 6
)

// lockWait is a lock wait that ended before the read could start; it
// counts as the operation's deadline.
type lockWait struct{ err error }

func (l lockWait) Error() string { return "the store stayed locked: " + l.err.Error() }
func (l lockWait) Unwrap() error { return l.err }
func (l lockWait) Is(target error) bool {
	return target == context.DeadlineExceeded
}
