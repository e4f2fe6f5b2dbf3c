package endpoint_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flowsnap/flowsnap/endpoint"
	"github.com/flowsnap/flowsnap/engine"
	"github.com/flowsnap/flowsnap/live"
	"github.com/flowsnap/flowsnap/snapshot"
	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/storetest"
	"github.com/flowsnap/flowsnap/store/vocab"
)

// oddID is a run id with every character a JSON writer treats specially:
// quotes, backslashes, control characters, HTML's, line separators and
// multi-byte text.
const oddID = "odd \"quoted\" \\ back\tslash\x01\x1f <b>&amp;</b> \u2028\u2029 é漢"

// directCase is one operation sent to both servers.
type directCase struct {
	name   string
	query  string
	vars   map[string]any
	direct bool // whether the direct answer is to write it
	alone  bool // whether its one statement is to run alone
	// cached says whether, sent a second time, the endpoint answers it
	// from the query cache itself (answerCached).
	cached bool
	// code, when set, is an error code the answer must carry.
	code string
}

// TestDirectAnswersAsTheExecutor sends each operation to a server that
// answers directly where it can and to one that always leaves it to
// gqlgen's executor, over one store that does not change, and requires
// the same bytes, the same status and the same statement count; and that
// the operations the direct answer knows were indeed answered directly,
// those that read runs' rows alone in one statement run alone.
func TestDirectAnswersAsTheExecutor(t *testing.T) {
	for _, d := range storetest.Dialects {
		t.Run(string(d), func(t *testing.T) { directAnswersAsTheExecutor(t, d) })
	}
}

