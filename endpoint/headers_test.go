package endpoint_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/flowsnap/flowsnap/endpoint"
	"github.com/flowsnap/flowsnap/snapshot"
	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/storetest"
)

func TestAnswersVaryByAcceptAndGETAnswersAreRevalidated(t *testing.T) {
	dsn := storetest.DSN(t, store.SQLite)
	storetest.OpenDSN(t, dsn, true)
	srv := httptest.NewServer(endpoint.NewHandler(snapshot.NewReader(storetest.OpenReader(t, dsn)), endpoint.Options{}))
	t.Cleanup(srv.Close)
	query := `{ position { revision } }`
	for _, c := range []struct {
		method, accept string
		cacheControl   string
	}{
		{http.MethodGet, "application/json", "no-cache"},
		{http.MethodGet, "application/graphql-response+json", "no-cache"},
		{http.MethodGet, "text/html", "no-cache"},
		{http.MethodPost, "application/json", ""},
	} {
		var req *http.Request
		if c.method == http.MethodGet {
			req, _ = http.NewRequest(http.MethodGet, srv.URL+"/graphql?query="+url.QueryEscape(query), nil)
		} else {
			req, _ = http.NewRequest(http.MethodPost, srv.URL+"/graphql", strings.NewReader(`{"query":"{ position { revision } }"}`))
			req.Header.Set("Content-Type", "application/json")
		}
		req.Header.Set("Accept", c.accept)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if vary := strings.Join(res.Header.Values("Vary"), ","); !strings.Contains(vary, "Accept") {
			t.Errorf("%s Accept %s (status %d): Vary %q lacks Accept", c.method, c.accept, res.StatusCode, vary)
		}
		if got := res.Header.Get("Cache-Control"); got != c.cacheControl {
			t.Errorf("%s Accept %s (status %d): Cache-Control %q, want %q", c.method, c.accept, res.StatusCode, got, c.cacheControl)
		}
	}
}
