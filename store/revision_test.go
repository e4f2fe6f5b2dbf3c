package store_test

import (
	"database/sql"
	"fmt"
	"testing"

	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/storetest"
)

// These tests write with raw SQL, as any writer may: the revision and the
// change rows are the database's to keep.

// advances asserts that the store's revision moved by n since before, and
// returns the new revision.
func advances(t *testing.T, db *store.DB, before, n int64) int64 {
	t.Helper()
	now := sourceRevision(t, db)
	if now != before+n {
		t.Errorf("the revision went from %d to %d, want +%d", before, now, n)
	}
	return now
}

// latest asserts that run id's change row is at revision rev and live
// (deleted false) or a tombstone.
func latest(t *testing.T, db *store.DB, id string, rev int64, deleted bool) {
	t.Helper()
	want := change{revision: rev, deleted: map[bool]int64{false: 0, true: 1}[deleted], found: true}
	if got := changeOf(t, db, id); got != want {
		t.Errorf("change of %s: got %+v, want %+v", id, got, want)
	}
}

func TestEachWriteOfARunIsOneChange(t *testing.T) {
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		db := storetest.Open(t, d)
		rev := sourceRevision(t, db)

		mustExec(t, db, insertRun("a"))
		rev = advances(t, db, rev, 1)
		latest(t, db, "a", rev, false)

		mustExec(t, db, `UPDATE flows_runs SET status = 'suspended' WHERE run_id = 'a'`)
		rev = advances(t, db, rev, 1)
		latest(t, db, "a", rev, false)

		mustExec(t, db, insertRun("b"), `UPDATE flows_runs SET finished_at_ms = 2000 WHERE run_id = 'a'`)
		rev = advances(t, db, rev, 2)
		latest(t, db, "b", rev-1, false)
		latest(t, db, "a", rev, false)

		mustExec(t, db, `UPDATE flows_runs SET started_at_ms = 1500`)
		rev = advances(t, db, rev, 2)

		mustExec(t, db, `DELETE FROM flows_runs WHERE run_id = 'a'`)
		rev = advances(t, db, rev, 1)
		latest(t, db, "a", rev, true)

		mustExec(t, db, insertRun("a"))
		rev = advances(t, db, rev, 1)
		latest(t, db, "a", rev, false)

		if n := queryInt(t, db, `SELECT count(*) FROM flows_run_changes`); n != 2 {
			t.Errorf("flows_run_changes has %d rows, want one per run id", n)
		}
	})
}

func TestARolledBackTransactionLeavesNoTrace(t *testing.T) {
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		ctx := testContext(t)
		db := storetest.Open(t, d)
		mustExec(t, db, insertRun("kept"))
		rev := sourceRevision(t, db)
		tx, err := db.BeginWrite(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range []string{
			insertRun("gone"),
			`INSERT INTO flows_steps (run_id, step_id, type, created_at_ms) VALUES ('gone', 's', 'run', 1000)`,
			`INSERT INTO flows_run_parents (parent_id, child_id, seq) VALUES ('kept', 'gone', 0)`,
			`DELETE FROM flows_runs WHERE run_id = 'kept'`,
		} {
			if _, err := tx.Exec(ctx, s); err != nil {
				t.Fatalf("%s: %v", s, err)
			}
		}
		if err := tx.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
		advances(t, db, rev, 0)
		if c := changeOf(t, db, "gone"); c.found {
			t.Errorf("a rolled back run left a change row: %+v", c)
		}
		latest(t, db, "kept", rev, false)
	})
}

