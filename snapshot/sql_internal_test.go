package snapshot

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"

	"github.com/flowsnap/flowsnap/access"
	"github.com/flowsnap/flowsnap/cursor"
	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/vocab"
)

var update = flag.Bool("update", false, "rewrite the golden SQL files under testdata/sql")

// TestAssembledSQL prints every statement the reader assembles, in each
// dialect, to a golden file under testdata/sql, so that every change to the
// SQL that runs shows in a diff. Run with -update to accept a change.
func TestAssembledSQL(t *testing.T) {
	two := []pageWant{
		{req: 0, key: "anchor-a", after: cursor.Cursor{Ordinal: -1}, size: 100},
		{req: 1, key: "anchor-b", after: cursor.Cursor{Ordinal: 7, Last: "x"}, size: 10},
	}
	lists := []pageList{runLists[cursor.Children], runLists[cursor.Rounds], stepList, inboundList, runEventList}
	for _, d := range []store.Dialect{store.SQLite, store.Postgres} {
		statements := []struct{ name, sql string }{
			{"position", selectPosition},
			{"runs", selectRuns(d)},
			{"steps", selectSteps(d)},
			{"current_steps", selectCurrentSteps(d)},
			{"attempts", selectAttempts(d)},
			{"changes", selectChanges(d)},
		}
		for _, l := range lists {
			sql, args := l.sql(d, two)
			statements = append(statements, struct{ name, sql string }{
				fmt.Sprintf("%s_pages", l.kind), fmt.Sprintf("%s\n-- arguments: %v", sql, args),
			})
		}
		// A run and its children and rounds (RunsAndPages): the ids after
		// the keysets' arguments, the rounds by the anchor's lineage.
		mixed := []pageWant{
			{req: 0, l: runLists[cursor.Children], key: "anchor-a", after: cursor.Cursor{Ordinal: -1}, size: 10},
			{req: 1, l: roundsOfAnchor, key: "anchor-a", after: cursor.Cursor{Ordinal: -1}, size: 10},
		}
		sql, args := pagesSQL(d, runPages, mixed, []string{"anchor-a", "other"}, "")
		statements = append(statements, struct{ name, sql string }{"runs_and_pages", fmt.Sprintf("%s\n-- arguments: %v", sql, args)})
		// The same with every run's parent (RunsPagesAndParents), and runs
		// by id with their parents (RunsAndParents).
		sql, args = pagesSQL(d, runPages, mixed, []string{"anchor-a", "other"}, Parents{OfRuns: true, OfPages: true}.of())
		statements = append(statements, struct{ name, sql string }{"runs_pages_and_parents", fmt.Sprintf("%s\n-- arguments: %v", sql, args)},
			struct{ name, sql string }{"runs_and_parents", selectRunsAndParents(d)})
		// The ops statements (docs/contract.md#ops-api): a page of finished
		// runs after a cursor, runStats over a finish window, and flows.
		since, flow := Millis(1000), "billing"
		finished := RunFilter{FinishedAfter: &since, FlowName: &flow}
		l := finished.where(d)
		sql = runsIn(d, listStatement(l.keyset(FinishedNewestFirst.key(), &cursor.Cursor{Ordinal: 5000, Last: "r"}, 11)))
		statements = append(statements, struct{ name, sql string }{"list_finished", fmt.Sprintf("%s\n-- arguments: %v", sql, l.args)})
		sql, args, _ = statsSQL(d, finished, []vocab.Status{vocab.StatusCompleted, vocab.StatusFailed}, 100, access.Everyone.Scope())
		statements = append(statements, struct{ name, sql string }{"run_stats", fmt.Sprintf("%s\n-- arguments: %v", sql, args)})
		sql, args = flowsSQL(d, "bill", &flow, 101)
		statements = append(statements, struct{ name, sql string }{"flows", fmt.Sprintf("%s\n-- arguments: %v", sql, args)})
		// The scope of a principal (docs/contract.md#scopes): exact names
		// as a branch each, prefixes as ranges every branch shares, in
		// lists, stats and the change feed. (Flows reads the ranges of a
		// scope one by one, each with the statement of "flows".)
		names := (&access.Principal{Flows: []string{"ops", "audit"}}).Scope()
		mixedScope := (&access.Principal{Flows: []string{"billing-*", "ops", "audit"}}).Scope()
		failed := RunFilter{Status: []vocab.Status{vocab.StatusFailed}}
		for name, s := range map[string]access.Scope{"names": names, "prefix": mixedScope} {
			l = failed.where(d)
			l.scoped(s, failed)
			sql = runsIn(d, listStatement(l.keyset(NewestFirst.key(), nil, 101)))
			statements = append(statements, struct{ name, sql string }{"list_scoped_" + name, fmt.Sprintf("%s\n-- arguments: %v", sql, l.args)})
		}
		sql, args, _ = statsSQL(d, RunFilter{}, vocab.Statuses[:2], 100, mixedScope)
		statements = append(statements, struct{ name, sql string }{"run_stats_scoped", fmt.Sprintf("%s\n-- arguments: %v", sql, args)})
		sql, args = selectScopedChanges(d, mixedScope, []any{int64(10), int64(20), 101})
		statements = append(statements, struct{ name, sql string }{"changes_scoped", fmt.Sprintf("%s\n-- arguments: %v", sql, args)})
		for _, s := range statements {
			t.Run(string(d)+"/"+s.name, func(t *testing.T) {
				path := filepath.Join("testdata", "sql", string(d), s.name+".sql")
				got := strings.TrimSpace(s.sql) + "\n"
				if *update {
					if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
						t.Fatal(err)
					}
					return
				}
				want, err := os.ReadFile(path)
				if err != nil {
					t.Fatalf("%v (run go test ./snapshot -run TestAssembledSQL -update)", err)
				}
				if string(want) != got {
					t.Errorf("%s changed (rerun with -update to accept):\n--- want\n%s\n--- got\n%s", path, want, got)
				}
			})
		}
	}
}

