// Package snapshot reads consistent snapshots of an engine store: what the
// engine had committed at one position (source, revision), decoded, checked
// against the invariants of the store and safe to show.
//
// Every read happens inside a read-only transaction — REPEATABLE READ READ
// ONLY on PostgreSQL, a deferred BEGIN on a read-only connection on SQLite —
// whose first statement reads the position. Reader.Begin puts one such
// transaction on a context so that all reads made with that context (a whole
// GraphQL operation) share it; a read made with a context that carries none
// opens and closes its own. The transaction is opened lazily, at the first
// read, and rolled back by Read.End on every path.
//
// Errors are *fault.Error values: BAD_USER_INPUT for ids and page sizes,
// BAD_CURSOR for cursors, DECODE_FAILED for rows that break the store's
// invariants (per element, naming the run), PERSISTENCE_FAILED when the
// database fails, TIMEOUT when the context ends, STALE and SOURCE_CHANGED
// when a read cannot be at the minimum revision it was given (Read.AtLeast;
// see UseReplicas for where reads go). None of them carries SQL,
// paths or a waiting token.
package snapshot
