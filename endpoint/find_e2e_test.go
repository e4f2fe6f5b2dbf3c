package endpoint_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/flowsnap/flowsnap/endpoint"
	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/storetest"
)

func TestChangesGraphQL(t *testing.T) {
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		e := fixture(t, d, endpoint.Options{})
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

func TestListRunsGraphQL(t *testing.T) {
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		e := fixture(t, d, endpoint.Options{})
		const listQuery = `query($filter: RunFilter, $order: RunOrder, $first: Int, $after: String) {
			listRuns(filter: $filter, order: $order, first: $first, after: $after) {
				edges { cursor ordinal node { ... on Run { id status flowName } } }
				pageInfo { hasNextPage endCursor }
			} }`
		// page lists a filter to its end, one run a page.
		page := func(t *testing.T, filter map[string]any, order string) []string {
			var ids []string
			var after any
			for n := 0; ; n++ {
				if n > 1000 {
					t.Fatal("the list does not end")
				}
				r := e.ok(listQuery, map[string]any{"filter": filter, "order": order, "first": 1, "after": after})
				edges, _ := get(r.Data, "listRuns", "edges").([]any)
				for _, edge := range edges {
					id, _ := get(edge, "node", "id").(string)
					ids = append(ids, id)
				}
				if get(r.Data, "listRuns", "pageInfo", "hasNextPage") != true {
					return ids
				}
				after = get(r.Data, "listRuns", "pageInfo", "endCursor")
			}
		}

		t.Run("a status filter pages to its end in both orders", func(t *testing.T) {
			// Every run of the fixture is created at one instant: the order
			// is the run ids'.
			got := page(t, map[string]any{"status": []string{"RUNNING"}}, "OLDEST_FIRST")
			if want := []string{"cancelled", "runner"}; !slices.Equal(got, want) {
				t.Fatalf("running runs oldest first: %v, want %v", got, want)
			}
			if got := page(t, map[string]any{"status": []string{"RUNNING"}}, "NEWEST_FIRST"); !slices.Equal(got, []string{"runner", "cancelled"}) {
				t.Fatalf("running runs newest first: %v", got)
			}
		})

		t.Run("heartbeatBefore lists the running runs with older heartbeats", func(t *testing.T) {
			if got := page(t, map[string]any{"heartbeatBefore": rfc3339(createdAt + 1)}, "OLDEST_FIRST"); !slices.Equal(got, []string{"cancelled", "runner"}) {
				t.Fatalf("stale runs: %v", got)
			}
			if got := page(t, map[string]any{"heartbeatBefore": rfc3339(createdAt)}, "OLDEST_FIRST"); len(got) != 0 {
				t.Fatalf("heartbeats are not before their own instant: %v", got)
			}
		})

		t.Run("a flow lists every run of it once", func(t *testing.T) {
			r := e.ok(listQuery, map[string]any{"filter": map[string]any{"flowName": "leaf"}, "first": 200})
			edges, _ := get(r.Data, "listRuns", "edges").([]any)
			if len(edges) != 200 || get(r.Data, "listRuns", "pageInfo", "hasNextPage") != true {
				t.Fatalf("%d edges of %d leaves", len(edges), fanOut)
			}
			if got := len(page(t, map[string]any{"flowName": "leaf", "parentRunId": "parent"}, "NEWEST_FIRST")); got != fanOut {
				t.Fatalf("%d leaves of the parent, want %d", got, fanOut)
			}
			if got := page(t, map[string]any{"flowName": "no such flow"}, "NEWEST_FIRST"); len(got) != 0 {
				t.Fatalf("an unknown flow lists %v", got)
			}
		})

		t.Run("a cursor of one filter is refused with another", func(t *testing.T) {
			r := e.ok(listQuery, map[string]any{"filter": map[string]any{"status": []string{"RUNNING"}}, "first": 1})
			c := get(r.Data, "listRuns", "pageInfo", "endCursor")
			for _, vars := range []map[string]any{
				{"filter": map[string]any{"status": []string{"PENDING"}}, "after": c},
				{"filter": map[string]any{"status": []string{"RUNNING"}}, "order": "OLDEST_FIRST", "after": c},
				{"after": c},
			} {
				r := e.do(listQuery, vars)
				if !r.hasCode("BAD_CURSOR") || get(r.Data, "listRuns") != nil {
					t.Fatalf("vars %v: codes %v, data %v", vars, r.codes(), r.Data)
				}
			}
			if r := e.do(listQuery, map[string]any{"first": 0}); !r.hasCode("BAD_USER_INPUT") {
				t.Fatalf("first 0: codes %v", r.codes())
			}
		})

		t.Run("nested fields of a page are read in batches", func(t *testing.T) {
			n := len(e.stmts)
			r := e.ok(`{ listRuns(filter: {flowName: "fan"}, first: 100) { nodes { ... on Run { id
				children(first: 5) { nodes { ... on Run { id parent { ... on Run { id } } rounds(first: 2) { nodes { __typename } } } } } } } } }`, nil)
			nodes, _ := get(r.Data, "listRuns", "nodes").([]any)
			if len(nodes) != fanRuns || len(get(nodes[0], "children", "nodes").([]any)) != fanKids {
				t.Fatalf("%d fan runs, first with %v", len(nodes), get(nodes[0], "children"))
			}
			if got := e.stmts[n]; got > 6 {
				t.Fatalf("%d statements for %d runs with children, parents and rounds", got, fanRuns)
			}
		})

		t.Run("countRuns counts up to its bound", func(t *testing.T) {
			r := e.ok(`{ all: countRuns(filter: {flowName: "leaf"}) { count capped }
				some: countRuns(filter: {flowName: "leaf"}, upTo: 100) { count capped }
				none: countRuns(filter: {status: []}) { count capped } }`, nil)
			if fmt.Sprint(r.Data["all"], r.Data["some"], r.Data["none"]) != fmt.Sprintf("map[capped:false count:%d] map[capped:true count:100] map[capped:false count:0]", fanOut) {
				t.Fatalf("counts %v %v %v", r.Data["all"], r.Data["some"], r.Data["none"])
			}
			if r := e.do(`{ countRuns(upTo: 1000001) { count } }`, nil); !r.hasCode("BAD_USER_INPUT") {
				t.Fatalf("upTo beyond the limit: codes %v", r.codes())
			}
		})
	})
}

func rfc3339(ms int64) string { return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z") }