// TestPageStatementsAreMadeOnce reads the statements of batches of pages
// of every mix of kinds through pageStatements, twice each: every one is
// pagesSQL's, statement and arguments, whether made or kept; and past
// maxPageStatements shapes, still made right.
func TestPageStatementsAreMadeOnce(t *testing.T) {
	children, rounds := runLists[cursor.Children], runLists[cursor.Rounds]
	want := func(l pageList, key string, ord int64, last string, size int) pageWant {
		return pageWant{l: l, key: key, after: cursor.Cursor{Ordinal: ord, Last: last}, size: size}
	}
	batches := [][]pageWant{
		{want(children, "a", -1, "", 10)},
		{want(rounds, "l", 3, "r", 2)},
		{want(children, "a", 4, "c", 10), want(rounds, "l", -1, "", 5)},
		{want(rounds, "l", -1, "", 5), want(children, "b", 4, "c", 10)},
		{want(stepList, "s", 1, "x", 3), want(stepList, "t", -1, "", 200)},
		{want(runEventList, "e", 9, "", 1)},
	}
	for _, d := range []store.Dialect{store.SQLite, store.Postgres} {
		var p pageStatements
		made := make([]string, len(batches))
		for round := range 2 {
			for i, b := range batches {
				sql, args := p.of(d, b[0].l.statement, b, nil, "")
				wantSQL, wantArgs := pagesSQL(d, b[0].l.statement, b, nil, "")
				if sql != wantSQL || fmt.Sprint(args) != fmt.Sprint(wantArgs) {
					t.Fatalf("%s batch %d:\n%s %v\nwant\n%s %v", d, i, sql, args, wantSQL, wantArgs)
				}
				if round == 0 {
					made[i] = sql
				} else if unsafe.StringData(sql) != unsafe.StringData(made[i]) {
					t.Errorf("%s batch %d: its statement was made again", d, i)
				}
			}
		}
		if n := p.cache.Len(); n != len(batches) {
			t.Errorf("%s: %d statements kept for %d shapes", d, n, len(batches))
		}
		// Past the bound, the shape used least recently leaves.
		for i := range maxPageStatements {
			b := make([]pageWant, i+3)
			for j := range b {
				b[j] = want(children, "z", -1, "", 1)
			}
			if sql, _ := p.of(d, runPages, b, nil, ""); sql != wantOf(d, b) {
				t.Fatalf("%s: shape %d: %s", d, i, sql)
			}
		}
		if n := p.cache.Len(); n != maxPageStatements {
			t.Errorf("%s: %d statements kept, the bound is %d", d, n, maxPageStatements)
		}
		if p.cache.Contains("children") {
			t.Errorf("%s: the shape used least recently was kept past the bound", d)
		}
	}
}

func wantOf(d store.Dialect, wants []pageWant) string {
	sql, _ := pagesSQL(d, runPages, wants, nil, "")
	return sql
}
