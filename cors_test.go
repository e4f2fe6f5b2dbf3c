package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/chromedp"

	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/storetest"
)

// otherOriginPage is a page that calls flowsnap from its own origin: the
// check named in the query string runs against the API named there, and
// its outcome lands in #result as JSON, with data-state "ok" or "error".
const otherOriginPage = `<!doctype html>
<meta charset="utf-8">
<title>A page on another origin</title>
<pre id="result"></pre>
<script>
const params = new URLSearchParams(location.search);
const api = params.get("api") + "/graphql";
const show = (state, detail) => {
  const el = document.getElementById("result");
  el.textContent = JSON.stringify(detail);
  el.dataset.state = state;
};
// A JSON body and a custom header: the browser sends a preflight first.
const post = (query, headers) => fetch(api, {
  method: "POST",
  headers: {"Content-Type": "application/json", ...headers},
  body: JSON.stringify({query}),
});
const checks = {
  async post() {
    const r = await post("{ position { source revision } }", {"Flowsnap-Min-Revision": "0"});
    return {status: r.status, body: await r.json()};
  },
  async refused() {
    const r = await post("{ position { nope } }");
    return {status: r.status, type: r.headers.get("Content-Type"), body: await r.json()};
  },
  async etag() {
    const url = api + "?query=" + encodeURIComponent("{ position { revision } }");
    const first = await fetch(url, {cache: "no-store"});
    const etag = first.headers.get("ETag");
    const again = await fetch(url, {cache: "no-store", headers: {"If-None-Match": etag}});
    return {status: first.status, etag, again: again.status};
  },
  async sse() {
    const r = await fetch(api, {
      method: "POST",
      headers: {"Content-Type": "application/json", "Accept": "text/event-stream"},
      body: JSON.stringify({query: "subscription { position { source revision } }"}),
    });
    const reader = r.body.getReader();
    const decoder = new TextDecoder();
    let text = "";
    while (!/^data: .*\n\n/m.test(text)) {
      const {value, done} = await reader.read();
      if (done) break;
      text += decoder.decode(value, {stream: true});
    }
    reader.cancel();
    return {status: r.status, body: JSON.parse(text.match(/^data: (.*)$/m)[1])};
  },
  ws() {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(api.replace(/^http/, "ws"), "graphql-transport-ws");
      ws.onopen = () => ws.send(JSON.stringify({type: "connection_init"}));
      ws.onerror = () => reject(new Error("the WebSocket failed"));
      ws.onclose = (e) => reject(new Error("the WebSocket closed: " + e.code));
      ws.onmessage = (e) => {
        const m = JSON.parse(e.data);
        if (m.type === "connection_ack") {
          ws.send(JSON.stringify({id: "1", type: "subscribe", payload: {query: "subscription { position { source revision } }"}}));
        } else if (m.type === "next") {
          ws.onclose = null;
          ws.close();
          resolve({body: m.payload});
        }
      };
    });
  },
};
checks[params.get("check")]().then((d) => show("ok", d), (e) => show("error", String(e)));
</script>
`

