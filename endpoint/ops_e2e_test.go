package endpoint_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/flowsnap/flowsnap/endpoint"
	"github.com/flowsnap/flowsnap/engine"
	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/storetest"
	"github.com/flowsnap/flowsnap/store/vocab"
)

// finishFans finishes fan-000..fan-009 an hour after the fixture's runs
// were created, a minute apart (fan-00i at createdAt + 1h + (i+1) min):
// the even ones failed, the odd completed.
func finishFans(t *testing.T, e *env) {
	t.Helper()
	ctx := context.Background()
	now := createdAt + 3_600_000
	w := engine.NewWriter(e.db, func() int64 { return now })
	owner := vocab.Owner{HostID: "host-b", PID: 7, Nonce: "n"}
	for i := range 10 {
		id := fmt.Sprintf("fan-%03d", i)
		now += 60_000
		must(t, w.Start(ctx, id, owner))
		if i%2 == 0 {
			must(t, w.Fail(ctx, id, engine.RunError{Message: "boom"}))
		} else {
			must(t, w.Complete(ctx, id, nil))
		}
	}
}

func TestFinishedListsGraphQL(t *testing.T) {
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		e := fixture(t, d, endpoint.Options{})
		finishFans(t, e)
		const q = `query($filter: RunFilter, $order: RunOrder, $first: Int, $after: String) {
			listRuns(filter: $filter, order: $order, first: $first, after: $after) {
				edges { ordinal node { ... on Run { id status finishedAt } } }
				pageInfo { hasNextPage endCursor }
			} }`
		t.Run("failed runs finished since a time, created before it, newest finished first", func(t *testing.T) {
			since := rfc3339(createdAt + 3_600_000 + 3*60_000)
			var ids []string
			var after any
			for range 10 {
				r := e.ok(q, map[string]any{"filter": map[string]any{"status": []string{"FAILED"}, "finishedAfter": since, "createdBefore": since},
					"order": "FINISHED_NEWEST_FIRST", "first": 2, "after": after})
				for _, edge := range get(r.Data, "listRuns", "edges").([]any) {
					id, _ := get(edge, "node", "id").(string)
					if get(edge, "ordinal") == nil || rfc3339(int64(get(edge, "ordinal").(float64))) != get(edge, "node", "finishedAt") {
						t.Fatalf("edge %v: its ordinal is not its finish time", edge)
					}
					ids = append(ids, id)
				}
				if get(r.Data, "listRuns", "pageInfo", "hasNextPage") != true {
					break
				}
				after = get(r.Data, "listRuns", "pageInfo", "endCursor")
			}
			if want := []string{"fan-008", "fan-006", "fan-004", "fan-002"}; !slices.Equal(ids, want) {
				t.Fatalf("%v, want %v", ids, want)
			}
		})
		t.Run("a finished range is [after, before)", func(t *testing.T) {
			r := e.ok(`query($a: DateTime, $b: DateTime) { countRuns(filter: {finishedAfter: $a, finishedBefore: $b}) { count capped } }`,
				map[string]any{"a": rfc3339(createdAt + 3_600_000 + 60_000), "b": rfc3339(createdAt + 3_600_000 + 3*60_000)})
			if fmt.Sprint(r.Data["countRuns"]) != "map[capped:false count:2]" {
				t.Fatalf("%v", r.Data["countRuns"])
			}
		})
		t.Run("an unknown order is refused", func(t *testing.T) {
			if r := e.do(q, map[string]any{"order": "SIDEWAYS"}); len(r.Errors) == 0 {
				t.Fatalf("no error for order SIDEWAYS: %v", r.Data)
			}
		})
	})
}

