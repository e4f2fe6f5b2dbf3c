package endpoint_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/flowsnap/flowsnap/endpoint"
	"github.com/flowsnap/flowsnap/engine"
	"github.com/flowsnap/flowsnap/snapshot"
	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/storetest"
)

// costOf posts query to url and returns extensions.cost.requested (of the
// answer, or of its refusal) and the first error's code.
func costOf(t *testing.T, url, query string) (int, string) {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"query": query})
	res, err := http.Post(url, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var body struct {
		Errors []struct {
			Extensions map[string]any `json:"extensions"`
		} `json:"errors"`
		Extensions map[string]any `json:"extensions"`
	}
	if err := json.NewDecoder(res.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	cost, _ := body.Extensions["cost"].(map[string]any)
	code := ""
	if len(body.Errors) > 0 {
		code, _ = body.Errors[0].Extensions["code"].(string)
		if c, ok := body.Errors[0].Extensions["cost"].(map[string]any); ok {
			cost = c
		}
	}
	n, _ := cost["requested"].(float64)
	return int(n), code
}

func TestAListOrCountCostsTheRowsItsIndexWillWalk(t *testing.T) {
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		dsn := storetest.DSN(t, d)
		db := storetest.OpenDSN(t, dsn, true)
		ctx := context.Background()
		if _, err := engine.Seed(ctx, db, engine.SeedOptions{Runs: 2000, Seed: 5}); err != nil {
			t.Fatal(err)
		}
		reader := snapshot.NewReader(storetest.OpenReader(t, dsn))
		if err := reader.RefreshRunEstimate(ctx); err != nil {
			t.Fatal(err)
		}
		runs := reader.RunEstimate()
		if runs < 1900 {
			t.Fatalf("the store's runs were counted as %d", runs)
		}
		srv := httptest.NewServer(endpoint.NewHandler(reader, endpoint.Options{ComplexityLimit: 1000}))
		t.Cleanup(srv.Close)
		url := srv.URL + "/graphql"

		// A filter its index serves costs its page.
		served, code := costOf(t, url, `{ listRuns(filter: {status: [COMPLETED]}, first: 1) { edges { cursor } } }`)
		if code != "" || served > 10 {
			t.Fatalf("a served list costs %d (%s), want its page's few", served, code)
		}
		// One its index cannot serve pays for the range it walks: the
		// store's runs, a hundred entries costing what one run does.
		unserved, code := costOf(t, url, `{ listRuns(filter: {status: [COMPLETED], cancelRequested: true}, first: 1) { edges { cursor } } }`)
		if code != "" || int64(unserved) < runs/snapshot.EntriesPerRun {
			t.Fatalf("a list its index cannot serve costs %d (%s); the store holds %d runs", unserved, code, runs)
		}
		// Fifty of them are over a limit that fifty served ones are under.
		aliases := func(filter string) string {
			var b strings.Builder
			b.WriteString("{ ")
			for i := range 50 {
				fmt.Fprintf(&b, "a%d: listRuns(filter: %s, first: 1) { edges { cursor } } ", i, filter)
			}
			return b.String() + "}"
		}
		if _, code := costOf(t, url, aliases(`{status: [COMPLETED]}`)); code != "" {
			t.Fatalf("fifty served lists: %s", code)
		}
		if _, code := costOf(t, url, aliases(`{status: [COMPLETED], cancelRequested: true}`)); code != "COMPLEXITY_LIMIT" {
			t.Fatalf("fifty lists their index cannot serve: %q, want COMPLEXITY_LIMIT", code)
		}
		// A count pays per branch.
		one, _ := costOf(t, url, `{ countRuns(filter: {status: [COMPLETED]}, upTo: 1000) { count } }`)
		four, _ := costOf(t, url, `{ countRuns(filter: {status: [COMPLETED, FAILED], waitingKind: [TIMER, SIGNAL]}, upTo: 1000) { count } }`)
		if four < 4*(one-1) {
			t.Fatalf("a count of four branches costs %d, one of one branch %d", four, one)
		}
	})
}

func TestACursorOfAnotherStoreIsRefusedAsSuch(t *testing.T) {
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		ctx := context.Background()
		open := func(runs int) *snapshot.Reader {
			dsn := storetest.DSN(t, d)
			db := storetest.OpenDSN(t, dsn, true)
			if _, err := engine.Seed(ctx, db, engine.SeedOptions{Runs: runs, Seed: 3}); err != nil {
				t.Fatal(err)
			}
			return snapshot.NewReader(storetest.OpenReader(t, dsn))
		}
		// The other store is further on: its cursors carry a revision this
		// store has not reached.
		other, this := open(60), open(5)
		page, err := other.ListRuns(ctx, snapshot.ListRequest{First: ptr(1)})
		if err != nil || page.PageInfo.EndCursor == nil {
			t.Fatalf("a page of the other store: %v", err)
		}
		srv := httptest.NewServer(endpoint.NewHandler(this, endpoint.Options{}))
		t.Cleanup(srv.Close)
		if _, code := costOf(t, srv.URL+"/graphql", `{ position { revision } }`); code != "" {
			t.Fatalf("position: %s", code)
		}
		b, _ := json.Marshal(map[string]any{"query": `query($after: String) { listRuns(first: 1, after: $after) { edges { cursor } } }`, "variables": map[string]any{"after": *page.PageInfo.EndCursor}})
		res, err := http.Post(srv.URL+"/graphql", "application/json", bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var body struct {
			Errors []struct {
				Message    string         `json:"message"`
				Extensions map[string]any `json:"extensions"`
			} `json:"errors"`
		}
		if err := json.NewDecoder(res.Body).Decode(&body); err != nil {
			t.Fatal(err)
		}
		if len(body.Errors) == 0 || body.Errors[0].Extensions["code"] != "BAD_CURSOR" || !strings.Contains(body.Errors[0].Message, "another store") {
			t.Fatalf("a cursor of another store: %+v, want BAD_CURSOR saying another store", body.Errors)
		}
	})
}

func ptr[T any](v T) *T { return &v }
