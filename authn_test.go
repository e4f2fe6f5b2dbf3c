package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"

	"github.com/flowsnap/flowsnap/opscli"
	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/storetest"
)

func TestServeRefusesANetworkWithoutAuthentication(t *testing.T) {
	t.Parallel()
	dsn := storetest.DSN(t, store.SQLite)
	storetest.OpenDSN(t, dsn, true)
	for _, c := range []struct {
		name string
		args []string
		want []string
	}{
		{"serve on every interface", []string{"serve", "--db", dsn, "--addr", "0.0.0.0:0"}, []string{"--auth", "--allow-unauthenticated", "0.0.0.0:0"}},
		{"serve on a host name", []string{"serve", "--db", dsn, "--addr", "flowsnap.internal:8080"}, []string{"--auth", "--allow-unauthenticated"}},
		{"serve on an empty host", []string{"serve", "--db", dsn, "--addr", ":8080"}, []string{"--auth", "--allow-unauthenticated"}},
		{"the demo on every interface", []string{"--data", t.TempDir(), "--addr", "[::]:0"}, []string{"--auth", "--allow-unauthenticated"}},
		{"tokens without a file", []string{"serve", "--db", dsn, "--auth", "tokens"}, []string{"--tokens-file"}},
		{"a tokens file without tokens mode", []string{"serve", "--db", dsn, "--tokens-file", "x.json"}, []string{"--auth tokens"}},
		{"jwt without an audience", []string{"serve", "--db", dsn, "--auth", "jwt", "--jwt-jwks-url", "https://id.example.com/jwks", "--jwt-issuer", "https://id.example.com/"}, []string{"--jwt-audience"}},
		{"a certificate without its key", []string{"serve", "--db", dsn, "--tls-cert", "c.pem"}, []string{"--tls-key"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, err := runCmd(t, noEnv, c.args...)
			if err == nil {
				t.Fatalf("started:\n%s", out)
			}
			if code := opscli.ExitCode(err); code != 2 {
				t.Errorf("exit code %d, want 2", code)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("message %q does not name %s", err, w)
				}
			}
		})
	}
	t.Run("unless --allow-unauthenticated", func(t *testing.T) {
		addr, _ := startServe(t, noEnv, "--db", dsn, "--addr", "0.0.0.0:0", "--allow-unauthenticated")
		_, port, _ := strings.Cut(addr[strings.LastIndexByte(addr, ']')+1:], ":")
		if status, _ := httpGet(t, "http://127.0.0.1:"+port+"/healthz"); status != http.StatusOK {
			t.Errorf("/healthz: %d", status)
		}
	})
	for addr, want := range map[string]bool{
		"127.0.0.1:8080": true, "[::1]:8080": true, "localhost:8080": true, "127.0.0.2:0": true,
		"0.0.0.0:8080": false, "[::]:8080": false, ":8080": false, "10.0.0.5:8080": false, "flowsnap.internal:8080": false, "nonsense": false,
	} {
		if loopback(addr) != want {
			t.Errorf("loopback(%q) = %v", addr, !want)
		}
	}
}

// tokenFile writes a tokens file of name → token (flows "*", payloads)
// and returns its path.
func tokenFile(t *testing.T, tokens map[string]string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tokens.json")
	writeTokenFile(t, path, tokens)
	return path
}

func writeTokenFile(t *testing.T, path string, tokens map[string]string) {
	t.Helper()
	var entries []string
	for name, token := range tokens {
		sum := sha256.Sum256([]byte(token))
		entries = append(entries, fmt.Sprintf(`{"name": %q, "sha256": %q, "flows": ["*"], "payloads": true}`, name, hex.EncodeToString(sum[:])))
	}
	if err := os.WriteFile(path, []byte("["+strings.Join(entries, ",")+"]"), 0o600); err != nil {
		t.Fatal(err)
	}
}

