package endpoint_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/flowsnap/flowsnap/endpoint"
	"github.com/flowsnap/flowsnap/store"
)

// TestRequestErrorsFollowGraphQLOverHTTP checks the status, media type and
// body of requests that fail before execution, under each media type a
// client may accept: 200 under application/json and 400 under
// application/graphql-response+json, never a data entry, and 400 under
// both for a request that has no query at all.
func TestRequestErrorsFollowGraphQLOverHTTP(t *testing.T) {
	h := newHostileServer(t, store.SQLite, endpoint.Options{ComplexityLimit: 50})
	const (
		plain = "application/json"
		gql   = "application/graphql-response+json"
	)
	cases := []struct {
		name, method, accept, body string
		status                     int
		media, code                string
	}{
		{"a document that does not parse, accepting JSON", "POST", plain, `{"query":"{"}`, 200, plain, "BAD_USER_INPUT"},
		{"a document that does not parse, accepting graphql-response", "POST", gql, `{"query":"{"}`, 400, gql, "BAD_USER_INPUT"},
		{"an unknown field, accepting JSON", "POST", plain, `{"query":"{ nope }"}`, 200, plain, "BAD_USER_INPUT"},
		{"an unknown field, accepting graphql-response", "POST", gql, `{"query":"{ nope }"}`, 400, gql, "BAD_USER_INPUT"},
		{"a variable that does not coerce, accepting JSON", "POST", plain, `{"query":"query($id: ID!) { run(id: $id) { __typename } }","variables":{"id":null}}`, 200, plain, "BAD_USER_INPUT"},
		{"a variable that does not coerce, accepting graphql-response", "POST", gql, `{"query":"query($id: ID!) { run(id: $id) { __typename } }","variables":{"id":null}}`, 400, gql, "BAD_USER_INPUT"},
		{"a complexity refusal, accepting JSON", "POST", plain, `{"query":"{ run(id: \"parent\") { ... on Run { children { nodes { ... on Run { id } } } } } }"}`, 200, plain, "COMPLEXITY_LIMIT"},
		{"a complexity refusal, accepting graphql-response", "POST", gql, `{"query":"{ run(id: \"parent\") { ... on Run { children { nodes { ... on Run { id } } } } } }"}`, 400, gql, "COMPLEXITY_LIMIT"},
		{"a body without a query, accepting JSON", "POST", plain, `{"qeury":"{ __typename }"}`, 400, plain, "BAD_USER_INPUT"},
		{"a body without a query, accepting graphql-response", "POST", gql, `{"qeury":"{ __typename }"}`, 400, gql, "BAD_USER_INPUT"},
		{"a GET without a query", "GET", gql, "operationName=Q", 400, gql, "BAD_USER_INPUT"},
		{"a GET document that does not parse, accepting JSON", "GET", plain, "query=" + url.QueryEscape("{"), 200, plain, "BAD_USER_INPUT"},
		{"a batch, accepting graphql-response", "POST", gql, `[{"query":"{ __typename }"}]`, 400, gql, "BAD_USER_INPUT"},
		{"a wildcard Accept gets JSON", "POST", "*/*", `{"query":"{"}`, 200, plain, "BAD_USER_INPUT"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var req *http.Request
			if c.method == "GET" {
				req, _ = http.NewRequest("GET", h.url+"?"+c.body, nil)
			} else {
				req, _ = http.NewRequest("POST", h.url, strings.NewReader(c.body))
				req.Header.Set("Content-Type", "application/json")
			}
			req.Header.Set("Accept", c.accept)
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := io.ReadAll(res.Body)
			res.Body.Close()
			var body map[string]json.RawMessage
			if err := json.Unmarshal(raw, &body); err != nil {
				t.Fatalf("the body is not a JSON object: %s", raw)
			}
			var errs []struct {
				Extensions struct{ Code string }
			}
			_ = json.Unmarshal(body["errors"], &errs)
			if res.StatusCode != c.status || res.Header.Get("Content-Type") != c.media {
				t.Errorf("answered %d %s, want %d %s: %s", res.StatusCode, res.Header.Get("Content-Type"), c.status, c.media, raw)
			}
			if _, ok := body["data"]; ok {
				t.Errorf("a request error has a data entry: %s", raw)
			}
			if len(errs) != 1 || errs[0].Extensions.Code != c.code {
				t.Errorf("errors = %s, want one %s", body["errors"], c.code)
			}
		})
	}

	t.Run("an executed operation keeps its data and 200", func(t *testing.T) {
		for _, accept := range []string{plain, gql} {
			req, _ := http.NewRequest("POST", h.url, strings.NewReader(`{"query":"{ run(id: \"\") { __typename } }"}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", accept)
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode != 200 || !strings.Contains(string(raw), `"data":{"run":null}`) || !strings.Contains(string(raw), "BAD_USER_INPUT") {
				t.Errorf("under %s: %d %s", accept, res.StatusCode, raw)
			}
		}
	})
}

// TestAGETAcceptingEventStreamsIsAQuery checks a GET query sent as urql
// sends it, accepting text/event-stream among other types: it is answered
// once, like any GET, with its ETag.
func TestAGETAcceptingEventStreamsIsAQuery(t *testing.T) {
	h := newHostileServer(t, store.SQLite, endpoint.Options{})
	req, _ := http.NewRequest(http.MethodGet, h.url+"?query="+url.QueryEscape(`{ run(id: "parent") { ... on Run { id } } }`), nil)
	req.Header.Set("Accept", "application/graphql-response+json, application/graphql+json, application/json, text/event-stream, multipart/mixed")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "application/graphql-response+json" ||
		!strings.HasPrefix(res.Header.Get("ETag"), `W/"`) || !strings.Contains(string(raw), `"id":"parent"`) {
		t.Fatalf("%d %v %s", res.StatusCode, res.Header, raw)
	}
}
