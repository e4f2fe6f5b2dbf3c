package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/storetest"
)

// rawClient leaves Content-Encoding to the test, where Go's client would
// ask for gzip and decode it unseen.
var rawClient = &http.Client{Transport: &http.Transport{DisableCompression: true}}

func postGraphQL(t *testing.T, addr, encoding string, body []byte) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/graphql", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if encoding != "" {
		req.Header.Set("Accept-Encoding", encoding)
	}
	res, err := rawClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res, raw
}

func TestCompressedBatchAndMetrics(t *testing.T) {
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		dsn := storetest.DSN(t, d)
		if out, err := runCmd(t, noEnv, "seed", "--db", dsn, "--runs", "300"); err != nil {
			t.Fatalf("seed: %v\n%s", err, out)
		}
		addr, stop := startServe(t, noEnv, "--db", dsn, "--max-readers", "5")

		_, raw := postGraphQL(t, addr, "", []byte(`{"query":"{ listRuns(first: 200) { nodes { ... on Run { id } } } }"}`))
		var list struct {
			Data struct {
				ListRuns struct {
					Nodes []struct{ ID string } `json:"nodes"`
				} `json:"listRuns"`
			} `json:"data"`
		}
		if err := json.Unmarshal(raw, &list); err != nil || len(list.Data.ListRuns.Nodes) != 200 {
			t.Fatalf("listing 200 runs: %v %s", err, raw)
		}
		ids := make([]string, 0, 200)
		for _, n := range list.Data.ListRuns.Nodes {
			ids = append(ids, n.ID)
		}
		batch, _ := json.Marshal(map[string]any{
			"query":     `query($ids: [ID!]!) { runs(ids: $ids) { __typename ... on Run { id flowName status createdAt parent { __typename } } } }`,
			"variables": map[string]any{"ids": ids},
		})

		plainRes, plain := postGraphQL(t, addr, "", batch)
		if plainRes.StatusCode != 200 || plainRes.Header.Get("Content-Encoding") != "" || !bytes.Contains(plain, []byte(ids[199])) {
			t.Fatalf("uncompressed batch: %d %q %.300s", plainRes.StatusCode, plainRes.Header.Get("Content-Encoding"), plain)
		}
		// A direct answer, the document's first and once cached, says its
		// length and is not chunked.
		for range 2 {
			res, body := postGraphQL(t, addr, "", batch)
			if res.ContentLength != int64(len(plain)) || len(res.TransferEncoding) != 0 || !bytes.Equal(body, plain) {
				t.Fatalf("uncompressed batch again: Content-Length %d, Transfer-Encoding %v, %d bytes (first %d)", res.ContentLength, res.TransferEncoding, len(body), len(plain))
			}
		}
		decoders := map[string]func(io.Reader) (io.Reader, error){
			"gzip": func(r io.Reader) (io.Reader, error) { return gzip.NewReader(r) },
			"zstd": func(r io.Reader) (io.Reader, error) { return zstd.NewReader(r) },
		}
		for enc, decode := range decoders {
			res, body := postGraphQL(t, addr, enc, batch)
			if res.StatusCode != 200 || res.Header.Get("Content-Encoding") != enc || !strings.Contains(strings.Join(res.Header.Values("Vary"), ","), "Accept-Encoding") {
				t.Fatalf("%s: status %d, Content-Encoding %q, Vary %v", enc, res.StatusCode, res.Header.Get("Content-Encoding"), res.Header.Values("Vary"))
			}
			t.Logf("%s: %d bytes for %d uncompressed", enc, len(body), len(plain))
			if len(body) >= len(plain)/3 {
				t.Errorf("%s: %d bytes for %d uncompressed", enc, len(body), len(plain))
			}
			r, err := decode(bytes.NewReader(body))
			if err != nil {
				t.Fatalf("%s: %v", enc, err)
			}
			decoded, err := io.ReadAll(r)
			if err != nil {
				t.Fatalf("%s: %v", enc, err)
			}
			var a, b any
			if err := json.Unmarshal(plain, &a); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(decoded, &b); err != nil {
				t.Fatalf("%s: not JSON once decoded: %v", enc, err)
			}
			aj, _ := json.Marshal(a)
			bj, _ := json.Marshal(b)
			if !bytes.Equal(aj, bj) {
				t.Fatalf("%s: decodes to other JSON than the uncompressed answer", enc)
			}
		}

		if code, _ := httpGet(t, "http://"+addr+"/no-such-page"); code != http.StatusNotFound {
			t.Fatalf("/no-such-page: %d", code)
		}
		code, metrics := httpGet(t, "http://"+addr+"/metrics")
		if code != 200 {
			t.Fatalf("/metrics: %d", code)
		}
		for _, want := range []*regexp.Regexp{
			regexp.MustCompile(`(?m)^flowsnap_http_responses_total\{code="200",route="/graphql"\} 6$`),
			regexp.MustCompile(`(?m)^flowsnap_http_responses_total\{code="404",route="/"\} 1$`),
			regexp.MustCompile(`(?m)^flowsnap_build_info\{goversion="` + regexp.QuoteMeta(runtime.Version()) + `",revision="[^"]+",version="[^"]+"\} 1$`),
			// The subscriptions' watcher may be reading the position as
			// /metrics is scraped: at most the --max-readers of 5.
			regexp.MustCompile(`(?m)^flowsnap_readers_in_use [0-5]$`),
			regexp.MustCompile(`(?m)^flowsnap_readers_max 5$`),
			// The batch was read five times: on SQLite all but the first
			// read the 200 runs by their revisions alone; on
			// PostgreSQL they take the parents the first read from the
			// cache, which the watcher has seen unchanged since.
			regexp.MustCompile(map[store.Dialect]string{store.SQLite: `(?m)^flowsnap_run_cache_hits_total [1-9][0-9]{2,}$`,
				store.Postgres: `(?m)^flowsnap_run_cache_hits_total [1-9][0-9]*$`}[d]),
			regexp.MustCompile(`(?m)^flowsnap_run_cache_bytes \d+$`),
		} {
			if !want.MatchString(metrics) {
				t.Errorf("/metrics lacks %s", want)
			}
		}
		if t.Failed() {
			t.Logf("/metrics:\n%s", grepLines(metrics, "flowsnap_"))
		}
		if err := stop(); err != nil {
			t.Fatal(err)
		}
	})
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func TestEventStreamsAndUpgradesAreNotCompressed(t *testing.T) {
	t.Parallel()
	h := compressor()(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", r.URL.Query().Get("type"))
		_, _ = io.WriteString(w, strings.Repeat("data: {\"revision\": 1}\n\n", 200))
	}))
	for _, c := range []struct {
		ctype, upgrade, want string
	}{
		{"application/json", "", "gzip"},
		{"text/event-stream", "", ""},
		{"text/event-stream; charset=utf-8", "", ""},
		{"application/json", "websocket", ""},
	} {
		req := httptest.NewRequest(http.MethodGet, "/graphql?type="+url.QueryEscape(c.ctype), nil)
		req.Header.Set("Accept-Encoding", "gzip")
		if c.upgrade != "" {
			req.Header.Set("Upgrade", c.upgrade)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if got := rec.Header().Get("Content-Encoding"); got != c.want {
			t.Errorf("%s (Upgrade %q): Content-Encoding %q, want %q", c.ctype, c.upgrade, got, c.want)
		}
	}
}