func TestSpawnEdgesDeriveTheExecutionParentAndChangeBothRuns(t *testing.T) {
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		db := storetest.Open(t, d)
		mustExec(t, db, insertRun("p1"), insertRun("p2"), insertRun("c"))
		rev := sourceRevision(t, db)
		// edge runs stmt, which changes an edge of parent and child c: both
		// runs change, once each, and c's execution parent becomes want.
		edge := func(stmt, parent, want string) {
			t.Helper()
			before := rev
			mustExec(t, db, stmt)
			rev = advances(t, db, before, 2)
			if got := executionParent(t, db, "c"); got != want {
				t.Errorf("after %s: execution parent %q, want %q", stmt, got, want)
			}
			for _, id := range []string{"c", parent} {
				if got := changeOf(t, db, id); got.revision <= before || got.deleted != 0 {
					t.Errorf("after %s: %s has no newer live change: %+v", stmt, id, got)
				}
			}
		}
		edge(`INSERT INTO flows_run_parents (parent_id, child_id, seq) VALUES ('p1', 'c', 5)`, "p1", "p1")
		edge(`INSERT INTO flows_run_parents (parent_id, child_id, seq) VALUES ('p2', 'c', 0)`, "p2", "p2")
		edge(`UPDATE flows_run_parents SET seq = 9 WHERE parent_id = 'p2'`, "p2", "p1")
		edge(`DELETE FROM flows_run_parents WHERE parent_id = 'p1'`, "p1", "p2")
		edge(`DELETE FROM flows_run_parents WHERE parent_id = 'p2'`, "p2", "")

		// A direct parent wins over any edge.
		mustExec(t, db, `INSERT INTO flows_runs (run_id, status, created_at_ms, state_json, parent_run_id, execution_parent_id)
			VALUES ('d', 'pending', 1000, '{"flowName":"f"}', 'p1', 'p1')`,
			`INSERT INTO flows_run_parents (parent_id, child_id, seq) VALUES ('p2', 'd', 0)`)
		if got := executionParent(t, db, "d"); got != "p1" {
			t.Errorf("a run spawned by p1 and joined by p2 has execution parent %q, want p1", got)
		}
	})
}

func TestAJournalWriteIsOneChangeOfItsRun(t *testing.T) {
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		db := storetest.Open(t, d)
		mustExec(t, db, insertRun("r"), insertRun("other"))
		rev := sourceRevision(t, db)
		other := changeOf(t, db, "other")
		for _, s := range []string{
			`INSERT INTO flows_steps (run_id, step_id, type, created_at_ms) VALUES ('r', 's', 'run', 1000)`,
			`INSERT INTO flows_steps (run_id, step_id, type, created_at_ms, state, event_name) VALUES ('r', 'w', 'wait', 1000, 'waiting', 'go')`,
			`UPDATE flows_steps SET state = 'satisfied', resolved_at_ms = 1100 WHERE run_id = 'r' AND step_id = 'w'`,
			`INSERT INTO flows_step_attempts (attempt_id, run_id, step_id, started_at_ms, state) VALUES ('a', 'r', 's', 1000, 'started')`,
			`UPDATE flows_step_attempts SET state = 'succeeded', ended_at_ms = 1100, result_type = 'none' WHERE attempt_id = 'a'`,
			`INSERT INTO flows_inbound_events (event_id, run_id, event_name, created_at_ms) VALUES ('e', 'r', 'go', 1000)`,
			`UPDATE flows_inbound_events SET claimed_by = 'w', claimed_at_ms = 1100 WHERE event_id = 'e'`,
			`DELETE FROM flows_inbound_events WHERE event_id = 'e'`,
			`INSERT INTO flows_run_events (run_id, seq, recorded_at_ms, type) VALUES ('r', 0, 1000, 'created')`,
			`DELETE FROM flows_step_attempts WHERE attempt_id = 'a'`,
			`DELETE FROM flows_steps WHERE run_id = 'r' AND step_id = 's'`,
		} {
			mustExec(t, db, s)
			rev = advances(t, db, rev, 1)
			latest(t, db, "r", rev, false)
		}
		if c := changeOf(t, db, "other"); c != other {
			t.Errorf("journal writes of r changed other: %+v, was %+v", c, other)
		}
	})
}