func directAnswersAsTheExecutor(t *testing.T, d store.Dialect) {
	logs := &syncBuffer{}
	e := fixture(t, d, endpoint.Options{Logger: slog.New(slog.NewJSONHandler(logs, nil))})
	// The cases read the same runs twice, once each way: without the run
	// cache both reads run the same statements (its own counts are
	// snapshot's TestRunCache).
	e.reader.SetRunCache(0)
	ctx := context.Background()
	w := engine.NewWriter(e.db, func() int64 { return createdAt })
	must(t, w.CreateRun(ctx, engine.NewRun{ID: oddID, FlowName: "odd",
		State: json.RawMessage("{ \"flowName\" : \"odd\",\n  \"note\": \"<b>&amp;</b> \\u2028 \\\"q\\\"\",\t\"n\": [1, 2.50, 3e2] }")}))
	must(t, w.Start(ctx, oddID, ownerOdd))
	must(t, w.CreateRun(ctx, engine.NewRun{ID: oddID + " waits", FlowName: "odd"}))
	must(t, w.Start(ctx, oddID+" waits", ownerOdd))
	must(t, w.CreateRun(ctx, engine.NewRun{ID: oddID + " claimed", FlowName: "odd"}))
	must(t, w.Claim(ctx, oddID+" claimed", ownerOdd))
	must(t, w.Wait(ctx, oddID+" waits", engine.Waiting{Reason: "a \"reason\" <&>\n\u2028", Request: json.RawMessage(" [ \"<x>\" , {\"y\" : null} ] ")}))

	for _, id := range []string{"done-1", "done-2"} {
		must(t, w.CreateRun(ctx, engine.NewRun{ID: id, FlowName: "done"}))
		must(t, w.Start(ctx, id, ownerOdd))
		must(t, w.Complete(ctx, id, json.RawMessage(`{"ok":true}`)))
	}

	var stmts []int
	var mu sync.Mutex
	general := httptest.NewServer(endpoint.NewHandler(e.reader, endpoint.Options{NoDirect: true, OnOperation: func(rd *snapshot.Read) {
		mu.Lock()
		stmts = append(stmts, rd.Statements())
		mu.Unlock()
	}}))
	t.Cleanup(general.Close)

	first := e.ok(`{ run(id: "parent") { ... on Run { children(first: 3) { pageInfo { endCursor } } } } }`, nil)
	after := get(first.Data, "run", "children", "pageInfo", "endCursor").(string)
	writeDirectJournal(t, e.db, true)
	steps := e.ok(`{ a: run(id: "j-all") { ... on Run { steps(first: 2) { pageInfo { endCursor } } } }
		b: run(id: "broken") { ... on Run { steps(first: 2) { pageInfo { endCursor } } } } }`, nil)
	list := e.ok(`{ listRuns(filter: {flowName: "leaf"}, first: 3) { pageInfo { endCursor } } position { source revision } }`, nil)
	listAfter := get(list.Data, "listRuns", "pageInfo", "endCursor").(string)
	source := get(list.Data, "position", "source").(string)
	revision := int64(get(list.Data, "position", "revision").(float64))
	cases := append(directCases(after), directJournalCases(get(steps.Data, "a", "steps", "pageInfo", "endCursor").(string),
		get(steps.Data, "b", "steps", "pageInfo", "endCursor").(string))...)
	cases = append(cases, directListCases(listAfter, source, revision)...)

	sent := map[string]bool{}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// Sent a second time, a valid document is in the query cache,
			// and the endpoint answers it itself (answerCached): the same
			// bytes and statements again, whichever writes the data.
			var firstBody []byte
			for round, time := range []string{"the first time", "from the query cache"} {
				logs.Reset()
				e.mu.Lock()
				e.stmts = nil
				e.mu.Unlock()
				mu.Lock()
				stmts = nil
				mu.Unlock()

				dStatus, dBody := postRaw(t, e.url, c.query, c.vars)
				gStatus, gBody := postRaw(t, general.URL, c.query, c.vars)
				if dStatus != gStatus || !bytes.Equal(dBody, gBody) {
					t.Fatalf("%s, the answers differ:\ndirect   %d %s\nexecutor %d %s", time, dStatus, dBody, gStatus, gBody)
				}
				if round == 0 {
					firstBody = dBody
				} else if !bytes.Equal(dBody, firstBody) {
					t.Fatalf("the answer from the query cache differs:\n%s\n%s", dBody, firstBody)
				}
				e.mu.Lock()
				mu.Lock()
				if !slices.Equal(e.stmts, stmts) {
					t.Errorf("%s, statements: direct %v, executor %v", time, e.stmts, stmts)
				}
				mu.Unlock()
				e.mu.Unlock()
				log := logs.String()
				if answered := strings.Contains(log, `"direct":true`); answered != c.direct {
					t.Errorf("%s, answered directly: %v, want %v (%s)", time, answered, c.direct, dBody)
				}
				if alone := strings.Contains(log, `"alone":true`); alone != c.alone {
					t.Errorf("%s, ran alone: %v, want %v", time, alone, c.alone)
				}
				if c.code != "" && !bytes.Contains(dBody, []byte(`"code":"`+c.code+`"`)) {
					t.Errorf("%s, no %s error: %s", time, c.code, dBody)
				}
				if c.direct && bytes.Contains(dBody, []byte(`"errors"`)) {
					t.Errorf("%s, a direct answer with errors: %s", time, dBody)
				}
				want := c.cached && (round == 1 || sent[c.query])
				if cached := strings.Contains(log, `"cached":true`); cached != want {
					t.Errorf("%s, answered by the endpoint from its cache: %v, want %v", time, cached, want)
				}
			}
			sent[c.query] = true
		})
	}
}

var ownerOdd = vocab.Owner{HostID: "host \"odd\" <&>", PID: 77, Nonce: "nonce\n\u2028"}

