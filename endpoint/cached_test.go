package endpoint_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/flowsnap/flowsnap/endpoint"
	"github.com/flowsnap/flowsnap/store/storetest"
)

// TestCachedQueriesAnswerAsTheFirstTime sends requests whose document the
// server has cached (answerCached answers those itself) to a server that
// has, and the same requests to a server that has not: wrong and missing
// variables, another operation name, a cost over the limit, minimum
// revisions in the extensions and the header, a persisted query, and good
// ones. Both must answer with the same status, media type and bytes.
func TestCachedQueriesAnswerAsTheFirstTime(t *testing.T) {
	const (
		children = `query Kids($id: ID!, $n: Int) { run(id: $id) { ... on Run { id children(first: $n) { edges { cursor } } } } }`
		two      = `query A { run(id: "waiter") { ... on Run { id } } } query B { run(id: "runner") { ... on Run { status } } }`
	)
	sum := sha256.Sum256([]byte(children))
	cases := []struct {
		name, query string
		body        map[string]any // beside the query
		header      map[string]string
		code        string // an error code the answer must carry, if any
	}{
		{name: "good variables", query: children, body: map[string]any{"variables": map[string]any{"id": "parent", "n": 3}}},
		{name: "a variable of the wrong type", query: children, body: map[string]any{"variables": map[string]any{"id": "parent", "n": "three"}}, code: "BAD_USER_INPUT"},
		{name: "a required variable missing", query: children, body: map[string]any{"variables": map[string]any{"n": 3}}, code: "BAD_USER_INPUT"},
		{name: "a cost over the limit", query: children, body: map[string]any{"variables": map[string]any{"id": "parent", "n": 200}}, code: "COMPLEXITY_LIMIT"},
		{name: "an operation the document lacks", query: two, body: map[string]any{"operationName": "C"}},
		{name: "the second operation", query: two, body: map[string]any{"operationName": "B"}},
		{name: "no operation name for two", query: two},
		{name: "a minimum revision beyond the store", query: children,
			body: map[string]any{"variables": map[string]any{"id": "parent"}, "extensions": map[string]any{"minRevision": 1 << 40}}, code: "SOURCE_CHANGED"},
		{name: "a minimum revision met", query: children,
			body: map[string]any{"variables": map[string]any{"id": "parent"}, "extensions": map[string]any{"minRevision": 1}}},
		{name: "a malformed minimum revision header", query: children, body: map[string]any{"variables": map[string]any{"id": "parent"}},
			header: map[string]string{endpoint.MinRevisionHeader: "soon"}, code: "BAD_USER_INPUT"},
		{name: "a persisted query sent whole", query: children,
			body: map[string]any{"variables": map[string]any{"id": "parent"}, "extensions": map[string]any{"persistedQuery": map[string]any{"version": 1, "sha256Hash": hex.EncodeToString(sum[:])}}}},
		{name: "a persisted query whose hash is wrong", query: children,
			body: map[string]any{"variables": map[string]any{"id": "parent"}, "extensions": map[string]any{"persistedQuery": map[string]any{"version": 1, "sha256Hash": strings.Repeat("0", 64)}}}},
		{name: "graphql-response+json", query: children, body: map[string]any{"variables": map[string]any{"id": "parent", "n": "three"}},
			header: map[string]string{"Accept": "application/graphql-response+json"}, code: "BAD_USER_INPUT"},
	}
	for _, d := range storetest.Dialects {
		t.Run(string(d), func(t *testing.T) {
			logs := &syncBuffer{}
			opts := endpoint.Options{ComplexityLimit: 300, Logger: slog.New(slog.NewJSONHandler(logs, nil))}
			e := fixture(t, d, opts)
			warm := e.url
			for _, q := range []string{children, two} {
				// Cached by an answer without errors.
				send(t, warm, q, map[string]any{"variables": map[string]any{"id": "parent", "n": 1}, "operationName": map[string]string{two: "A"}[q]}, nil)
			}
			cached := false
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					cold := httptest.NewServer(endpoint.NewHandler(e.reader, opts))
					defer cold.Close()
					logs.Reset()
					defer func() { cached = cached || strings.Contains(logs.String(), `"cached":true`) }()
					ws, wm, wb := send(t, warm, c.query, c.body, c.header)
					cs, cm, cb := send(t, cold.URL, c.query, c.body, c.header)
					if ws != cs || wm != cm || !bytes.Equal(wb, cb) {
						t.Fatalf("cached:     %d %s %s\nnot cached: %d %s %s", ws, wm, wb, cs, cm, cb)
					}
					if c.code != "" && !bytes.Contains(wb, []byte(`"code":"`+c.code+`"`)) {
						t.Errorf("no %s in %s", c.code, wb)
					}
				})
			}
			if !cached {
				t.Error("no query was answered from the cache")
			}
		})
	}
}

// send posts query with the other members of body and the headers, and
// returns the status, media type and body of the answer.
func send(t *testing.T, url, query string, body map[string]any, header map[string]string) (int, string, []byte) {
	t.Helper()
	req := map[string]any{"query": query}
	for k, v := range body {
		if v != "" {
			req[k] = v
		}
	}
	raw, _ := json.Marshal(req)
	r, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(raw))
	r.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		r.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	out, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, res.Header.Get("Content-Type"), out
}
