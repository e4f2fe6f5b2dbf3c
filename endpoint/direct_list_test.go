package endpoint_test

import (
	"bytes"
	"log/slog"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/flowsnap/flowsnap/access"
	"github.com/flowsnap/flowsnap/endpoint"
	"github.com/flowsnap/flowsnap/snapshot"
	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/storetest"
)

// directListCases are the operations of TestDirectAnswersAsTheExecutor on
// the root fields that read by themselves: pages of listRuns (listAfter is
// the end cursor of the first three runs of flow "leaf"), the change feed
// (source and revision are the store's), countRuns and the position. Those that fail are
// answered by the executor, with its errors.
func directListCases(listAfter, source string, revision int64) []directCase {
	page := `{ __typename edges { __typename cursor ordinal node { __typename ... on Run { id status flowName createdAt
			owner { hostId pid nonce } waiting { kind reason wakeAt } cancellation { requestedAt } } ... on MissingRun { id } } }
		nodes { ... on Run { id flowName } }
		pageInfo { __typename hasNextPage hasPreviousPage startCursor endCursor } }`
	feed := `{ __typename changes { __typename runId revision deleted run { __typename ... on Run { id status flowName }
			... on MissingRun { id deleted deletedAtRevision } } } nextRevision hasMore }`
	return []directCase{
		{name: "a list page with filters and an order", cached: true, direct: true,
			query: `{ listRuns(filter: {status: [RUNNING, SUSPENDED, CANCELLED, RUNNING], flowName: "ops", waitingKind: [APPROVAL, TIMER]}, order: OLDEST_FIRST, first: 2) ` + page + ` }`},
		{name: "a list page by variables", cached: true, direct: true,
			query: `query($f: RunFilter, $o: RunOrder, $n: Int) { listRuns(filter: $f, order: $o, first: $n) ` + page + ` }`,
			vars: map[string]any{"f": map[string]any{"status": "PENDING", "lineageId": "round-0", "createdAfter": "2020-01-01T00:00:00Z",
				"rootsOnly": false, "cancelRequested": false}, "o": "NEWEST_FIRST", "n": 4}},
		{name: "a list page after a cursor", cached: true, direct: true,
			query: `query($after: String) { listRuns(filter: {flowName: "leaf"}, first: 3, after: $after) ` + page + ` }`,
			vars:  map[string]any{"after": listAfter}},
		{name: "the default list page and an empty cursor", cached: true, direct: true,
			query: `{ listRuns(after: "") { edges { cursor ordinal node { ... on Run { id parent { ... on Run { id } } } } } pageInfo { hasNextPage endCursor } } }`},
		{name: "finished runs newest first", cached: true, direct: true,
			query: `{ listRuns(order: FINISHED_NEWEST_FIRST, filter: {finishedAfter: "2000-01-01T00:00:00.000Z"}) ` + page + ` }`},
		{name: "a list page's children and rounds", cached: true, direct: true,
			query: `{ listRuns(filter: {flowName: "fanout"}) { nodes { ... on Run { id children(first: 2) ` + page + ` } } }
				r: listRuns(filter: {lineageId: "round-0"}, first: 2) { edges { node { ... on Run { id rounds ` + page + ` } } } } }`},
		{name: "lists, a batch, a count and the position together", cached: true, direct: true,
			query: `{ position { __typename source revision } a: listRuns(first: 1) { edges { cursor } } runs(ids: ["waiter", "gone"]) { ... on Run { id } ... on MissingRun { id } }
				b: listRuns(filter: {status: [FAILED]}) { edges { cursor } pageInfo { hasNextPage } } countRuns { __typename count capped } }`},
		{name: "a list page with a deferred field", cached: true,
			query: `{ listRuns(first: 2) { edges { node { ... on Run { id ... @defer { status } } } } } }`},
		{name: "a list page and a field the direct answer does not know", cached: true,
			query: `{ listRuns(first: 2) { edges { node { ... on Run { id } } } } flows { nodes } }`},
		{name: "a bad list cursor", query: `{ listRuns(after: "nope") { edges { cursor } } }`},
		{name: "a cursor of another list", query: `query($after: String) { listRuns(filter: {flowName: "loop"}, first: 3, after: $after) { edges { cursor } } }`,
			vars: map[string]any{"after": listAfter}},
		{name: "a list page too large", query: `{ listRuns(first: 201) { edges { cursor } } }`},
		{name: "a malformed filter", query: `query($f: RunFilter) { listRuns(filter: $f) { edges { cursor } } }`,
			vars: map[string]any{"f": map[string]any{"createdAfter": "yesterday"}}},
		{name: "a malformed id in a filter", query: `{ listRuns(filter: {parentRunId: ""}) { edges { cursor } } }`},
		{name: "the change feed", cached: true, direct: true,
			query: `{ changes(since: 0, first: 5) ` + feed + ` }`},
		{name: "the change feed by source, since and first", cached: true, direct: true,
			query: `query($s: SafeInt!, $src: String, $n: Int) { changes(since: $s, source: $src, first: $n) ` + feed + ` }`,
			vars:  map[string]any{"s": 3, "src": source, "n": 1000}},
		{name: "the change feed's tail with its deletion", cached: true, direct: true,
			query: `query($s: SafeInt!, $src: String) { changes(since: $s, source: $src) ` + feed + ` }`,
			vars:  map[string]any{"s": revision - 20, "src": source}},
		{name: "a list page's parents, its children skipped by a variable", cached: true, direct: true, query: listChildrenIf,
			vars: map[string]any{"c": false}},
		{name: "a list page's parents, its children included by a variable", cached: true, direct: true, query: listChildrenIf,
			vars: map[string]any{"c": true}},
		{name: "the change feed with its runs' parents", cached: true, direct: true,
			query: `{ changes(since: 0, first: 60) { changes { runId run { ... on Run { id parent { __typename ... on Run { id status }
				... on MissingRun { id deleted } } } } } hasMore } }`},
		{name: "the change feed of another store", query: `{ changes(since: 0, source: "00000000000000000000000000000000") ` + feed + ` }`},
		{name: "the change feed beyond the store's revision", query: `{ changes(since: 999999999) ` + feed + ` }`},
		{name: "a change feed page too large", query: `{ changes(since: 0, first: 1001) { hasMore } }`},
		{name: "a count of runs", cached: true, direct: true,
			query: `{ countRuns(filter: {flowName: "leaf"}, upTo: 3) { count capped } all: countRuns { count capped } }`},
		{name: "a count bound too large", query: `{ countRuns(upTo: 1000001) { count } }`},
		{name: "the position alone", cached: true, direct: true, query: `{ position { source revision } }`},
	}
}

