package graph_test

import (
	"testing"

	"github.com/flowsnap/flowsnap/graph"
	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/storetest"
)

func TestChangesGraphQL(t *testing.T) {
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		e := fixture(t, d, graph.Options{})
		const feedQuery = `query($since: SafeInt!, $source: String, $first: Int) {
			position { source revision }
			changes(since: $since, source: $source, first: $first) {
				nextRevision hasMore
				changes { runId revision deleted run { __typename ... on Run { id revision status } ... on MissingRun { id deleted deletedAtRevision } } }
			} }`

		t.Run("the feed from 0 pages to the position with every run id once", func(t *testing.T) {
			seen := map[string]bool{}
			since, source := float64(0), any(nil)
			var last float64
			for page := 0; ; page++ {
				if page > 100 {
					t.Fatal("the feed does not end")
				}
				n := len(e.stmts)
				r := e.ok(feedQuery, map[string]any{"since": since, "source": source, "first": 100})
				if got := e.stmts[n]; got != 3 {
					t.Errorf("page %d took %d statements, want 3 (position, changes, runs)", page, got)
				}
				source = get(r.Data, "position", "source")
				changes, _ := get(r.Data, "changes", "changes").([]any)
				for _, c := range changes {
					id, _ := get(c, "runId").(string)
					rev, _ := get(c, "revision").(float64)
					if seen[id] || rev <= last || rev <= since {
						t.Fatalf("change %v repeats a run or is out of order (last %v, since %v)", c, last, since)
					}
					seen[id], last = true, rev
					if get(c, "deleted") == true {
						if get(c, "run", "__typename") != "MissingRun" || get(c, "run", "deletedAtRevision") != rev {
							t.Errorf("tombstone %v", c)
						}
					} else if get(c, "run", "__typename") != "Run" || get(c, "run", "id") != id || get(c, "run", "revision") != rev {
						t.Errorf("change %v does not read its run at the same snapshot", c)
					}
				}
				since, _ = get(r.Data, "changes", "nextRevision").(float64)
				if get(r.Data, "changes", "hasMore") != true {
					if since != get(r.Data, "position", "revision") {
						t.Fatalf("last page's nextRevision %v, position %v", since, get(r.Data, "position", "revision"))
					}
					break
				}
				if since != last {
					t.Fatalf("nextRevision %v is not the last change's revision %v", since, last)
				}
			}
			if want := 1 + fanOut + rounds + fanRuns*(1+fanKids) + 4; len(seen) != want || !seen["gone"] {
				t.Fatalf("%d run ids in the feed, want %d with the deleted one", len(seen), want)
			}
		})

		t.Run("bad positions and sizes are refused with their codes", func(t *testing.T) {
			for _, c := range []struct {
				name string
				vars map[string]any
				code string
			}{
				{"another store's source", map[string]any{"since": 0, "source": "0123456789abcdef0123456789abcdef"}, "SOURCE_CHANGED"},
				{"a since beyond the store", map[string]any{"since": 1 << 40}, "SOURCE_CHANGED"},
				{"first 0", map[string]any{"since": 0, "first": 0}, "BAD_USER_INPUT"},
				{"first 1001", map[string]any{"since": 0, "first": 1001}, "BAD_USER_INPUT"},
				{"a negative since", map[string]any{"since": -1}, "BAD_USER_INPUT"},
			} {
				t.Run(c.name, func(t *testing.T) {
					r := e.do(feedQuery, c.vars)
					if !r.hasCode(c.code) {
						t.Fatalf("codes %v, want %s: %+v", r.codes(), c.code, r.Errors)
					}
				})
			}
		})
	})
}
