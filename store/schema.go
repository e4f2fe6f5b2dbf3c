package store

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

// Dialects says which dialects an inventory object exists in.
type Dialects string

// The dialect sets of the inventory. Functions exist in PostgreSQL only;
// a SQLite trigger carries its own body.
const (
	BothDialects Dialects = "both dialects"
	SQLiteOnly   Dialects = "SQLite only"
	PostgresOnly Dialects = "PostgreSQL only"
)

func (ds Dialects) has(d Dialect) bool {
	return ds == BothDialects || (ds == SQLiteOnly && d == SQLite) || (ds == PostgresOnly && d == Postgres)
}

// Object is one entry of the schema inventory: a table, index, trigger or
// function of the engine store. The metadata (name, kind, table, the rung
// that creates it, the dialects and why it exists) is listed in
// inventory.go; the DDL comes from the migration files.
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
	// Dialects are the dialects the object exists in.
	Dialects Dialects
	// Why says, in one sentence, what would break without the object.
	Why string
	// SQLite and Postgres are the statements that create the object in each
	// dialect, as written in the migration files; empty where it does not
	// exist.
	SQLite   string
	Postgres string
}

// DDL returns the statement that creates the object in dialect d, or "" when
// the object does not exist there.
func (o Object) DDL(d Dialect) string {
	if d == Postgres {
		return o.Postgres
	}
	return o.SQLite
}

// In reports whether the object exists in dialect d.
func (o Object) In(d Dialect) bool { return o.DDL(d) != "" }

// Verbatim reports whether both dialects create the object with the same
// statement.
func (o Object) Verbatim() bool { return o.SQLite != "" && o.SQLite == o.Postgres }

// Inventory returns every object of the engine store at SchemaVersion, in
// the order the migrations create them (a function before the triggers that
// run it, a table before its indexes and triggers). The catalog of a freshly
// migrated store holds exactly these objects, no more: a test diffs the two
// in both dialects. The slice is a copy; changing it changes nothing.
func Inventory() []Object {
	return append([]Object(nil), inventory...)
}
