package endpoint_test

import (
	"testing"

	"github.com/flowsnap/flowsnap/endpoint"
	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/storetest"
)

// TestClientConventions checks docs/contract.md#client-conventions on the wire: Relay's object
// identification and PageInfo, nullable connections and after: "".
func TestClientConventions(t *testing.T) {
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		e := fixture(t, d, endpoint.Options{})

		t.Run("node(id:) reads a run and a missing run like run(id:)", func(t *testing.T) {
			r := e.ok(`{
				a: node(id: "waiter") { __typename id ... on Run { status } }
				b: node(id: "gone") { __typename id ... on MissingRun { deleted } }
				c: node(id: "never") { __typename id ... on MissingRun { deleted } }
				d: run(id: "waiter") { ... on Node { id } }
			}`, nil)
			for k, want := range map[string]map[string]any{
				"a": {"__typename": "Run", "id": "waiter", "status": "SUSPENDED"},
				"b": {"__typename": "MissingRun", "id": "gone", "deleted": true},
				"c": {"__typename": "MissingRun", "id": "never", "deleted": false},
				"d": {"id": "waiter"},
			} {
				for f, v := range want {
					if got := get(r.Data, k, f); got != v {
						t.Errorf("%s.%s = %v, want %v", k, f, got, v)
					}
				}
			}
		})

		t.Run("node(id:) refuses a malformed id as run(id:) does", func(t *testing.T) {
			r := e.do(`{ node(id: "") { id } }`, nil)
			if !r.hasCode("BAD_USER_INPUT") || r.Data["node"] != nil {
				t.Fatalf("data = %v, codes = %v", r.Data, r.codes())
			}
		})

		t.Run("PageInfo has Relay's four fields", func(t *testing.T) {
			r := e.ok(`{ run(id: "parent") { ... on Run { children(first: 3) {
				edges { cursor } pageInfo { hasNextPage hasPreviousPage startCursor endCursor } } } } }`, nil)
			c := get(r.Data, "run", "children")
			if get(c, "pageInfo", "startCursor") != get(c, "edges", 0, "cursor") ||
				get(c, "pageInfo", "endCursor") != get(c, "edges", 2, "cursor") ||
				get(c, "pageInfo", "hasNextPage") != true || get(c, "pageInfo", "hasPreviousPage") != false {
				t.Fatalf("children = %v", c)
			}
			r = e.ok(`{ run(id: "waiter") { ... on Run {
				children { pageInfo { startCursor endCursor } }
				steps { pageInfo { hasPreviousPage startCursor endCursor } } } } }`, nil)
			if p := get(r.Data, "run", "children", "pageInfo"); get(p, "startCursor") != nil || get(p, "endCursor") != nil {
				t.Fatalf("an empty page's pageInfo = %v", p)
			}
			if p := get(r.Data, "run", "steps", "pageInfo"); get(p, "startCursor") != nil || get(p, "hasPreviousPage") != false {
				t.Fatalf("an empty journal page's pageInfo = %v", p)
			}
		})

		t.Run(`after "" is the start of the list`, func(t *testing.T) {
			q := `query($a: String) { run(id: "round-2") { ... on Run {
				rounds(first: 2, after: $a) { nodes { ... on Run { id } } }
				children(after: $a) { nodes { __typename } }
				steps(after: $a) { nodes { id } }
				inboundEvents(after: $a) { nodes { id } }
				events(after: $a) { nodes { seq } } } } }`
			empty := e.ok(q, map[string]any{"a": ""})
			null := e.ok(q, map[string]any{"a": nil})
			if get(empty.Data, "run", "rounds", "nodes", 0, "id") != "round-0" {
				t.Fatalf(`rounds after "" = %v`, get(empty.Data, "run", "rounds"))
			}
			for _, f := range []string{"rounds", "children", "steps", "inboundEvents", "events"} {
				if a, b := get(empty.Data, "run", f, "nodes"), get(null.Data, "run", f, "nodes"); a == nil || len(a.([]any)) != len(b.([]any)) {
					t.Errorf(`%s after "" = %v, after null = %v`, f, a, b)
				}
			}
		})

		t.Run("a bad cursor or page size nulls only its own connection", func(t *testing.T) {
			for _, field := range []string{
				`children(after: "not a cursor!") { nodes { __typename } }`,
				`rounds(first: 0) { nodes { __typename } }`,
				`steps(after: "not a cursor!") { nodes { id } }`,
				`inboundEvents(first: 201) { nodes { id } }`,
				`events(after: "not a cursor!") { nodes { seq } }`,
			} {
				r := e.do(`{ run(id: "parent") { ... on Run { id status bad: `+field+`
					good: rounds(first: 1) { nodes { ... on Run { id } } } } } }`, nil)
				if len(r.Errors) != 1 || !(r.hasCode("BAD_CURSOR") || r.hasCode("BAD_USER_INPUT")) {
					t.Errorf("%s: errors = %+v", field, r.Errors)
					continue
				}
				if p := r.Errors[0].Path; len(p) != 2 || p[0] != "run" || p[1] != "bad" {
					t.Errorf("%s: error path = %v", field, p)
				}
				run, _ := get(r.Data, "run").(map[string]any)
				if run == nil || run["id"] != "parent" || run["status"] != "PENDING" || run["bad"] != nil ||
					get(run, "good", "nodes", 0, "id") != "parent" {
					t.Errorf("%s: run = %v, want the run with only bad null", field, r.Data["run"])
				}
			}
		})
	})
}
