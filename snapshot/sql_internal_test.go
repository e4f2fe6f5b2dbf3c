package snapshot

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowsnap/flowsnap/cursor"
	"github.com/flowsnap/flowsnap/store"
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
