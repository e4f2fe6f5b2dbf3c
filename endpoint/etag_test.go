package endpoint_test

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/flowsnap/flowsnap/endpoint"
	"github.com/flowsnap/flowsnap/engine"
	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/storetest"
	"github.com/flowsnap/flowsnap/store/vocab"
)

func TestGETAnswersCarryAnETagAndNotModifiedCostsOneStatement(t *testing.T) {
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		e := fixture(t, d, endpoint.Options{})
		target := e.url + "?query=" + url.QueryEscape(`query Q($id: ID!) { run(id: $id) { ... on Run { id status } } }`) +
			"&variables=" + url.QueryEscape(`{"id":"runner"}`) + "&operationName=Q"
		get := func(inm string) (*http.Response, string) {
			t.Helper()
			req, _ := http.NewRequest(http.MethodGet, target, nil)
			req.Header.Set("Accept", "application/graphql-response+json")
			if inm != "" {
				req.Header.Set("If-None-Match", inm)
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			body, _ := io.ReadAll(res.Body)
			return res, string(body)
		}
		statements := func() int {
			e.mu.Lock()
			defer e.mu.Unlock()
			return e.stmts[len(e.stmts)-1]
		}

		first, body := get("")
		tag := first.Header.Get("ETag")
		if first.StatusCode != 200 || !strings.HasPrefix(tag, `W/"`) || !strings.Contains(body, "RUNNING") {
			t.Fatalf("first GET: %d ETag %q body %s", first.StatusCode, tag, body)
		}
		again, _ := get("")
		if again.Header.Get("ETag") != tag {
			t.Fatalf("the same GET at the same position got ETag %q, then %q", tag, again.Header.Get("ETag"))
		}
		other, _ := http.Get(strings.Replace(target, "runner", "waiter", 1))
		other.Body.Close()
		if ot := other.Header.Get("ETag"); ot == "" || ot == tag {
			t.Fatalf("another request's ETag %q, this one's %q", ot, tag)
		}

		ran := len(e.stmts)
		cached, body := get(tag)
		if cached.StatusCode != http.StatusNotModified || body != "" || cached.Header.Get("ETag") != tag {
			t.Fatalf("If-None-Match: %d ETag %q body %q", cached.StatusCode, cached.Header.Get("ETag"), body)
		}
		if len(e.stmts) != ran+1 || statements() != 1 {
			t.Fatalf("the 304 ran %d reads, the last with %d statements; want one read of one statement", len(e.stmts)-ran, statements())
		}
		if r, _ := get(`W/"other", ` + tag); r.StatusCode != http.StatusNotModified {
			t.Fatalf("a list holding the tag: %d", r.StatusCode)
		}
		if r, _ := get(`W/"other"`); r.StatusCode != 200 {
			t.Fatalf("a tag that does not match: %d", r.StatusCode)
		}

		w := engine.NewWriter(e.db, func() int64 { return createdAt + 1 })
		must(t, w.Start(context.Background(), "fan-000", vocab.Owner{HostID: "host-a", PID: 4242, Nonce: "nonce-a"}))
		moved, body := get(tag)
		if moved.StatusCode != 200 || !strings.Contains(body, "RUNNING") {
			t.Fatalf("after a write: %d %s", moved.StatusCode, body)
		}
		if nt := moved.Header.Get("ETag"); nt == "" || nt == tag {
			t.Fatalf("after a write the ETag is %q, before %q", nt, tag)
		}
	})
}
