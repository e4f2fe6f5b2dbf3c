package store

import (
	"context"
	"strconv"
	"strings"

	lru "github.com/hashicorp/golang-lru/v2"
)

// newLRU returns a cache of the size most recently used entries.
func newLRU[K comparable, V any](size int) *lru.Cache[K, V] {
	c, err := lru.New[K, V](size)
	if err != nil {
		panic(err) // only a size below 1 fails
	}
	return c
}

// maxParams is the most placeholders one statement may bind: SQLite's
// default limit is 32766, PostgreSQL's 65535.
func (d Dialect) maxParams() int {
	if d == Postgres {
		return 65535
	}
	return 32766
}

// bulkChunk is the most rows (or list items) one bulk statement carries.
// Past a few hundred a bigger statement saves nothing but costs compile
// time on SQLite.
const bulkChunk = 500

// InsertRows runs head, the start of a multi-row INSERT up to and including
// VALUES, once per chunk of the rows in args, completed with that chunk's
// "(…), (…)" tuples; every cols consecutive args are one row. One statement
// per chunk rather than per row matters most on SQLite, where every
// statement is compiled afresh; on PostgreSQL pgx prepares each chunk shape
// once per connection. Row triggers still fire for every row.
func (d Dialect) InsertRows(ctx context.Context, tx Tx, head string, cols int, args []any) error {
	per := min(bulkChunk, d.maxParams()/cols)
	for len(args) > 0 {
		n := min(per, len(args)/cols)
		if _, err := tx.Exec(ctx, head+d.tuples(n, cols), args[:n*cols]...); err != nil {
			return err
		}
		args = args[n*cols:]
	}
	return nil
}

// ExecIn runs head, a statement ending in "IN ", once per chunk of values,
// completed with that chunk as a parenthesised list.
func (d Dialect) ExecIn(ctx context.Context, tx Tx, head string, values []any) error {
	per := min(bulkChunk, d.maxParams())
	for len(values) > 0 {
		n := min(per, len(values))
		if _, err := tx.Exec(ctx, head+d.tuples(1, n), values[:n]...); err != nil {
			return err
		}
		values = values[n:]
	}
	return nil
}

// tupleCache keeps the VALUES lists of the shapes used most recently.
var tupleCache = newLRU[tupleKey, string](256)

type tupleKey struct {
	rows, cols int
	d          Dialect
}

// tuples returns "($1,…,$cols),(…)" for rows rows: the VALUES list of a
// multi-row INSERT (or, with one row, an IN list). Chunks mostly share a few
// shapes, so the text is built once per shape.
//
// SQLite gets anonymous "?" placeholders instead: it files "$n" as a named
// parameter and looks each one up by a linear search, at compile and again
// at bind time, which makes a statement of thousands of them quadratic.
func (d Dialect) tuples(rows, cols int) string {
	key := tupleKey{rows, cols, d}
	if s, ok := tupleCache.Get(key); ok {
		return s
	}
	var sb strings.Builder
	sb.Grow(rows * cols * 7)
	p := 1
	for r := range rows {
		if r > 0 {
			sb.WriteByte(',')
		}
		sb.WriteByte('(')
		for c := range cols {
			if c > 0 {
				sb.WriteByte(',')
			}
			if d == SQLite {
				sb.WriteByte('?')
			} else {
				sb.WriteByte('$')
				sb.WriteString(strconv.Itoa(p))
			}
			p++
		}
		sb.WriteByte(')')
	}
	s := sb.String()
	tupleCache.Add(key, s)
	return s
}

// RelaxDurability lets tx commit without waiting for its changes to reach
// the disk, for writes that are simply redone after a crash (a seed). On
// PostgreSQL it sets synchronous_commit off for tx alone; SQLite's writer
// commits as its journal mode says, and this does nothing there.
func (d Dialect) RelaxDurability(ctx context.Context, tx Tx) error {
	if d != Postgres {
		return nil
	}
	_, err := tx.Exec(ctx, `SET LOCAL synchronous_commit = off`)
	return err
}

// CostlyLongWrites reports whether every row change costs more the more
// changes came before it in the same transaction, so bulk writers should
// commit often. On PostgreSQL every change updates the one flows_run_source
// row, and the versions a transaction leaves of it cannot be pruned before
// it commits.
func (d Dialect) CostlyLongWrites() bool { return d == Postgres }

// InProcess reports that the database runs in this process (SQLite): a
// statement costs no round trip, so a read may take one more statement to
// spare work, as the run cache's revisions first do.
func (d Dialect) InProcess() bool { return d == SQLite }