func TestDeletingARunRemovesItsEdgesAndJournalAndEndsInItsTombstone(t *testing.T) {
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		db := storetest.Open(t, d)
		mustExec(t, db, fullRun("p", "r", "c")...)
		rev := sourceRevision(t, db)
		mustExec(t, db, `DELETE FROM flows_runs WHERE run_id = 'r'`)
		assertCollected(t, db, "r")
		latest(t, db, "r", changeOf(t, db, "r").revision, true)
		if got := changeOf(t, db, "r").revision; got <= rev {
			t.Errorf("the tombstone's revision %d is not newer than %d", got, rev)
		}
		// The run's parent and child changed (children, execution parent),
		// once each besides the tombstone.
		advances(t, db, rev, 3)
		if got := executionParent(t, db, "c"); got != "" {
			t.Errorf("the deleted run's child still has execution parent %q", got)
		}
		for _, id := range []string{"p", "c"} {
			if c := changeOf(t, db, id); c.revision <= rev || c.deleted != 0 {
				t.Errorf("%s did not get a newer live change: %+v", id, c)
			}
		}
	})
}

// fullRun writes run r with parent p, child c and a journal of every kind.
func fullRun(p, r, c string) []string {
	return []string{
		insertRun(p), insertRun(r), insertRun(c),
		fmt.Sprintf(`INSERT INTO flows_run_parents (parent_id, child_id, seq) VALUES ('%s', '%s', 0)`, p, r),
		fmt.Sprintf(`INSERT INTO flows_run_parents (parent_id, child_id, seq) VALUES ('%s', '%s', 0)`, r, c),
		fmt.Sprintf(`INSERT INTO flows_steps (run_id, step_id, type, created_at_ms) VALUES ('%s', 'outer', 'run', 1000)`, r),
		fmt.Sprintf(`INSERT INTO flows_steps (run_id, step_id, type, created_at_ms, parent_step_id) VALUES ('%s', 'inner', 'run', 1000, 'outer')`, r),
		fmt.Sprintf(`INSERT INTO flows_steps (run_id, step_id, type, created_at_ms, state, event_name) VALUES ('%s', 'w', 'wait', 1000, 'waiting', 'go')`, r),
		fmt.Sprintf(`INSERT INTO flows_step_attempts (attempt_id, run_id, step_id, started_at_ms, state) VALUES ('a', '%s', 'inner', 1000, 'started')`, r),
		fmt.Sprintf(`INSERT INTO flows_inbound_events (event_id, run_id, event_name, created_at_ms, claimed_by, claimed_at_ms) VALUES ('e', '%s', 'go', 1000, 'w', 1000)`, r),
		fmt.Sprintf(`INSERT INTO flows_run_events (run_id, seq, recorded_at_ms, type) VALUES ('%s', 0, 1000, 'created')`, r),
		fmt.Sprintf(`INSERT INTO flows_run_events (run_id, seq, recorded_at_ms, type, cancellation_reason) VALUES ('%s', 1, 1000, 'cancelled', 'gc')`, r),
	}
}

// collectedQueries count what a deleted run may not leave behind.
var collectedQueries = []string{
	`SELECT count(*) FROM flows_runs WHERE run_id = $1`,
	`SELECT count(*) FROM flows_run_parents WHERE parent_id = $1 OR child_id = $1`,
	`SELECT count(*) FROM flows_steps WHERE run_id = $1`,
	`SELECT count(*) FROM flows_step_attempts WHERE run_id = $1`,
	`SELECT count(*) FROM flows_inbound_events WHERE run_id = $1`,
	`SELECT count(*) FROM flows_run_events WHERE run_id = $1`,
}

func assertCollected(t *testing.T, db *store.DB, id string) {
	t.Helper()
	for _, q := range collectedQueries {
		if n := queryInt(t, db, q, id); n != 0 {
			t.Errorf("%s: %d rows remain", q, n)
		}
	}
}

