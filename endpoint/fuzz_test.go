package endpoint_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"runtime"
	"testing"
	"time"

	"github.com/flowsnap/flowsnap/endpoint"
	"github.com/flowsnap/flowsnap/store"
)

// FuzzQueryDocument posts arbitrary documents to the real handler over a
// small SQLite store. Whatever the document, the answer is JSON with a code
// on every error, never a 5xx or an internal error (a panic in a resolver
// becomes one), and no document costs more than a bounded time and memory.
// The seed corpus in testdata/fuzz holds the known attacks, shortened.
//
// Each input is a request to a server, about a millisecond; the fuzzer
// minimizes every new interesting input for up to a minute by default,
// printing no progress meanwhile (0 execs/sec, which looks like a stall and
// is not one): run it with -fuzzminimizetime 200x.
func FuzzQueryDocument(f *testing.F) {
	f.Add(`{ position { source revision } }`)
	f.Add(`query Q($id: ID!) { run(id: $id) { __typename ... on Run { id children(first: 2) { edges { cursor node { __typename } } } } } }`)
	f.Add(`{ ...A } fragment A on Query { ...B ...B } fragment B on Query { ...C ...C } fragment C on Query { __typename }`)
	h := newHostileServer(f, store.SQLite, endpoint.Options{Timeout: 5 * time.Second})
	f.Fuzz(func(t *testing.T, doc string) {
		body, _ := json.Marshal(map[string]any{"query": doc, "variables": map[string]any{"id": "parent"}})
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		start := time.Now()
		res, err := http.Post(h.url, "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		var r response
		err = json.NewDecoder(res.Body).Decode(&r)
		res.Body.Close()
		took := time.Since(start)
		runtime.ReadMemStats(&after)
		if err != nil {
			t.Fatalf("%d: the answer is not JSON: %v", res.StatusCode, err)
		}
		if res.StatusCode >= 500 {
			t.Fatalf("status %d: %+v", res.StatusCode, r.Errors)
		}
		for _, e := range r.Errors {
			switch code, _ := e.Extensions["code"].(string); code {
			case "":
				t.Fatalf("error %q has no code", e.Message)
			case "INTERNAL":
				t.Fatalf("internal error for %q", doc)
			}
		}
		if took > 5*time.Second {
			t.Fatalf("took %s", took)
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 256<<20 {
			t.Fatalf("allocated %d MiB", alloc>>20)
		}
	})
}
