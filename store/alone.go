package store

import (
	"context"
	"database/sql"
	"sync"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/jackc/pgx/v5"
)

// ReadAlone runs query on its own, outside a transaction, with the one row
// of first joined to each of its rows: a single statement reads one
// snapshot in both dialects (PostgreSQL takes one snapshot per statement;
// SQLite holds one read transaction from a statement's first step to its
// end), so first is read at the same point as query's rows, with no BEGIN
// or ROLLBACK. Each call of the rows' Next scans first's columns into
// firstDest; Scan takes query's. Rows that end before one arrives report
// ErrNoRows (no row of first, or none of query): ReadAlone is for a
// query that answers at least one row. The caller must Close rows.
func (db *DB) ReadAlone(ctx context.Context, first string, firstDest []any, query string, args ...any) (Rows, error) {
	stmt := db.alone.of(first, query)
	if db.dialect == Postgres {
		rows, err := db.pool.Query(ctx, stmt, args...)
		if err != nil {
			return nil, err
		}
		return &aloneRows{rows: rows, first: firstDest, pg: true}, nil
	}
	release, err := db.enterRead(ctx)
	if err != nil {
		return nil, err
	}
	ctx, span := startStatement(ctx, db.tracer, stmt)
	s, later := db.readStmts.stmt(ctx, stmt)
	var rows *sql.Rows
	if s != nil {
		rows, err = s.QueryContext(ctx, args...)
	} else {
		rows, err = db.reader.QueryContext(ctx, stmt, args...)
	}
	if err != nil {
		release()
		err = withContext(ctx, err)
		endStatement(span, err)
		return nil, err
	}
	return &aloneRows{rows: sqlRows{rows}, first: firstDest, closed: func() {
		endStatement(span, rows.Err())
		release()
		if later {
			_, _ = db.readStmts.prepare(context.WithoutCancel(ctx), stmt)
		}
	}}, nil
}

// aloneStatements are the statements ReadAlone has run, by their parts:
// a batch's statement is the same on every read, and is made once. It
// keeps the maxCachedStmts used most recently; the zero value is ready.
type aloneStatements struct {
	once  sync.Once
	cache *lru.Cache[[2]string, string]
}

func (a *aloneStatements) of(first, query string) string {
	a.once.Do(func() { a.cache = newLRU[[2]string, string](maxCachedStmts) })
	key := [2]string{first, query}
	if stmt, ok := a.cache.Get(key); ok {
		return stmt
	}
	stmt := "WITH alone_first AS (" + first + ")\nSELECT alone_first.*, alone_query.*\nFROM alone_first CROSS JOIN (" + query + ") AS alone_query"
	a.cache.Add(key, stmt)
	return stmt
}

// aloneRows are the rows of ReadAlone: first's columns, then query's.
type aloneRows struct {
	rows   Rows
	first  []any
	all    []any // first then the caller's targets, reused row to row
	n      int   // rows so far
	pg     bool  // the rows are pgx's
	err    error
	closed func() // nil once called, and on PostgreSQL
}

func (r *aloneRows) Next() bool {
	if r.err != nil {
		return false
	}
	if !r.rows.Next() {
		if r.n == 0 && r.rows.Err() == nil {
			r.err = ErrNoRows
		}
		return false
	}
	r.n++
	return true
}

func (r *aloneRows) Scan(dest ...any) error {
	r.all = append(append(r.all[:0], r.first...), dest...)
	if r.n > 1 && r.pg {
		// pgx skips a nil target: first's columns, the same on every row,
		// are decoded once.
		clear(r.all[:len(r.first)])
	}
	err := r.rows.Scan(r.all...)
	if err == pgx.ErrNoRows || err == sql.ErrNoRows {
		return ErrNoRows
	}
	return err
}

func (r *aloneRows) Err() error {
	if r.err != nil {
		return r.err
	}
	return r.rows.Err()
}

func (r *aloneRows) Close() {
	r.rows.Close()
	if r.closed != nil {
		r.closed()
		r.closed = nil
	}
}