// authPost posts a query with an Authorization header (none when "") and
// returns the status, the WWW-Authenticate header and the first error's
// code ("" when none).
func authPost(t *testing.T, url, authorization, query string) (status int, challenge, code string) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"query": query})
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var answer struct {
		Data   json.RawMessage
		Errors []struct{ Extensions map[string]any }
	}
	if err := json.NewDecoder(res.Body).Decode(&answer); err != nil {
		t.Fatalf("the answer is not JSON: %v", err)
	}
	if len(answer.Errors) > 0 {
		code, _ = answer.Errors[0].Extensions["code"].(string)
	} else if len(answer.Data) == 0 {
		t.Fatal("an answer with neither data nor errors")
	}
	return res.StatusCode, res.Header.Get("WWW-Authenticate"), code
}

func TestTokensModeAuthenticatesEveryTransport(t *testing.T) {
	t.Parallel()
	dsn := storetest.DSN(t, store.SQLite)
	storetest.OpenDSN(t, dsn, true)
	const secret = "fs_tok_4d9c2e7a1b"
	path := tokenFile(t, map[string]string{"ops-bot": secret})
	addr, out, _ := startServeOutput(t, noEnv, "--db", dsn, "--log-format", "json", "--auth", "tokens", "--tokens-file", path)
	base := "http://" + addr
	const query = "{ position { revision } }"

	t.Run("HTTP without a credential is 401 UNAUTHENTICATED", func(t *testing.T) {
		status, challenge, code := authPost(t, base+"/graphql", "", query)
		if status != http.StatusUnauthorized || code != "UNAUTHENTICATED" || challenge != `Bearer realm="flowsnap"` {
			t.Errorf("%d %q %q", status, challenge, code)
		}
	})
	t.Run("HTTP with a wrong token is 401 invalid_token", func(t *testing.T) {
		for _, h := range []string{"Bearer wrong", "Bearer " + secret + "x", "Basic " + secret, "Bearer"} {
			status, challenge, code := authPost(t, base+"/graphql", h, query)
			if status != http.StatusUnauthorized || code != "UNAUTHENTICATED" || !strings.Contains(challenge, `error="invalid_token"`) {
				t.Errorf("%q: %d %q %q", h, status, challenge, code)
			}
		}
	})
	t.Run("HTTP with the token answers", func(t *testing.T) {
		if status, _, code := authPost(t, base+"/graphql", "Bearer "+secret, query); status != http.StatusOK || code != "" {
			t.Errorf("POST: %d %q", status, code)
		}
		req, _ := http.NewRequest(http.MethodGet, base+"/graphql?query="+strings.ReplaceAll(query, " ", "+"), nil)
		req.Header.Set("Authorization", "Bearer "+secret)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Errorf("GET: %d", res.StatusCode)
		}
	})
	t.Run("SSE carries the header", func(t *testing.T) {
		for _, c := range []struct {
			authorization string
			status        int
		}{{"", http.StatusUnauthorized}, {"Bearer " + secret, http.StatusOK}} {
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/graphql", strings.NewReader(`{"query":"subscription { position { revision } }"}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "text/event-stream")
			if c.authorization != "" {
				req.Header.Set("Authorization", c.authorization)
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				cancel()
				t.Fatal(err)
			}
			if res.StatusCode != c.status {
				t.Errorf("SSE with %q: %d, want %d", c.authorization, res.StatusCode, c.status)
			} else if c.status == http.StatusOK {
				sc := bufio.NewScanner(res.Body)
				for sc.Scan() && !strings.HasPrefix(sc.Text(), "data:") {
				}
				if !strings.Contains(sc.Text(), `"revision"`) {
					t.Errorf("the first event: %q", sc.Text())
				}
			}
			res.Body.Close()
			cancel()
		}
	})
	t.Run("WebSocket", func(t *testing.T) {
		type message struct {
			ID      string         `json:"id,omitempty"`
			Type    string         `json:"type"`
			Payload map[string]any `json:"payload,omitempty"`
		}
		// dial opens a connection (with header, when not "") and sends
		// connection_init with payload; it returns the first message
		// that is not a keep-alive, or the close status.
		dial := func(t *testing.T, header string, payload map[string]any) (*websocket.Conn, message, websocket.StatusCode) {
			t.Helper()
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			opts := &websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}, HTTPHeader: http.Header{}}
			if header != "" {
				opts.HTTPHeader.Set("Authorization", header)
			}
			c, _, err := websocket.Dial(ctx, "ws://"+addr+"/graphql", opts)
			if err != nil {
				t.Fatal(err)
			}
			if err := wsjson.Write(ctx, c, message{Type: "connection_init", Payload: payload}); err != nil {
				t.Fatal(err)
			}
			for {
				var m message
				if err := wsjson.Read(ctx, c, &m); err != nil {
					return c, m, websocket.CloseStatus(err)
				}
				if m.Type != "ka" && m.Type != "ping" {
					return c, m, -1
				}
			}
		}
		subscribe := func(t *testing.T, c *websocket.Conn) {
			t.Helper()
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			if err := wsjson.Write(ctx, c, message{ID: "1", Type: "subscribe", Payload: map[string]any{"query": "subscription { position { revision } }"}}); err != nil {
				t.Fatal(err)
			}
			for {
				var m message
				if err := wsjson.Read(ctx, c, &m); err != nil {
					t.Fatal(err)
				}
				if m.Type == "next" {
					if _, ok := m.Payload["data"]; !ok {
						t.Errorf("the event: %+v", m)
					}
					return
				}
			}
		}
		t.Run("the token in connection_init", func(t *testing.T) {
			c, m, _ := dial(t, "", map[string]any{"authorization": "Bearer " + secret})
			defer c.CloseNow()
			if m.Type != "connection_ack" {
				t.Fatalf("got %+v", m)
			}
			subscribe(t, c)
			// An operation refused on the connection: its log line names
			// the principal of the connection_init (checked below).
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			if err := wsjson.Write(ctx, c, message{ID: "2", Type: "subscribe", Payload: map[string]any{"query": "subscription { nope }"}}); err != nil {
				t.Fatal(err)
			}
			for {
				var m message
				if err := wsjson.Read(ctx, c, &m); err != nil {
					t.Fatal(err)
				}
				if m.ID == "2" && (m.Type == "error" || m.Type == "next" || m.Type == "complete") {
					break
				}
			}
		})
		t.Run("the token on the upgrade request", func(t *testing.T) {
			c, m, _ := dial(t, "Bearer "+secret, nil)
			defer c.CloseNow()
			if m.Type != "connection_ack" {
				t.Fatalf("got %+v", m)
			}
			subscribe(t, c)
		})
		t.Run("a wrong token on the upgrade request is 401 before the upgrade", func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			_, res, err := websocket.Dial(ctx, "ws://"+addr+"/graphql", &websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"},
				HTTPHeader: http.Header{"Authorization": {"Bearer nope"}}})
			if err == nil || res == nil || res.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(res.Header.Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("dial: %v %+v", err, res)
			}
		})
		for name, payload := range map[string]map[string]any{"no token": nil, "a wrong token": {"authorization": "Bearer nope"}} {
			t.Run(name+" closes 4401", func(t *testing.T) {
				c, m, status := dial(t, "", payload)
				defer c.CloseNow()
				for status == -1 && m.Type == "connection_error" {
					var err error
					ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
					err = wsjson.Read(ctx, c, &m)
					cancel()
					status = websocket.CloseStatus(err)
				}
				if status != 4401 {
					t.Errorf("close status %d (last message %+v), want 4401", status, m)
				}
			})
		}
	})
	t.Run("probes need no credential, metrics do", func(t *testing.T) {
		for _, p := range []string{"/healthz", "/readyz"} {
			if status, _ := httpGet(t, base+p); status != http.StatusOK {
				t.Errorf("%s: %d", p, status)
			}
		}
		res, err := http.Get(base + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(res.Header.Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("/metrics without a credential: %d %q", res.StatusCode, res.Header.Get("WWW-Authenticate"))
		}
		req, _ := http.NewRequest(http.MethodGet, base+"/metrics", nil)
		req.Header.Set("Authorization", "Bearer "+secret)
		res, err = http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Fatalf("/metrics with the token: %d", res.StatusCode)
		}
		m := regexp.MustCompile(`flowsnap_graphql_refused_requests_total\{reason="unauthenticated"\} (\d+)`).FindSubmatch(b)
		if m == nil {
			t.Fatalf("no unauthenticated refusals counted:\n%s", b)
		}
		// 1 without a credential, 4 wrong, 1 SSE, 3 WebSocket, 1 scrape.
		if n, _ := strconv.Atoi(string(m[1])); n != 10 {
			t.Errorf("%d unauthenticated refusals counted, want 10", n)
		}
		// Access control's own count says the same.
		if !bytes.Contains(b, []byte(`flowsnap_refusals_total{reason="unauthenticated"} 10`)) || !bytes.Contains(b, []byte(`flowsnap_refusals_total{reason="forbidden"} 0`)) {
			t.Errorf("flowsnap_refusals_total does not count the 10 unauthenticated refusals:\n%s", b)
		}
	})
	t.Run("the ops CLI sends its token", func(t *testing.T) {
		if got, err := runCmd(t, noEnv, "flows", "--server", base, "--output", "json"); opscli.ExitCode(err) != 1 || !strings.Contains(got+errString(err), "UNAUTHENTICATED") {
			t.Errorf("without a token: %v\n%s", err, got)
		}
		if got, err := runCmd(t, noEnv, "flows", "--server", base, "--token", secret, "--output", "json"); err != nil {
			t.Errorf("with the token: %v\n%s", err, got)
		}
		if got, err := runCmd(t, func(k string) string {
			if k == "FLOWSNAP_TOKEN" {
				return secret
			}
			return ""
		}, "runs", "list", "--server", base, "--limit", "3", "--output", "json"); err != nil {
			t.Errorf("runs list with FLOWSNAP_TOKEN: %v\n%s", err, got)
		}
	})
	t.Run("the log names the principal, never the token", func(t *testing.T) {
		// A refused operation of an authenticated request names it too.
		if status, _, code := authPost(t, base+"/graphql", "Bearer "+secret, "{ position { revision "); code != "BAD_USER_INPUT" {
			t.Fatalf("a broken query: %d %q", status, code)
		}
		refusedNamed := false
		deadline := time.Now().Add(5 * time.Second)
		for !refusedNamed && time.Now().Before(deadline) {
			refusedNamed = strings.Contains(out.String(), `"msg":"graphql refused"`) && regexp.MustCompile(`"msg":"graphql refused"[^\n]*"reason":"parse"[^\n]*"principal":"ops-bot"`).MatchString(out.String())
			time.Sleep(20 * time.Millisecond)
		}
		if !refusedNamed {
			t.Errorf("the refused operation's line does not name the principal:\n%s", out.String())
		}
		if !regexp.MustCompile(`"msg":"graphql refused"[^\n]*"reason":"validation"[^\n]*"principal":"ops-bot"`).MatchString(out.String()) {
			t.Errorf("the operation refused on a WebSocket authenticated at connection_init does not name the principal:\n%s", out.String())
		}
		log := out.String()
		if strings.Contains(log, secret) {
			t.Errorf("the token is in the log:\n%s", log)
		}
		named := 0
		for _, line := range strings.Split(strings.TrimSpace(log), "\n") {
			var entry map[string]any
			if json.Unmarshal([]byte(line), &entry) != nil {
				continue
			}
			if entry["msg"] == "graphql" || entry["msg"] == "subscription start" {
				if entry["principal"] != "ops-bot" {
					t.Errorf("a line without the principal: %s", line)
				}
				named++
			}
			if entry["msg"] == "graphql refused" && entry["reason"] == "unauthenticated" && entry["principal"] != nil {
				t.Errorf("an unauthenticated refusal names a principal: %s", line)
			}
		}
		if named < 3 {
			t.Errorf("%d lines name the principal, want at least 3:\n%s", named, log)
		}
	})
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestTokensFileReloadsOnSIGHUP changes the tokens file in place with its
// size and modification time kept, which the poll cannot see: only the
// signal makes the server read it again.
func TestTokensFileReloadsOnSIGHUP(t *testing.T) {
	dsn := storetest.DSN(t, store.SQLite)
	storetest.OpenDSN(t, dsn, true)
	path := tokenFile(t, map[string]string{"first": "token-0001"})
	addr, out, _ := startServeOutput(t, noEnv, "--db", dsn, "--auth", "tokens", "--tokens-file", path)
	base := "http://" + addr + "/graphql"
	if status, _, _ := authPost(t, base, "Bearer token-0001", "{ position { revision } }"); status != http.StatusOK {
		t.Fatalf("the first token: %d", status)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	was, _ := os.ReadFile(path)
	writeTokenFile(t, path, map[string]string{"first": "token-0002"})
	if now, _ := os.ReadFile(path); len(now) != len(was) {
		t.Fatalf("the new file's size differs: %d, %d", len(now), len(was))
	}
	if err := os.Chtimes(path, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second) // past a poll, which must not see it
	if status, _, _ := authPost(t, base, "Bearer token-0002", "{ position { revision } }"); status != http.StatusUnauthorized {
		t.Fatalf("the poll saw a change it cannot see: %d", status)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		status, _, _ := authPost(t, base, "Bearer token-0002", "{ position { revision } }")
		if status == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("SIGHUP did not reload the tokens:\n%s", out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if status, _, _ := authPost(t, base, "Bearer token-0001", "{ position { revision } }"); status != http.StatusUnauthorized {
		t.Errorf("the replaced token still works: %d", status)
	}
	if !strings.Contains(out.String(), "SIGHUP") {
		t.Errorf("the reload is not logged:\n%s", out.String())
	}
}

func TestMetricsAddrServesMetricsWithoutACredential(t *testing.T) {
	t.Parallel()
	dsn := storetest.DSN(t, store.SQLite)
	storetest.OpenDSN(t, dsn, true)
	path := tokenFile(t, map[string]string{"bot": "token-bot"})
	_, out, _ := startServeOutput(t, noEnv, "--db", dsn, "--auth", "tokens", "--tokens-file", path, "--metrics-addr", "127.0.0.1:0")
	m := regexp.MustCompile(`metrics:\s+(http://\S+/metrics)`).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("no metrics address printed:\n%s", out.String())
	}
	status, body := httpGet(t, m[1])
	if status != http.StatusOK || !strings.Contains(body, "flowsnap_build_info") {
		t.Errorf("%s: %d", m[1], status)
	}
}

// TestPagesOnAllowedOriginsMaySendTheirToken: a page on an origin
// --cors-origin allows sends Authorization; its preflight allows it, and
// the answer to a refused token lets the page read why.
func TestPagesOnAllowedOriginsMaySendTheirToken(t *testing.T) {
	t.Parallel()
	dsn := storetest.DSN(t, store.SQLite)
	storetest.OpenDSN(t, dsn, true)
	path := tokenFile(t, map[string]string{"page": "page-token"})
	addr, _ := startServe(t, noEnv, "--db", dsn, "--auth", "tokens", "--tokens-file", path, "--cors-origin", "https://ops.example.com")
	req, _ := http.NewRequest(http.MethodOptions, "http://"+addr+"/graphql", nil)
	req.Header.Set("Origin", "https://ops.example.com")
	req.Header.Set("Access-Control-Request-Method", "POST")
	req.Header.Set("Access-Control-Request-Headers", "authorization,content-type")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode/100 != 2 || !strings.Contains(strings.ToLower(res.Header.Get("Access-Control-Allow-Headers")), "authorization") {
		t.Errorf("preflight: %d, allows %q", res.StatusCode, res.Header.Get("Access-Control-Allow-Headers"))
	}
	req, _ = http.NewRequest(http.MethodPost, "http://"+addr+"/graphql", strings.NewReader(`{"query":"{ position { revision } }"}`))
	req.Header.Set("Origin", "https://ops.example.com")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer wrong")
	res, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if exposed := strings.ToLower(res.Header.Get("Access-Control-Expose-Headers")); res.StatusCode != http.StatusUnauthorized || !strings.Contains(exposed, "www-authenticate") {
		t.Errorf("a refused token: %d, exposes %q", res.StatusCode, res.Header.Get("Access-Control-Expose-Headers"))
	}
}
