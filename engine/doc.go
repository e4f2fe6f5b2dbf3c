// Package engine is the reference engine writer: the writes a durable
// workflow engine makes to its store, each engine action one transaction,
// plus Seed, which fills a store with a deterministic, realistic history, and
// Simulate, which keeps an engine writing to it.
//
// flowsnap itself never writes to the engine's tables; this package exists so
// that the demo, the tests and the benchmarks have an engine to read from. It
// writes only what an engine writes — run rows, spawn edges and the run
// journal — and leaves revisions and tombstones to the store's triggers, so
// everything it does also checks that the triggers keep them right.
//
// Every action validates its input before touching the store and reports bad
// input, or a run in the wrong state for the action, as a fault.BadUserInput
// error; a failure of the database itself is a fault.PersistenceFailed error.
// Either way the action's transaction is rolled back and leaves no trace.
package engine