func directCases(after string) []directCase {
	runFields := `__typename id revision status flowName state createdAt startedAt finishedAt heartbeatAt
		owner { __typename hostId pid nonce } parentRunId executionParentId lineageId roundOrdinal
		waiting { __typename kind reason wakeAt tokenDigest request }
		claim { __typename owner { hostId pid nonce } claimedAt }
		cancellation { __typename requestedAt acknowledgement { __typename observedAt owner { __typename hostId pid nonce } } }`
	// The parent is read in a statement of its own, after its child.
	parent := `parent { __typename ... on Run { id status parent { ... on Run { id } } } ... on MissingRun { id deleted } }`
	page := `{ __typename edges { __typename cursor ordinal node { __typename ... on Run { id status } ... on MissingRun { id } } }
		nodes { ... on Run { id flowName } }
		pageInfo { __typename hasNextPage hasPreviousPage startCursor endCursor } }`
	ids := []any{"waiter", "runner", "cancelled", "gone", "never", "waiter", "round-3", "child-007", oddID, oddID + " waits", oddID + " claimed", "parent"}
	return []directCase{
		{name: "every field of a run but its parent's", cached: true, direct: true, alone: true,
			query: `query($id: ID!) { run(id: $id) { __typename ... on Run { ` + runFields + ` } ... on MissingRun { id deleted deletedAtRevision } } }`,
			vars:  map[string]any{"id": "waiter"}},
		{name: "every field of a run and its parent", cached: true, direct: true,
			query: `query($ids: [ID!]!) { runs(ids: $ids) { __typename ... on Run { ` + runFields + parent + ` } ... on MissingRun { id } } }`,
			vars:  map[string]any{"ids": ids}},
		{name: "a run with odd text", cached: true, direct: true, alone: true,
			query: `query($id: ID!) { run(id: $id) { ... on Run { ` + runFields + ` } } }`,
			vars:  map[string]any{"id": oddID}},
		{name: "a waiting run with odd text", cached: true, direct: true, alone: true,
			query: `query($id: ID!) { run(id: $id) { ... on Run { ` + runFields + ` } } }`,
			vars:  map[string]any{"id": oddID + " waits"}},
		{name: "a batch with missing, deleted and repeated ids", cached: true, direct: true, alone: true,
			query: `query($ids: [ID!]!) { runs(ids: $ids) { __typename ... on Run { ` + runFields + ` } ... on MissingRun { __typename id deleted deletedAtRevision } } }`,
			vars:  map[string]any{"ids": ids}},
		{name: "aliases, fragments and directives", cached: true, alone: true, direct: true,
			query: `query($id: ID!, $yes: Boolean!, $no: Boolean!) { a: run(id: $id) { ...R } b: node(id: "round-2") { id ...R }
				kind: __typename c: runs(ids: ["runner"]) { ... on Run { x: id, id, status @include(if: $yes), flowName @skip(if: $yes), createdAt @include(if: $no) } } }
				fragment R on Run { theId: id status ... on Run { lineageId roundOrdinal } rounds(first: 2) { edges { o: ordinal } } }`,
			vars: map[string]any{"id": "round-1", "yes": true, "no": false}},
		{name: "children and rounds pages", cached: true, alone: true, direct: true,
			query: `query($after: String) { run(id: "parent") { ... on Run { children(first: 4, after: $after) ` + page + ` rounds ` + page + ` } }
				r: run(id: "round-3") { ... on Run { rounds(first: 2) ` + page + ` children ` + page + ` } } }`,
			vars: map[string]any{"after": after}},
		// The parents of a hundred pages' runs (rounds' default page) are
		// read after the pages, in a transaction, those the rows name and
		// nobody read; those of a few, in the pages' statement, alone.
		{name: "a run's parent and its pages' runs' parents", cached: true, direct: true,
			query: `query($after: String) { run(id: "child-001") { ... on Run { id parent { ... on Run { id status } }
				children(first: 4) { edges { node { ... on Run { id parent { __typename ... on Run { id } } } } } }
				rounds { nodes { ... on Run { parent { ... on Run { flowName } } } } } } }
				p: run(id: "parent") { ... on Run { children(first: 3, after: $after) { edges { node { ... on Run { id parent { ... on Run { id } ... on MissingRun { deleted } } } } } } } } }`,
			vars: map[string]any{"after": after}},
		{name: "the parents of a page's runs only", cached: true, alone: true, direct: true,
			query: `{ run(id: "parent") { ... on Run { id children(first: 5) { nodes { ... on Run { id parent { ... on Run { id } } } } } } } }`},
		{name: "the default page and an empty cursor", cached: true, alone: true, direct: true,
			query: `{ run(id: "parent") { ... on Run { children(after: "") { edges { cursor node { ... on Run { id } } } } } } }`},
		{name: "a batch of a hundred pages' parents", cached: true, alone: true, direct: true,
			query: `query($ids: [ID!]!) { runs(ids: $ids) { ... on Run { id children(first: 2) { edges { node { ... on Run { id flowName } } } } } } }`,
			vars:  map[string]any{"ids": fanIDs()}},
		// What the direct answer leaves to the executor.
		{name: "cancellation and claim", cached: true, alone: true, direct: true,
			query: `{ run(id: "cancelled") { ... on Run { id cancellation { requestedAt acknowledgement { observedAt } } claim { claimedAt } } } }`},
		// A run's parent is read in the statement of the run, alone.
		{name: "the parent field", cached: true, direct: true, alone: true,
			query: `{ run(id: "child-001") { ... on Run { id parent { ... on Run { id } } } } }`},
		{name: "a batch's parents", cached: true, direct: true, alone: true,
			query: `query($ids: [ID!]!) { runs(ids: $ids) { ... on Run { id parent { __typename ... on Run { id flowName } ... on MissingRun { id } } } } }`,
			vars:  map[string]any{"ids": ids}},
		{name: "a run without a journal", cached: true, direct: true,
			query: `{ run(id: "waiter") { ... on Run { id steps(first: 1) { pageInfo { hasNextPage } } currentStep { id } } } }`},
		{name: "the position", cached: true, direct: true, query: `{ position { revision } run(id: "waiter") { ... on Run { id } } }`},
		{name: "an empty batch", cached: true, query: `{ runs(ids: []) { ... on Run { id } } }`},
		{name: "a malformed id in a batch",
			query: `query($ids: [ID!]!) { runs(ids: $ids) { ... on Run { id } } }`, vars: map[string]any{"ids": []any{"waiter", ""}}},
		{name: "a malformed id", query: `{ run(id: "") { ... on Run { id } } }`},
		{name: "a bad cursor", query: `{ run(id: "parent") { ... on Run { children(after: "nope") { edges { cursor } } } } }`},
		{name: "a page too large", query: `{ run(id: "parent") { ... on Run { children(first: 0) { edges { cursor } } } } }`},
		{name: "deferred fields", cached: true, alone: true, query: `{ run(id: "waiter") { ... on Run { id ... @defer { status } } } }`},
		{name: "introspection", cached: true, query: `{ __schema { queryType { name } } }`},
		{name: "a named operation of two", query: `query A { run(id: "waiter") { ... on Run { id } } } query B { run(id: "runner") { ... on Run { id } } }`,
			vars: nil},
	}
}