// The sqlite3 shell and many tools open SQLite without foreign_keys; the gc
// triggers must do what the cascades do.
func TestDeletingARunWithoutForeignKeysStillCollectsIt(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	path := storetest.DSN(t, store.SQLite)
	db := storetest.OpenDSN(t, path, true)
	mustExec(t, db, fullRun("p", "r", "c")...)
	rev := sourceRevision(t, db)

	raw, err := sql.Open("sqlite", "file:"+path+"?_pragma=foreign_keys(0)&_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var fk int
	if err := raw.QueryRowContext(ctx, `PRAGMA foreign_keys`).Scan(&fk); err != nil || fk != 0 {
		t.Fatalf("foreign_keys is %d (%v), want off", fk, err)
	}
	if _, err := raw.ExecContext(ctx, `DELETE FROM flows_runs WHERE run_id = 'r'`); err != nil {
		t.Fatal(err)
	}
	assertCollected(t, db, "r")
	latest(t, db, "r", changeOf(t, db, "r").revision, true)
	advances(t, db, rev, 3)
}

func TestRevisionsFollowSavepoints(t *testing.T) {
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		db := storetest.Open(t, d)
		rev := sourceRevision(t, db)
		mustExec(t, db,
			insertRun("a"),
			`SAVEPOINT s`,
			insertRun("undone"),
			`UPDATE flows_runs SET status = 'suspended' WHERE run_id = 'a'`,
			`ROLLBACK TO SAVEPOINT s`,
			insertRun("b"),
		)
		rev = advances(t, db, rev, 2)
		latest(t, db, "a", rev-1, false)
		latest(t, db, "b", rev, false)
		if c := changeOf(t, db, "undone"); c.found {
			t.Errorf("a change rolled back to a savepoint remains: %+v", c)
		}
		mustExec(t, db, `SAVEPOINT s`, insertRun("c"), `ROLLBACK TO SAVEPOINT s`, insertRun("d"))
		rev = advances(t, db, rev, 1)
		latest(t, db, "d", rev, false)
	})
}

// PostgreSQL writes the source row once, at commit, from a deferred
// trigger; a writer that makes constraints immediate must get the same
// revisions.
func TestRevisionsHoldWithImmediateConstraints(t *testing.T) {
	t.Parallel()
	db := storetest.Open(t, store.Postgres)
	rev := sourceRevision(t, db)
	mustExec(t, db, `SET CONSTRAINTS ALL IMMEDIATE`, insertRun("a"), insertRun("b"), insertRun("c"))
	rev = advances(t, db, rev, 3)
	latest(t, db, "c", rev, false)
	mustExec(t, db, insertRun("d"), `SET CONSTRAINTS ALL IMMEDIATE`, insertRun("e"), `SET CONSTRAINTS ALL DEFERRED`, insertRun("f"))
	rev = advances(t, db, rev, 3)
	latest(t, db, "d", rev-2, false)
	latest(t, db, "f", rev, false)
	mustExec(t, db, `UPDATE flows_run_source SET revision = revision`, insertRun("g"), `UPDATE flows_run_source SET revision = revision`)
	rev = advances(t, db, rev, 1)
	latest(t, db, "g", rev, false)
}

func TestALargeTransactionEndsAtItsLastRevision(t *testing.T) {
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		ctx := testContext(t)
		db := storetest.Open(t, d)
		rev := sourceRevision(t, db)
		const n = 3000
		err := db.Write(ctx, func(tx store.Tx) error {
			_, err := tx.Exec(ctx, `INSERT INTO flows_runs (run_id, status, created_at_ms, state_json)
				SELECT 'run-' || i, 'pending', 1000, '{"flowName":"f"}' FROM (`+seriesSQL[d]+`) AS s`, n)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		rev = advances(t, db, rev, n)
		if got := queryInt(t, db, `SELECT MAX(revision) FROM flows_run_changes`); got != rev {
			t.Errorf("the newest change is at %d, the source at %d", got, rev)
		}
	})
}

// seriesSQL yields the integers 1..$1 as column i.
var seriesSQL = map[store.Dialect]string{
	store.SQLite:   `WITH RECURSIVE n (i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $1) SELECT i FROM n`,
	store.Postgres: `SELECT generate_series(1, $1::bigint) AS i`,
}
