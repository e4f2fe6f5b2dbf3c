package store

import (
	"context"
	"database/sql"
	"errors"

	"github.com/jackc/pgx/v5"
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

type pgTx struct{ tx pgx.Tx }

func (t *pgTx) Exec(ctx context.Context, q string, args ...any) (int64, error) {
	tag, err := t.tx.Exec(ctx, q, args...)
	return tag.RowsAffected(), err
}

func (t *pgTx) Query(ctx context.Context, q string, args ...any) (Rows, error) {
	rows, err := t.tx.Query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	return rows, nil
}

func (t *pgTx) QueryRow(ctx context.Context, q string, args ...any) Row {
	return pgRow{t.tx.QueryRow(ctx, q, args...)}
}

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

type sqlTx struct{ tx *sql.Tx }

func (t *sqlTx) Exec(ctx context.Context, q string, args ...any) (int64, error) {
	res, err := t.tx.ExecContext(ctx, q, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (t *sqlTx) Query(ctx context.Context, q string, args ...any) (Rows, error) {
	rows, err := t.tx.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	return sqlRows{rows}, nil
}

func (t *sqlTx) QueryRow(ctx context.Context, q string, args ...any) Row {
	return sqlRow{t.tx.QueryRowContext(ctx, q, args...)}
}

func (t *sqlTx) Commit(context.Context) error { return t.tx.Commit() }

func (t *sqlTx) Rollback(context.Context) error {
	err := t.tx.Rollback()
	if errors.Is(err, sql.ErrTxDone) {
		return nil
	}
	return err
}

type sqlRows struct{ *sql.Rows }

func (r sqlRows) Close() { _ = r.Rows.Close() }

type sqlRow struct{ row *sql.Row }

func (r sqlRow) Scan(dest ...any) error {
	err := r.row.Scan(dest...)
	if errors.Is(err, sql.ErrNoRows) {
		return ErrNoRows
	}
	return err
}
