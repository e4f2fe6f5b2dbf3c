package store

import "strings"

// Kind is the kind of a schema object.
type Kind string

// The kinds of object the inventory lists. Functions exist only in
// PostgreSQL, where a trigger runs a function; a SQLite trigger carries its
// body.
const (
	KindTable    Kind = "table"
	KindIndex    Kind = "index"
	KindTrigger  Kind = "trigger"
	KindFunction Kind = "function"
)

// Object is one entry of the schema inventory: a table, index, trigger or
// function of the engine store, with the DDL that creates it in each dialect.
//
// Indexes that back a primary key or a UNIQUE constraint are part of their
// table's DDL and are not objects of their own; every CREATE INDEX is.
type Object struct {
	Name string
	Kind Kind
	// Table is the table an index or trigger belongs to; empty for tables
	// and functions.
	Table string
	// Since is the schema version whose migration creates the object.
	Since int
	// Why says, in one sentence, what would break without the object.
	Why string
	// Portable is DDL that both dialects accept verbatim. When it is set,
	// SQLite and Postgres are empty.
	Portable string
	// SQLite and Postgres are the DDL of each dialect when they differ. An
	// empty one means the object does not exist in that dialect.
	SQLite   string
	Postgres string
}

// DDL returns the statement that creates the object in dialect d, or "" when
// the object does not exist there.
func (o Object) DDL(d Dialect) string {
	if o.Portable != "" {
		return o.Portable
	}
	if d == Postgres {
		return o.Postgres
	}
	return o.SQLite
}

// In reports whether the object exists in dialect d.
func (o Object) In(d Dialect) bool { return o.DDL(d) != "" }

// Verbatim reports whether both dialects accept the same DDL for the object.
func (o Object) Verbatim() bool { return o.Portable != "" }

// Inventory returns every object of the engine store at SchemaVersion, in
// the order the migrations create them (a function before the triggers that
// run it, a table before its indexes and triggers). The catalog of a freshly
// migrated store holds exactly these objects, no more: a test diffs the two
// in both dialects. The slice is a copy; changing it changes nothing.
func Inventory() []Object {
	return append([]Object(nil), inventory...)
}

// maxSafe is 2^53−1, the largest integer a JavaScript client reads exactly:
// every timestamp, counter and revision of the store stays at or below it.
const maxSafe = "9007199254740991"

// The fragments below build the CHECK constraints that repeat across tables.
// Each yields a conjunction that is NULL (and so passes) when the columns are
// NULL: nullability is declared separately, by NOT NULL or a shape check.

// identifiers constrains identifier columns: non-empty, at most 1024 UTF-16
// code units, no NUL. PostgreSQL counts UTF-16 units exactly (a character
// beyond U+FFFF is two), and its text never holds a NUL; the regular
// expression runs only for ids longer than 1024 bytes. SQLite has no
// function that can count them, so there the bound is 1024 characters and
// the exact count is left to the writer and to the reader's decoder.
//
// The PostgreSQL expression is spelled out rather than put in a function:
// a SQL function in a CHECK is planned anew for every statement, and the
// change triggers write their rows one statement each.
func identifiers(d Dialect, columns ...string) string {
	terms := make([]string, len(columns))
	for i, c := range columns {
		if d == Postgres {
			terms[i] = "(octet_length(" + c + ") BETWEEN 1 AND 1024 OR (length(" + c + ") BETWEEN 1 AND 1024 AND length(" + c + ") + length(regexp_replace(" + c + ", '[^\\U00010000-\\U0010FFFF]', '', 'g')) <= 1024))"
		} else {
			terms[i] = "length(" + c + ") BETWEEN 1 AND 1024 AND instr(" + c + ", char(0)) = 0"
		}
	}
	return strings.Join(terms, "\n        AND ")
}

// naturals constrains integer columns to 0..2^53−1 (timestamps, pids,
// sequence numbers).
func naturals(columns ...string) string {
	terms := make([]string, len(columns))
	for i, c := range columns {
		terms[i] = c + " BETWEEN 0 AND " + maxSafe
	}
	return strings.Join(terms, "\n        AND ")
}