func TestRunStatsGraphQL(t *testing.T) {
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		e := fixture(t, d, endpoint.Options{})
		finishFans(t, e)
		t.Run("one count per status, in the enum's order, as countRuns counts them", func(t *testing.T) {
			r := e.ok(`{ runStats { status count capped }
				p: countRuns(filter: {status: [PENDING]}) { count } r: countRuns(filter: {status: [RUNNING]}) { count }
				s: countRuns(filter: {status: [SUSPENDED]}) { count } c: countRuns(filter: {status: [COMPLETED]}) { count }
				f: countRuns(filter: {status: [FAILED]}) { count } x: countRuns(filter: {status: [CANCELLED]}) { count } }`, nil)
			stats := get(r.Data, "runStats").([]any)
			var got, want []string
			for i, alias := range []string{"p", "r", "s", "c", "f", "x"} {
				got = append(got, fmt.Sprint(get(stats[i], "status"), " ", get(stats[i], "count"), " ", get(stats[i], "capped")))
				want = append(want, fmt.Sprint([]string{"PENDING", "RUNNING", "SUSPENDED", "COMPLETED", "FAILED", "CANCELLED"}[i], " ", get(r.Data, alias, "count"), " false"))
			}
			if !slices.Equal(got, want) {
				t.Fatalf("runStats %v,\ncountRuns %v", got, want)
			}
			if want[3] != "COMPLETED 5 false" || want[4] != "FAILED 5 false" {
				t.Fatalf("counts %v", want)
			}
		})
		t.Run("capped exactly when more runs match than upTo", func(t *testing.T) {
			r := e.ok(`{ a: runStats(filter: {status: [FAILED, COMPLETED]}, upTo: 5) { status count capped }
				b: runStats(filter: {status: [FAILED]}, upTo: 4) { status count capped } }`, nil)
			if got := fmt.Sprint(r.Data["a"]); got != "[map[capped:false count:0 status:PENDING] map[capped:false count:0 status:RUNNING] map[capped:false count:0 status:SUSPENDED] map[capped:false count:5 status:COMPLETED] map[capped:false count:5 status:FAILED] map[capped:false count:0 status:CANCELLED]]" {
				t.Fatalf("a: %s", got)
			}
			if got := fmt.Sprint(get(r.Data, "b").([]any)[4]); got != "map[capped:true count:4 status:FAILED]" {
				t.Fatalf("b: %s", got)
			}
		})
		t.Run("it costs one bounded count per status it counts", func(t *testing.T) {
			for _, c := range []struct {
				query string
				cost  float64
			}{
				{`{ runStats(upTo: 1000000) { count } }`, 6 * 10_001},
				{`{ runStats(filter: {status: [FAILED, RUNNING, FAILED]}, upTo: 1000000) { count } }`, 2 * 10_001},
				{`{ runStats { count } }`, 6 * 101},
				{`{ runStats(filter: {status: []}) { count } }`, 1},
				{`{ countRuns(upTo: 1000000) { count } }`, 10_001},
			} {
				r := e.ok(c.query, nil)
				if got := get(r.Extensions, "cost", "requested"); got != c.cost {
					t.Errorf("%s costs %v, want %v", c.query, got, c.cost)
				}
			}
		})
		t.Run("bad bounds are refused", func(t *testing.T) {
			for _, q := range []string{`{ runStats(upTo: 1000001) { count } }`, `{ runStats(upTo: -1) { count } }`, `{ runStats(filter: {parentRunId: ""}) { count } }`} {
				if r := e.do(q, nil); !r.hasCode("BAD_USER_INPUT") {
					t.Errorf("%s: codes %v", q, r.codes())
				}
			}
		})
	})
}

func TestFlowsGraphQL(t *testing.T) {
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		e := fixture(t, d, endpoint.Options{})
		const q = `query($first: Int, $after: String, $prefix: String) {
			flows(first: $first, after: $after, prefix: $prefix) { nodes pageInfo { hasNextPage endCursor } } }`
		page := func(t *testing.T, prefix any, first int) []string {
			var names []string
			after := any("") // "" is no cursor
			for range 20 {
				r := e.ok(q, map[string]any{"first": first, "after": after, "prefix": prefix})
				for _, n := range get(r.Data, "flows", "nodes").([]any) {
					names = append(names, n.(string))
				}
				if get(r.Data, "flows", "pageInfo", "hasNextPage") != true {
					return names
				}
				after = get(r.Data, "flows", "pageInfo", "endCursor")
			}
			t.Fatal("the flows do not end")
			return nil
		}
		t.Run("every distinct flow once, ascending", func(t *testing.T) {
			// "gone" was deleted: its flow, ops, lives on in other runs.
			if got, want := page(t, nil, 2), []string{"fan", "fanout", "kid", "leaf", "loop", "ops"}; !slices.Equal(got, want) {
				t.Fatalf("%v, want %v", got, want)
			}
			if got, want := page(t, "fan", 1), []string{"fan", "fanout"}; !slices.Equal(got, want) {
				t.Fatalf("prefix fan: %v, want %v", got, want)
			}
			if got := page(t, "zz", 5); len(got) != 0 {
				t.Fatalf("prefix zz: %v", got)
			}
		})
		t.Run("bad arguments are refused with their codes", func(t *testing.T) {
			r := e.ok(q, map[string]any{"first": 1, "prefix": "fan"})
			c := get(r.Data, "flows", "pageInfo", "endCursor")
			for _, tc := range []struct {
				name string
				vars map[string]any
				code string
			}{
				{"first 0", map[string]any{"first": 0}, "BAD_USER_INPUT"},
				{"first 201", map[string]any{"first": 201}, "BAD_USER_INPUT"},
				{"a cursor of another prefix", map[string]any{"after": c, "prefix": "f"}, "BAD_CURSOR"},
				{"a malformed cursor", map[string]any{"after": "not a cursor"}, "BAD_CURSOR"},
			} {
				t.Run(tc.name, func(t *testing.T) {
					r := e.do(q, tc.vars)
					if !r.hasCode(tc.code) || get(r.Data, "flows") != nil {
						t.Fatalf("codes %v, data %v", r.codes(), r.Data)
					}
				})
			}
			r = e.do(`query($c: String) { listRuns(after: $c) { nodes { __typename } } }`, map[string]any{"c": c})
			if !r.hasCode("BAD_CURSOR") {
				t.Fatalf("a flows cursor on listRuns: codes %v", r.codes())
			}
		})
		t.Run("a page of names costs its size", func(t *testing.T) {
			if got := get(e.ok(`{ flows(first: 50) { nodes } }`, nil).Extensions, "cost", "requested"); got != float64(51) {
				t.Fatalf("cost %v", got)
			}
		})
	})
}