// TestCORSFromABrowserOnAnotherOrigin loads a page from one origin in
// headless Chromium and has it call flowsnap on another: a flowsnap started
// with --cors-origin for that origin (or "*") answers its preflighted POST,
// its refusals, its GET with If-None-Match, and its subscriptions over SSE
// and WebSocket; one started without the flag, or for another origin, is
// kept from the page by the browser.
func TestCORSFromABrowserOnAnotherOrigin(t *testing.T) {
	ctx, problems := browser(t)
	var mu sync.Mutex
	var blocked []string
	chromedp.ListenTarget(ctx, func(ev any) {
		if e, ok := ev.(*log.EventEntryAdded); ok && strings.Contains(e.Entry.Text, "CORS policy") {
			mu.Lock()
			blocked = append(blocked, e.Entry.Text)
			mu.Unlock()
		}
	})
	corsLog := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), blocked...)
	}

	// The page's origin differs from flowsnap's in host and port.
	pages := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(otherOriginPage))
	}))
	t.Cleanup(pages.Close)
	pageURL := strings.Replace(pages.URL, "127.0.0.1", "localhost", 1)
	origin := pageURL

	dsn := storetest.DSN(t, store.SQLite)
	storetest.OpenDSN(t, dsn, true)
	serveFor := func(origins ...string) string {
		args := []string{"--db", dsn}
		for _, o := range origins {
			args = append(args, "--cors-origin", o)
		}
		addr, _ := startServe(t, noEnv, args...)
		return "http://" + addr
	}
	allowed, anyOrigin := serveFor("http://elsewhere.example", origin), serveFor("*")
	unflagged, otherOrigin := serveFor(), serveFor("http://elsewhere.example")

	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	// check runs one of the page's checks against api and returns its
	// outcome.
	check := func(t *testing.T, api, name string) (string, map[string]any) {
		t.Helper()
		sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		var state, text string
		u := pageURL + "/?check=" + name + "&api=" + url.QueryEscape(api)
		if err := chromedp.Run(sctx,
			chromedp.Navigate(u),
			chromedp.WaitVisible(`#result[data-state]`),
			chromedp.AttributeValue(`#result`, "data-state", &state, nil),
			chromedp.Text(`#result`, &text),
		); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if state != "ok" {
			return state, map[string]any{"error": text}
		}
		var out map[string]any
		if err := json.Unmarshal([]byte(text), &out); err != nil {
			t.Fatalf("%s: %q: %v", name, text, err)
		}
		return state, out
	}
	source := regexp.MustCompile(`^[0-9a-f]{32}$`)
	position := func(t *testing.T, body any) {
		t.Helper()
		p, _ := body.(map[string]any)["data"].(map[string]any)["position"].(map[string]any)
		if s, _ := p["source"].(string); !source.MatchString(s) {
			t.Fatalf("the page read %v, want a position", body)
		}
	}

	for _, api := range []struct{ name, base string }{{"its own origin", allowed}, {"any origin", anyOrigin}} {
		t.Run("a flowsnap allowing "+api.name+" answers the page's preflighted POST", func(t *testing.T) {
			state, out := check(t, api.base, "post")
			if state != "ok" || out["status"] != 200.0 {
				t.Fatalf("%s: %v", state, out)
			}
			position(t, out["body"])
		})
		t.Run("a flowsnap allowing "+api.name+" lets the page read a refusal", func(t *testing.T) {
			state, out := check(t, api.base, "refused")
			body, _ := out["body"].(map[string]any)
			if state != "ok" || out["status"] == 200.0 || !strings.HasPrefix(fmt.Sprint(out["type"]), "application/") || body["errors"] == nil {
				t.Fatalf("%s: %v", state, out)
			}
		})
	}

	t.Run("the page reads the ETag and revalidates with If-None-Match", func(t *testing.T) {
		state, out := check(t, allowed, "etag")
		if state != "ok" || out["status"] != 200.0 || !strings.HasPrefix(fmt.Sprint(out["etag"]), `W/"`) || out["again"] != 304.0 {
			t.Fatalf("%s: %v", state, out)
		}
	})

	t.Run("the page subscribes over Server-Sent Events", func(t *testing.T) {
		state, out := check(t, allowed, "sse")
		if state != "ok" || out["status"] != 200.0 {
			t.Fatalf("%s: %v", state, out)
		}
		position(t, out["body"])
	})

	for _, api := range []struct{ name, base string }{{"its own origin", allowed}, {"any origin", anyOrigin}} {
		t.Run("the page subscribes over WebSocket to a flowsnap allowing "+api.name, func(t *testing.T) {
			state, out := check(t, api.base, "ws")
			if state != "ok" {
				t.Fatalf("%s: %v", state, out)
			}
			position(t, out["body"])
		})
	}

	if p := problems(); len(p) > 0 {
		t.Errorf("the page logged errors:\n%s", strings.Join(p, "\n"))
	}
	if b := corsLog(); len(b) > 0 {
		t.Errorf("the browser blocked an allowed call:\n%s", strings.Join(b, "\n"))
	}

	for _, api := range []struct{ name, base string }{{"started without --cors-origin", unflagged}, {"allowing another origin", otherOrigin}} {
		t.Run("a flowsnap "+api.name+" is kept from the page", func(t *testing.T) {
			before := len(corsLog())
			state, out := check(t, api.base, "post")
			if state != "error" || !strings.Contains(fmt.Sprint(out["error"]), "Failed to fetch") {
				t.Fatalf("%s: %v", state, out)
			}
			if len(corsLog()) == before {
				t.Fatal("the fetch failed, but not for the CORS policy")
			}
			state, out = check(t, api.base, "ws")
			if state != "error" {
				t.Fatalf("the WebSocket from another origin was accepted: %v", out)
			}
		})
	}

	t.Run("the preflights reached flowsnap", func(t *testing.T) {
		_, body := httpGet(t, allowed+"/metrics")
		if !regexp.MustCompile(`flowsnap_http_responses_total\{code="204",route="/graphql"\} [1-9]`).MatchString(body) {
			t.Fatalf("no preflight counted:\n%s", grepLines(body, "flowsnap_http_responses_total"))
		}
	})
}

