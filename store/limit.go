package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/flowsnap/flowsnap/fault"
)

// LimitedQuerier is a read transaction that can run one statement under a
// time limit of its own (docs/contract.md#cost-model): on PostgreSQL
// statement_timeout set for that statement in the transaction, on SQLite a
// deadline that interrupts the statement. A statement cut short fails with
// a TIMEOUT error that says so (see StatementTimedOut); on PostgreSQL that
// also aborts the transaction, so the caller runs nothing more in it.
type LimitedQuerier interface {
	QueryLimited(ctx context.Context, limit time.Duration, sql string, args ...any) (Rows, error)
}

var (
	_ LimitedQuerier = (*pgTx)(nil)
	_ LimitedQuerier = (*pgConnTx)(nil)
	_ LimitedQuerier = (*sqlTx)(nil)
)

// StatementTimedOut reports whether err is a statement cut short by its
// own time limit (QueryLimited).
func StatementTimedOut(err error) bool {
	var s statementTimeout
	return errors.As(err, &s)
}

type statementTimeout struct {
	limit time.Duration
	// aborted: the database ended the transaction's usefulness with the
	// statement (PostgreSQL aborts a transaction at any error).
	aborted bool
}

// TransactionAborted reports whether err, a statement cut short by its
// limit, also aborted its transaction, so that nothing more can run in it.
func TransactionAborted(err error) bool {
	var s statementTimeout
	return errors.As(err, &s) && s.aborted
}

func (s statementTimeout) Error() string {
	return fmt.Sprintf("the statement ran longer than its limit of %s", s.limit)
}

func timedOut(limit time.Duration, aborted bool) error {
	return fault.Wrap(fault.Timeout, statementTimeout{limit, aborted}, "the statement ran longer than its limit of %s: narrow the filter (one an index serves), or ask for fewer", limit)
}

// pgCanceled is PostgreSQL's SQLSTATE for a statement cancelled, which
// statement_timeout ends a statement with.
const pgCanceled = "57014"

func pgTimedOut(err error, limit time.Duration) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == pgCanceled {
		return timedOut(limit, true)
	}
	return err
}

// The statements that set and restore statement_timeout around a limited
// one, both local to the transaction, so that its end undoes them whatever
// happens. DEFAULT is the session's own value (the server's, the role's or
// database's, or the connection's startup parameter; no session of ours
// sets it otherwise): the value before the limit. Restoring it so reads
// no settings view (pg_settings builds a row of every setting per read).
const (
	setStatementTimeout     = `SELECT set_config('statement_timeout', $1, true)`
	restoreStatementTimeout = `SET LOCAL statement_timeout TO DEFAULT`
)

type batchSender interface {
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// pgQueryLimited sends the limit, the statement and the restore as one
// pipelined batch: one round trip, as the statement alone takes.
func pgQueryLimited(ctx context.Context, s batchSender, limit time.Duration, q string, args ...any) (Rows, error) {
	b := &pgx.Batch{}
	b.Queue(setStatementTimeout, strconv.FormatInt(max(limit.Milliseconds(), 1), 10))
	b.Queue(q, args...)
	b.Queue(restoreStatementTimeout)
	br := s.SendBatch(ctx, b)
	if _, err := br.Exec(); err != nil {
		_ = br.Close()
		return nil, err
	}
	r, err := br.Query()
	if err != nil {
		_ = br.Close()
		return nil, pgTimedOut(err, limit)
	}
	return &limitedRows{Rows: r, br: br, limit: limit}, nil
}

func (t *pgTx) QueryLimited(ctx context.Context, limit time.Duration, q string, args ...any) (Rows, error) {
	return pgQueryLimited(ctx, t.tx, limit, q, args...)
}

func (t *pgConnTx) QueryLimited(ctx context.Context, limit time.Duration, q string, args ...any) (Rows, error) {
	return pgQueryLimited(ctx, t.conn, limit, q, args...)
}

// limitedRows are the rows of a limited statement on PostgreSQL; closing
// them restores the session's statement_timeout and frees the connection.
type limitedRows struct {
	pgx.Rows
	br    pgx.BatchResults
	limit time.Duration
}

func (r *limitedRows) Err() error { return pgTimedOut(r.Rows.Err(), r.limit) }

func (r *limitedRows) Close() {
	r.Rows.Close()
	_, _ = r.br.Exec()
	_ = r.br.Close()
}

// QueryLimited runs q with a deadline of limit: SQLite's driver interrupts a
// statement whose context ends, and a read transaction goes on after it.
func (t *sqlTx) QueryLimited(ctx context.Context, limit time.Duration, q string, args ...any) (Rows, error) {
	lctx, cancel := context.WithTimeout(ctx, limit)
	if t.gate != nil {
		if err := t.gate.heavyWait(lctx); err != nil {
			cancel()
			return nil, sqliteTimedOut(ctx, lctx, err, limit)
		}
	}
	rows, err := t.query(lctx, q, args...)
	if err != nil {
		cancel()
		return nil, sqliteTimedOut(ctx, lctx, err, limit)
	}
	return &limitedSQLRows{Rows: rows, ctx: ctx, lctx: lctx, cancel: cancel, limit: limit}, nil
}

// sqliteTimedOut is err, or the limit's TIMEOUT when the limit (not the
// caller's own context) is what ended the statement.
func sqliteTimedOut(ctx, lctx context.Context, err error, limit time.Duration) error {
	if err != nil && ctx.Err() == nil && errors.Is(lctx.Err(), context.DeadlineExceeded) {
		return timedOut(limit, false)
	}
	return withContext(ctx, err)
}

type limitedSQLRows struct {
	*sql.Rows
	ctx, lctx context.Context
	cancel    context.CancelFunc
	limit     time.Duration
}

func (r *limitedSQLRows) Err() error { return sqliteTimedOut(r.ctx, r.lctx, r.Rows.Err(), r.limit) }

func (r *limitedSQLRows) Close() {
	_ = r.Rows.Close()
	r.cancel()
}
