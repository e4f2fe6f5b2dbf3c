package snapshot_test

import (
	"context"
	"strings"
	"testing"

	"github.com/flowsnap/flowsnap/cursor"
	"github.com/flowsnap/flowsnap/engine"
	"github.com/flowsnap/flowsnap/snapshot"
	"github.com/flowsnap/flowsnap/store"
)

// TestPagePlansOnAnAnalysedSQLiteStore reads the plans of the page and
// change-feed statements on a SQLite store that has been analysed, where
// the planner has STAT4 samples to weigh bound values with: each must still
// seek its one index, its placeholders hidden from the planner (see
// store.Dialect.Bound) or not.
func TestPagePlansOnAnAnalysedSQLiteStore(t *testing.T) {
	t.Parallel()
	f := analysedSQLiteStore(t)
	ctx := context.Background()
	var samples int
	if err := f.db.Write(ctx, func(tx store.Tx) error {
		return tx.QueryRow(ctx, `SELECT count(*) FROM sqlite_stat4`).Scan(&samples)
	}); err != nil {
		t.Fatal(err)
	}
	if samples == 0 {
		t.Fatal("ANALYZE left no STAT4 samples: the store is not what this test is about")
	}
	for kind, seek := range map[cursor.Kind]string{
		cursor.Children: "SEARCH flows_run_parents USING COVERING INDEX flows_run_parents_by_parent (parent_id=? AND (seq,child_id)>(?,?))",
		cursor.Rounds:   "SEARCH flows_runs USING COVERING INDEX flows_runs_rounds (<expr>=? AND <expr>>?)",
		// The lineage of the anchor's row, read in the same statement.
		"rounds-of-anchor":   "SEARCH flows_runs USING COVERING INDEX flows_runs_rounds (<expr>=? AND <expr>>?)",
		cursor.Steps:         "SEARCH s USING INDEX flows_steps_by_run_created (run_id=? AND (created_at_ms,step_id)>(?,?))",
		cursor.InboundEvents: "SEARCH e USING INDEX flows_inbound_events_by_run_created (run_id=? AND (created_at_ms,event_id)>(?,?))",
		cursor.Events:        "SEARCH v USING PRIMARY KEY (run_id=? AND seq>?)",
		"changes":            "SEARCH flows_run_changes USING INDEX sqlite_autoindex_flows_run_changes_2 (revision>? AND revision<?)",
	} {
		t.Run(string(kind), func(t *testing.T) {
			sql, args := snapshot.PageSQL(store.SQLite, kind, "run-0000001", -1)
			if !strings.Contains(sql, "+$1") {
				t.Errorf("the key's placeholder is not hidden from the planner:\n%s", sql)
			}
			if plan := explain(t, f, sql, args); !strings.Contains(plan, seek) {
				t.Errorf("the plan does not seek %q\n%s\nplan:\n%s", seek, sql, plan)
			}
		})
	}
}

// TestParentLookupsSeekEachRunOnSQLite reads the plans of the statements
// that read runs with their parents on an analysed SQLite store: each
// parent must be looked up by its run's id, once, and no table or index of
// the runs scanned, which joined freely SQLite did for a batch of runs.
func TestParentLookupsSeekEachRunOnSQLite(t *testing.T) {
	t.Parallel()
	f := analysedSQLiteStore(t)
	const lookup = "SEARCH p USING INDEX sqlite_autoindex_flows_runs_1 (run_id=?)"
	runs, runArgs := snapshot.RunsAndParentsSQL(store.SQLite, []string{"run-0000001", "run-0000002", "run-0000003"})
	dashboard, dashboardArgs := snapshot.DashboardSQL(store.SQLite, "run-0000001")
	for name, s := range map[string]struct {
		sql  string
		args []any
	}{"runs and parents": {runs, runArgs}, "dashboard": {dashboard, dashboardArgs}} {
		t.Run(name, func(t *testing.T) {
			plan := explain(t, f, s.sql, s.args)
			if n := strings.Count(plan, lookup); n != 1 {
				t.Errorf("the plan looks parents up %d times, not once by id (%q)\n%s\nplan:\n%s", n, lookup, s.sql, plan)
			}
			for _, line := range strings.Split(plan, "\n") {
				if strings.Contains(line, "SCAN flows_runs") || strings.Contains(line, "SCAN p ") || strings.HasSuffix(line, "SCAN p") ||
					strings.Contains(line, "BLOOM FILTER ON p") {
					t.Errorf("the plan scans the runs: %q\n%s\nplan:\n%s", line, s.sql, plan)
				}
			}
		})
	}
}

// analysedSQLiteStore is a seeded SQLite store that has been analysed, as
// the plan tests read it.
func analysedSQLiteStore(t *testing.T) *fixture {
	t.Helper()
	f := newFixture(t, store.SQLite)
	ctx := context.Background()
	if _, err := engine.Seed(ctx, f.db, engine.SeedOptions{Runs: 300, Seed: 21}); err != nil {
		t.Fatal(err)
	}
	if err := f.db.Write(ctx, func(tx store.Tx) error { _, err := tx.Exec(ctx, "ANALYZE"); return err }); err != nil {
		t.Fatal(err)
	}
	return f
}