// TestWebSocketOriginsAreRefusedCountedAndLogged opens WebSocket handshakes
// from several origins: without an Origin, from flowsnap's own and from an
// allowed one they are accepted; from another origin the handshake is
// refused 403 with a code, counted as a transport refusal, and logged once
// through the logger.
func TestWebSocketOriginsAreRefusedCountedAndLogged(t *testing.T) {
	t.Parallel()
	dsn := storetest.DSN(t, store.SQLite)
	storetest.OpenDSN(t, dsn, true)
	addr, out, _ := startServeOutput(t, noEnv, "--db", dsn, "--log-format", "json", "--cors-origin", "http://ok.example")
	handshake := func(origin string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/graphql", nil)
		req.Header.Set("Connection", "Upgrade")
		req.Header.Set("Upgrade", "websocket")
		req.Header.Set("Sec-WebSocket-Version", "13")
		req.Header.Set("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
		req.Header.Set("Sec-WebSocket-Protocol", "graphql-transport-ws")
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		if res.StatusCode == http.StatusSwitchingProtocols {
			return res.StatusCode, ""
		}
		var body struct {
			Errors []struct {
				Message    string
				Extensions struct{ Code string }
			}
		}
		if err := json.NewDecoder(res.Body).Decode(&body); err != nil || len(body.Errors) != 1 {
			t.Fatalf("%s: %d %v %+v", origin, res.StatusCode, err, body)
		}
		return res.StatusCode, body.Errors[0].Extensions.Code + ": " + body.Errors[0].Message
	}
	for _, origin := range []string{"", "http://" + addr, "http://ok.example"} {
		if status, msg := handshake(origin); status != http.StatusSwitchingProtocols {
			t.Errorf("origin %q: %d %s, want 101", origin, status, msg)
		}
	}
	status, msg := handshake("http://elsewhere.example")
	if status != http.StatusForbidden || !strings.HasPrefix(msg, "BAD_USER_INPUT: ") || !strings.Contains(msg, "--cors-origin") {
		t.Fatalf("another origin: %d %s", status, msg)
	}
	_, metrics := httpGet(t, "http://"+addr+"/metrics")
	if !strings.Contains(metrics, `flowsnap_graphql_refused_requests_total{reason="transport"} 1`) ||
		!strings.Contains(metrics, `flowsnap_http_responses_total{code="403",route="/graphql"} 1`) {
		t.Fatalf("the refusal is not counted:\n%s", grepLines(metrics, "flowsnap_"))
	}
	var refusals int
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var entry map[string]any
		if err := json.Unmarshal([]byte(line), &entry); err != nil {
			t.Fatalf("a log line is not JSON: %q", line)
		}
		if entry["msg"] == "graphql refused" {
			refusals++
			if entry["reason"] != "transport" || entry["status"] != 403.0 || entry["code"] != "BAD_USER_INPUT" {
				t.Fatalf("refusal logged as %v", entry)
			}
		}
	}
	if refusals != 1 {
		t.Fatalf("%d refusals logged, want 1:\n%s", refusals, out.String())
	}
}