func fanIDs() []any {
	out := make([]any, fanRuns)
	for i := range out {
		out[i] = "fan-" + string(rune('0'+i/100)) + string(rune('0'+i/10%10)) + string(rune('0'+i%10))
	}
	return out
}

// postRaw posts a query and returns the status and the body unchanged.
func postRaw(t *testing.T, url, query string, vars map[string]any) (int, []byte) {
	t.Helper()
	status, _, body := send(t, url, query, map[string]any{"variables": vars}, nil)
	return status, body
}

// TestDirectAnswersOverStreams sends a query the direct answer knows over
// a WebSocket and over an event stream, where its response is no HTTP body
// of its own: each must carry the run, not the stand-in a transport's body
// is swapped for.
func TestDirectAnswersOverStreams(t *testing.T) {
	e := liveFixture(t, store.SQLite, live.Options{}, endpoint.Options{}, "streamed")
	query := `query($id: ID!) { run(id: $id) { ... on Run { id flowName } } }`
	want := `{"run":{"id":"streamed","flowName":"live"}}`
	c := dialWS(t, e.url)
	events, done := c.subscribe("1", query, map[string]any{"id": "streamed"})
	select {
	case ev := <-events:
		if got := string(ev.Data["run"]); `{"run":`+got+`}` != want {
			t.Errorf("over a WebSocket: %s, want %s", got, want)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no answer over the WebSocket")
	}
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the query over the WebSocket did not complete")
	}
	s := subscribeSSE(t, e.url, query, map[string]any{"id": "streamed"})
	select {
	case ev := <-s.events:
		if got := string(ev.Data["run"]); `{"run":`+got+`}` != want {
			t.Errorf("over an event stream: %s, want %s", got, want)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no answer over the event stream")
	}
	if !strings.Contains(e.logs.String(), "direct=true") {
		t.Errorf("the queries were not answered directly:\n%s", e.logs.String())
	}
}
