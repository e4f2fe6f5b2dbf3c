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
    // Under application/json a request error is 200 (GraphQL over HTTP);
    // asking for application/graphql-response+json, as Apollo and the
    // dashboard do, makes it a 400 the page must still be able to read.
    const r = await post("{ position { nope } }", {"Accept": "application/graphql-response+json"});
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
			_, metrics := httpGet(t, api.base+"/metrics")
			if !strings.Contains(metrics, `flowsnap_graphql_refused_requests_total{reason="transport"} 2`) {
				t.Fatalf("the preflight and the handshake are not counted as refused:\n%s", grepLines(metrics, "refused"))
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

// TestPagesOnOtherOriginsAreRefusedCountedAndLogged sends what a browser
// page sends before calling flowsnap, a preflight and a WebSocket handshake,
// from several origins: from flowsnap's own, an allowed one, or with no
// Origin they pass; from another origin, with --cors-origin or without, each
// is refused 403 with a code, counted as a transport refusal and logged once
// through the logger.
func TestPagesOnOtherOriginsAreRefusedCountedAndLogged(t *testing.T) {
	t.Parallel()
	dsn := storetest.DSN(t, store.SQLite)
	storetest.OpenDSN(t, dsn, true)
	// send makes the request and returns its status and, for a refusal,
	// its error's code and message.
	send := func(t *testing.T, req *http.Request) (int, string) {
		t.Helper()
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		if res.StatusCode < 400 {
			return res.StatusCode, ""
		}
		var body struct {
			Errors []struct {
				Message    string
				Extensions struct{ Code string }
			}
		}
		if err := json.NewDecoder(res.Body).Decode(&body); err != nil || len(body.Errors) != 1 {
			t.Fatalf("%s %s: %d %v %+v", req.Method, req.Header.Get("Origin"), res.StatusCode, err, body)
		}
		return res.StatusCode, body.Errors[0].Extensions.Code + ": " + body.Errors[0].Message
	}
	handshake := func(addr, origin string) *http.Request {
		req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/graphql", nil)
		req.Header.Set("Connection", "Upgrade")
		req.Header.Set("Upgrade", "websocket")
		req.Header.Set("Sec-WebSocket-Version", "13")
		req.Header.Set("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
		req.Header.Set("Sec-WebSocket-Protocol", "graphql-transport-ws")
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		return req
	}
	preflight := func(addr, origin string) *http.Request {
		req, _ := http.NewRequest(http.MethodOptions, "http://"+addr+"/graphql", nil)
		req.Header.Set("Origin", origin)
		req.Header.Set("Access-Control-Request-Method", "POST")
		req.Header.Set("Access-Control-Request-Headers", "content-type")
		return req
	}
	for name, flags := range map[string][]string{"with --cors-origin": {"--cors-origin", "http://ok.example"}, "without --cors-origin": nil} {
		t.Run(name, func(t *testing.T) {
			addr, out, _ := startServeOutput(t, noEnv, append([]string{"--db", dsn, "--log-format", "json"}, flags...)...)
			allowed := []string{"", "http://" + addr}
			if flags != nil {
				allowed = append(allowed, "http://ok.example")
				if status, msg := send(t, preflight(addr, "http://ok.example")); status != http.StatusNoContent {
					t.Errorf("the allowed origin's preflight: %d %s", status, msg)
				}
			}
			for _, origin := range allowed {
				if status, msg := send(t, handshake(addr, origin)); status != http.StatusSwitchingProtocols {
					t.Errorf("a handshake from %q: %d %s, want 101", origin, status, msg)
				}
			}
			for _, req := range []*http.Request{preflight(addr, "http://elsewhere.example"), handshake(addr, "http://elsewhere.example")} {
				status, msg := send(t, req)
				if status != http.StatusForbidden || !strings.HasPrefix(msg, "BAD_USER_INPUT: ") || !strings.Contains(msg, "--cors-origin") {
					t.Fatalf("%s from another origin: %d %s", req.Method, status, msg)
				}
			}
			_, metrics := httpGet(t, "http://"+addr+"/metrics")
			if !strings.Contains(metrics, `flowsnap_graphql_refused_requests_total{reason="transport"} 2`) ||
				!strings.Contains(metrics, `flowsnap_http_responses_total{code="403",route="/graphql"} 2`) {
				t.Fatalf("the refusals are not counted:\n%s", grepLines(metrics, "flowsnap_"))
			}
			var refusals []string
			for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
				var entry map[string]any
				if err := json.Unmarshal([]byte(line), &entry); err != nil {
					t.Fatalf("a log line is not JSON: %q", line)
				}
				if entry["msg"] == "graphql refused" {
					if entry["reason"] != "transport" || entry["status"] != 403.0 || entry["code"] != "BAD_USER_INPUT" {
						t.Fatalf("refusal logged as %v", entry)
					}
					refusals = append(refusals, fmt.Sprint(entry["method"]))
				}
			}
			if len(refusals) != 2 || refusals[0] != "OPTIONS" || refusals[1] != "GET" {
				t.Fatalf("refusals logged: %v, want OPTIONS and GET:\n%s", refusals, out.String())
			}
		})
	}
}
