package store

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// BeginReadWith opens a read-only snapshot transaction as BeginRead does,
// reads the one row of first into firstDest and runs query, all in it. On
// PostgreSQL the BEGIN, first and query go to the server as one pipelined
// batch: one round trip where BeginRead and two statements take three. The
// caller closes rows before anything else runs in tx, and must Rollback tx
// on every path. When err is not nil, tx and rows are nil and nothing is
// left open; a first that finds no row is ErrNoRows.
func (db *DB) BeginReadWith(ctx context.Context, first string, firstDest []any, query string, args ...any) (tx Tx, rows Rows, err error) {
	if db.dialect != Postgres {
		tx, err := db.BeginRead(ctx)
		if err != nil {
			return nil, nil, err
		}
		if err := tx.QueryRow(ctx, first).Scan(firstDest...); err != nil {
			_ = tx.Rollback(ctx)
			return nil, nil, err
		}
		rows, err := tx.Query(ctx, query, args...)
		if err != nil {
			_ = tx.Rollback(ctx)
			return nil, nil, err
		}
		return tx, rows, nil
	}
	conn, err := db.pool.Acquire(ctx)
	if err != nil {
		return nil, nil, db.persistence(err, "beginning a read")
	}
	b := &pgx.Batch{}
	b.Queue(`BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY`)
	b.Queue(first)
	b.Queue(query, args...)
	br := conn.SendBatch(ctx, b)
	fail := func(e error) (Tx, Rows, error) {
		_ = br.Close()
		rollback(context.WithoutCancel(ctx), conn)
		return nil, nil, e
	}
	if _, err := br.Exec(); err != nil {
		return fail(db.persistence(err, "beginning a read"))
	}
	if err := br.QueryRow().Scan(firstDest...); err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			err = ErrNoRows
		}
		return fail(err)
	}
	r, err := br.Query()
	if err != nil {
		return fail(err)
	}
	return &pgConnTx{pgQueries: pgQueries{conn}, conn: conn}, &batchRows{Rows: r, br: br}, nil
}

// rollback ends whatever transaction conn has and returns conn to its
// pool, or closes conn when it cannot say.
func rollback(ctx context.Context, conn *pgxpool.Conn) {
	if _, err := conn.Exec(ctx, "ROLLBACK"); err != nil {
		_ = conn.Conn().Close(ctx)
	}
	conn.Release()
}

// pgConnTx is a read transaction begun by hand on a pooled connection.
type pgConnTx struct {
	pgQueries
	conn *pgxpool.Conn
}

func (t *pgConnTx) Commit(context.Context) error {
	return errors.New("store: a read transaction has nothing to commit")
}

func (t *pgConnTx) Rollback(ctx context.Context) error {
	if t.conn == nil {
		return nil
	}
	_, err := t.conn.Exec(ctx, "ROLLBACK")
	if err != nil {
		_ = t.conn.Conn().Close(ctx)
	}
	t.conn.Release()
	t.conn = nil
	return err
}

// LastQuerier is a Tx that can run its last statement with the end of the
// transaction pipelined behind it.
type LastQuerier interface {
	// QueryLast runs sql as the transaction's last statement: on
	// PostgreSQL with the ROLLBACK that ends the transaction sent behind it,
	// one round trip where Query and Rollback take two. Closing rows ends
	// the transaction and gives its connection back; Rollback after that
	// does nothing, and nothing else may run in the transaction.
	QueryLast(ctx context.Context, sql string, args ...any) (Rows, error)
}

var _ LastQuerier = (*pgConnTx)(nil)

func (t *pgConnTx) QueryLast(ctx context.Context, q string, args ...any) (Rows, error) {
	b := &pgx.Batch{}
	b.Queue(q, args...)
	b.Queue("ROLLBACK")
	br := t.conn.SendBatch(ctx, b)
	r, err := br.Query()
	if err != nil {
		_ = br.Close()
		// A statement that fails skips the rest of its pipeline: the
		// ROLLBACK did not run.
		_ = t.Rollback(context.WithoutCancel(ctx))
		return nil, err
	}
	return &lastRows{Rows: r, br: br, tx: t, ctx: ctx}, nil
}

// lastRows are the rows of QueryLast; closing them ends the transaction.
type lastRows struct {
	pgx.Rows
	br  pgx.BatchResults
	tx  *pgConnTx // nil once closed
	ctx context.Context
}

func (r *lastRows) Close() {
	if r.tx == nil {
		return
	}
	r.Rows.Close()
	_, err := r.br.Exec()
	if cerr := r.br.Close(); err == nil {
		err = cerr
	}
	if err != nil || r.Rows.Err() != nil {
		// The ROLLBACK may not have run: end the transaction as Rollback
		// does.
		_ = r.tx.Rollback(context.WithoutCancel(r.ctx))
	} else {
		r.tx.conn.Release()
		r.tx.conn = nil
	}
	r.tx = nil
}

// batchRows are the rows of a batch's last statement; closing them closes
// the batch, which frees the connection for the next statement.
type batchRows struct {
	pgx.Rows
	br pgx.BatchResults
}

func (r *batchRows) Close() {
	r.Rows.Close()
	_ = r.br.Close()
}