// listChildrenIf selects the parents of a list page's runs, and their
// children when $c says so: the same document reads below the page only
// parents, or children too, by its variables.
const listChildrenIf = `query($c: Boolean!) { listRuns(first: 30) { edges { node { ... on Run { id
	parent { ... on Run { id status } } children(first: 2) @include(if: $c) { edges { node { ... on Run { id } } } } } } } } }`

// TestDirectListsAsTheExecutorForAPrincipal sends lists, the change feed
// and counts as principals with a scope, with and without payloads, to a
// server that answers directly and to one that leaves every operation to
// the executor: the same bytes and statements, the scope applied alike, and
// payload fields a principal may not read left to the executor's FORBIDDEN
// errors (docs/contract.md#access-control).
func TestDirectListsAsTheExecutorForAPrincipal(t *testing.T) {
	for _, d := range storetest.Dialects {
		t.Run(string(d), func(t *testing.T) { directListsAsTheExecutorForAPrincipal(t, d) })
	}
}

func directListsAsTheExecutorForAPrincipal(t *testing.T, d store.Dialect) {
	e := fixture(t, d, endpoint.Options{})
	e.reader.SetRunCache(0)
	unscoped := e.ok(`{ listRuns(first: 2) { pageInfo { endCursor } } }`, nil)
	cursor := get(unscoped.Data, "listRuns", "pageInfo", "endCursor").(string)
	logs := &syncBuffer{}
	var mu sync.Mutex
	stmts := map[bool][]int{}
	serve := func(p *access.Principal, direct bool) string {
		opts := endpoint.Options{NoDirect: !direct, OnOperation: func(rd *snapshot.Read) {
			mu.Lock()
			stmts[direct] = append(stmts[direct], rd.Statements())
			mu.Unlock()
		}}
		if direct {
			opts.Logger = slog.New(slog.NewJSONHandler(logs, nil))
		}
		srv := httptest.NewServer(withPrincipal(p, endpoint.NewHandler(e.reader, opts)))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	metadata := &access.Principal{Name: "m", Flows: []string{"leaf", "ops"}}
	payloads := &access.Principal{Name: "p", Flows: []string{"ops"}, Payloads: true}
	cases := []struct {
		name   string
		p      *access.Principal
		query  string
		vars   map[string]any
		direct bool
	}{
		{"a scoped list page", metadata, `{ listRuns(first: 5) { edges { cursor node { ... on Run { id flowName } } } pageInfo { hasNextPage endCursor } } }`, nil, true},
		{"a scoped change feed", metadata, `{ changes(since: 0, first: 5) { changes { runId run { ... on Run { id flowName } } } nextRevision hasMore } }`, nil, true},
		{"a scoped count", metadata, `{ countRuns { count capped } }`, nil, true},
		{"state without the payload permission", metadata, `{ listRuns(first: 5) { nodes { ... on Run { id state } } } }`, nil, false},
		{"a waiting request without the payload permission", metadata,
			`{ listRuns(filter: {flowName: "ops"}) { nodes { ... on Run { id waiting { request } } } } }`, nil, false},
		{"a change's state without the payload permission", metadata, `{ changes(since: 0) { changes { run { ... on Run { id state } } } } }`, nil, false},
		// One root field a case: the executor resolves root fields at
		// once, and a list page read before the feed primes the runs the
		// feed would read, so two together cost one statement more or
		// less as the scheduler picks.
		{"payloads with the permission", payloads, `{ listRuns { nodes { ... on Run { id state waiting { request } } } } }`, nil, true},
		{"a change's payloads with the permission", payloads, `{ changes(since: 0) { changes { run { ... on Run { state } } } } }`, nil, true},
		{"a cursor of another principal's list", payloads, `query($c: String) { listRuns(first: 2, after: $c) { edges { cursor } } }`,
			map[string]any{"c": cursor}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			directURL, generalURL := serve(c.p, true), serve(c.p, false)
			logs.Reset()
			mu.Lock()
			clear(stmts)
			mu.Unlock()
			dStatus, dBody := postRaw(t, directURL, c.query, c.vars)
			gStatus, gBody := postRaw(t, generalURL, c.query, c.vars)
			if dStatus != gStatus || !bytes.Equal(dBody, gBody) {
				t.Fatalf("the answers differ:\ndirect   %d %s\nexecutor %d %s", dStatus, dBody, gStatus, gBody)
			}
			if answered := strings.Contains(logs.String(), `"direct":true`); answered != c.direct {
				t.Errorf("answered directly: %v, want %v (%s)", answered, c.direct, dBody)
			}
			mu.Lock()
			if !slices.Equal(stmts[true], stmts[false]) {
				t.Errorf("statements: direct %v, executor %v", stmts[true], stmts[false])
			}
			mu.Unlock()
			if bytes.Contains(dBody, []byte(`"loop"`)) || bytes.Contains(dBody, []byte(`"fan"`)) {
				t.Errorf("a run out of scope is in the answer: %s", dBody)
			}
			forbidden := bytes.Contains(dBody, []byte(`"FORBIDDEN"`))
			if wantForbidden := !c.direct && c.p == metadata; forbidden != wantForbidden {
				t.Errorf("FORBIDDEN errors: %v, want %v: %s", forbidden, wantForbidden, dBody)
			}
		})
	}
}
