package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flowsnap/flowsnap/gcpace"
	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/storetest"
)

// syncBuffer is an io.Writer safe for the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func noEnv(string) string { return "" }

func runCmd(t *testing.T, getenv func(string) string, args ...string) (string, error) {
	t.Helper()
	var out syncBuffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	err := run(ctx, append([]string{"flowsnap"}, args...), getenv, &out)
	return out.String(), err
}

// startServe runs `flowsnap serve` on port 0 and returns its address and a
// function that stops it and returns its error. The test's cleanup stops it
// too, so a test that fails early leaves no server behind.
func startServe(t *testing.T, getenv func(string) string, args ...string) (string, func() error) {
	t.Helper()
	addr, _, stop := startServeOutput(t, getenv, args...)
	return addr, stop
}

// startServeOutput is startServe that also returns what the server prints.
func startServeOutput(t *testing.T, getenv func(string) string, args ...string) (string, *syncBuffer, func() error) {
	t.Helper()
	out := &syncBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		cmd := newCommand(getenv, out, func(addr string) { ready <- addr })
		done <- cmd.Run(ctx, append([]string{"flowsnap", "serve", "--addr", "127.0.0.1:0"}, args...))
	}()
	var once sync.Once
	var stopErr error
	stop := func() error {
		once.Do(func() { cancel(); stopErr = <-done })
		return stopErr
	}
	t.Cleanup(func() { _ = stop() })
	select {
	case addr := <-ready:
		return addr, out, stop
	case err := <-done:
		t.Fatalf("serve stopped: %v\n%s", err, out.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("serve did not start:\n%s", out.String())
	}
	return "", nil, nil
}

func TestCORSAndJSONLogs(t *testing.T) {
	t.Parallel()
	dsn := storetest.DSN(t, store.SQLite)
	if out, err := runCmd(t, noEnv, "migrate", "--db", dsn); err != nil {
		t.Fatalf("migrate: %v\n%s", err, out)
	}
	addr, stop := startServe(t, noEnv, "--db", dsn, "--cors-origin", "http://127.0.0.2:9999", "--log-format", "json")
	pre, _ := http.NewRequest(http.MethodOptions, "http://"+addr+"/graphql", nil)
	pre.Header.Set("Origin", "http://127.0.0.2:9999")
	pre.Header.Set("Access-Control-Request-Method", "POST")
	pre.Header.Set("Access-Control-Request-Headers", "content-type")
	res, err := http.DefaultClient.Do(pre)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	h := res.Header
	if res.StatusCode != http.StatusNoContent || h.Get("Access-Control-Allow-Origin") != "http://127.0.0.2:9999" ||
		!strings.Contains(h.Get("Access-Control-Allow-Methods"), "POST") || !strings.Contains(strings.ToLower(h.Get("Access-Control-Allow-Headers")), "content-type") ||
		h.Get("Access-Control-Max-Age") != "600" || !strings.Contains(strings.Join(h.Values("Vary"), ","), "Origin") {
		t.Fatalf("preflight = %d %v", res.StatusCode, h)
	}
	pre.Header.Set("Origin", "http://elsewhere.example")
	res, err = http.DefaultClient.Do(pre)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("an origin not allowed got %v", res.Header)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

func TestMigrateSeedServe(t *testing.T) {
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		dsn := storetest.DSN(t, d)
		out, err := runCmd(t, noEnv, "migrate", "--db", dsn)
		if err != nil || !strings.Contains(out, "migrated from schema version 0 to") {
			t.Fatalf("migrate: %v\n%s", err, out)
		}
		if out, err := runCmd(t, noEnv, "migrate", "--db", dsn); err != nil || !strings.Contains(out, "nothing to do") {
			t.Fatalf("second migrate: %v\n%s", err, out)
		}
		// The database comes from the flag's environment twin here.
		env := func(k string) string {
			if k == "FLOWSNAP_DB" {
				return dsn
			}
			return ""
		}
		if out, err := runCmd(t, env, "seed", "--runs", "300"); err != nil || !strings.Contains(out, "seeded 300 runs") {
			t.Fatalf("seed: %v\n%s", err, out)
		}
		addr, stop := startServe(t, env)
		base := "http://" + addr
		for path, want := range map[string]string{"/healthz": "ok", "/readyz": "ok", "/metrics": "flowsnap_", "/": "<html"} {
			if code, body := httpGet(t, base+path); code != 200 || !strings.Contains(body, want) {
				t.Errorf("GET %s = %d %.200s", path, code, body)
			}
		}
		res, err := http.Post(base+"/graphql", "application/json", strings.NewReader(`{"query":"{ position { source revision } runs(ids: [\"nope\"]) { __typename } }"}`))
		if err != nil {
			t.Fatal(err)
		}
		var body struct {
			Data       map[string]any `json:"data"`
			Extensions map[string]any `json:"extensions"`
		}
		_ = json.NewDecoder(res.Body).Decode(&body)
		res.Body.Close()
		if body.Extensions["position"] == nil || body.Data["position"] == nil {
			t.Fatalf("graphql answer = %+v", body)
		}
		if _, metrics := httpGet(t, base+"/metrics"); !strings.Contains(metrics, "flowsnap_graphql_operations_total") {
			t.Errorf("metrics do not count operations:\n%.500s", metrics)
		}
		if err := stop(); err != nil {
			t.Fatalf("serve did not shut down cleanly: %v", err)
		}
	})
}

func TestServeRefusesWhatIsNotAStore(t *testing.T) {
	t.Parallel()
	empty := filepath.Join(t.TempDir(), "empty.db")
	if _, err := runCmd(t, noEnv, "migrate", "--db", empty); err != nil {
		t.Fatal(err)
	}
	notStore := filepath.Join(t.TempDir(), "other.db")
	db := storetest.OpenDSN(t, notStore, false)
	if err := db.Write(context.Background(), func(tx store.Tx) error {
		_, err := tx.Exec(context.Background(), `CREATE TABLE unrelated (x INTEGER)`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"an unknown scheme", []string{"serve", "--db", "mysql://localhost/x"}, "unsupported database"},
		{"a PostgreSQL server that is not there", []string{"serve", "--db", "postgres://postgres@127.0.0.1:1/x?connect_timeout=2"}, "cannot reach"},
		{"a SQLite file that does not exist", []string{"serve", "--db", filepath.Join(t.TempDir(), "nope.db")}, "does not exist"},
		{"a database that is not an engine store", []string{"serve", "--db", notStore}, "not a flowsnap engine store"},
		{"no database at all", []string{"serve"}, "db"},
		{"an unknown command", []string{"frobnicate"}, "unknown command"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, err := runCmd(t, noEnv, c.args...)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want it to mention %q\n%s", err, c.want, out)
			}
		})
	}
}

func TestCommandLineRefusesWhatItDoesNotKnow(t *testing.T) {
	t.Parallel()
	for want, args := range map[string][]string{
		"text or json":                         {"flowsnap", "serve", "--db", "x.db", "--log-format", "xml"},
		"no-such-flag":                         {"flowsnap", "serve", "--db", "x.db", "--no-such-flag"},
		"0 or more":                            {"flowsnap", "serve", "--db", "x.db", "--run-cache-mb", "-1"},
		"--stats-interval -1s: want 0 or more": {"flowsnap", "serve", "--db", "x.db", "--stats-interval", "-1s"},
		"--stats-max-flows 0: want 1 or more":  {"flowsnap", "serve", "--db", "x.db", "--stats-max-flows", "0"},
		"--stale-after 0s: want more than 0":   {"flowsnap", "serve", "--db", "x.db", "--stale-after", "0"},
	} {
		var out bytes.Buffer
		err := run(context.Background(), args, func(string) string { return "" }, &out)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%v: err = %v, want one that mentions %q", args, err, want)
		}
	}
	// The environment twins are checked as the flags are.
	for key, c := range map[string]struct{ value, want string }{
		"FLOWSNAP_LOG_FORMAT":     {"xml", "text or json"},
		"FLOWSNAP_STATS_INTERVAL": {"-5s", "--stats-interval -5s"},
	} {
		var out bytes.Buffer
		err := run(context.Background(), []string{"flowsnap", "serve", "--db", "x.db"}, func(k string) string {
			if k == key {
				return c.value
			}
			return ""
		}, &out)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s=%s: err = %v, want one that mentions %q", key, c.value, err, c.want)
		}
	}
}

func TestVersion(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	if err := run(context.Background(), []string{"flowsnap", "--version"}, func(string) string { return "" }, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "flowsnap version") || !strings.Contains(out.String(), "go1.") {
		t.Fatalf("--version printed %q", out.String())
	}
}

func TestEachCommandsHelpShowsItsOwnFlags(t *testing.T) {
	t.Parallel()
	for cmd, want := range map[string][]string{
		"serve":   {"--db", "[$FLOWSNAP_DB]", "--cors-origin", "(default: 8; on SQLite twice the CPUs, at most 8)", "(default: 16)", "--max-tokens", "[$FLOWSNAP_MAX_TOKENS]"},
		"migrate": {"--db", "[$FLOWSNAP_DB]"},
		"seed":    {"--runs", "(default: 10000)", "[$FLOWSNAP_SEED]"},
	} {
		out, err := runCmd(t, noEnv, cmd, "--help")
		if err != nil {
			t.Fatalf("%s --help: %v", cmd, err)
		}
		for _, w := range want {
			if !strings.Contains(out, w) {
				t.Errorf("%s --help lacks %q:\n%s", cmd, w, out)
			}
		}
		if strings.Contains(out, "--data") {
			t.Errorf("%s --help lists the demo's --data:\n%s", cmd, out)
		}
		if cmd != "serve" && (strings.Contains(out, "GLOBAL OPTIONS") || strings.Contains(out, "--max-tokens")) {
			t.Errorf("%s --help lists serve's limit flags as global:\n%s", cmd, out)
		}
	}
}

// TestServeSetsTheCollectorsPace starts servers with the default pace, with
// GOGC in the environment and with --gc-percent, and reads the pace each
// reports: the default, GOGC over the default, and the flag over GOGC.
func TestServeSetsTheCollectorsPace(t *testing.T) {
	was := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(was) })
	dsn := storetest.DSN(t, store.SQLite)
	if out, err := runCmd(t, noEnv, "migrate", "--db", dsn); err != nil {
		t.Fatalf("migrate: %v\n%s", err, out)
	}
	gogc := func(v string) func(string) string {
		return func(k string) string {
			if k == "GOGC" {
				return v
			}
			return ""
		}
	}
	for _, c := range []struct {
		name   string
		getenv func(string) string
		args   []string
		want   string
	}{
		{name: "the default", getenv: noEnv, want: fmt.Sprintf("gcPercent=%d memoryLimit=%d", gcpace.DefaultPercent, gcpace.DefaultMemoryLimit)},
		{name: "GOGC over the default", getenv: gogc(strconv.Itoa(was)), want: fmt.Sprintf("gcPercent=%d", was)},
		{name: "the flag over GOGC", getenv: gogc("150"), args: []string{"--gc-percent", "300"}, want: "gcPercent=300"},
	} {
		// GOGC in the environment is applied by the runtime when the
		// process starts: here, the percent this test started with.
		debug.SetGCPercent(was)
		_, out, stop := startServeOutput(t, c.getenv, append([]string{"--db", dsn}, c.args...)...)
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.String(), c.want) {
			t.Errorf("%s: no %s in\n%s", c.name, c.want, out.String())
		}
	}
}

func TestJSONLogsTieLinesToRequestsAndEndWithAStopLine(t *testing.T) {
	t.Parallel()
	dsn := storetest.DSN(t, store.SQLite)
	if out, err := runCmd(t, noEnv, "migrate", "--db", dsn); err != nil {
		t.Fatalf("migrate: %v\n%s", err, out)
	}
	addr, out, stop := startServeOutput(t, noEnv, "--db", dsn, "--log-format", "json")
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/graphql", strings.NewReader(`{"query":"query Logged { position { revision } }"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Request-Id", "req-logged-1")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("a log line is not JSON: %q", l)
		}
		lines = append(lines, m)
	}
	var op map[string]any
	for _, m := range lines {
		if m["msg"] == "graphql" && m["operation"] == "Logged" {
			op = m
		}
	}
	if op == nil || op["requestId"] != "req-logged-1" {
		t.Fatalf("the operation's line %v lacks its request id", op)
	}
	// Seconds, a float: an operation on an empty store takes far less
	// than ten, where nanoseconds would be millions.
	if d, ok := op["duration"].(float64); !ok || d <= 0 || d > 10 {
		t.Errorf("the operation's duration %v is not in seconds", op["duration"])
	}
	last := lines[len(lines)-1]
	if last["msg"] != "flowsnap stopped" {
		t.Fatalf("the last line is %v, want flowsnap stopped", last)
	}
	for _, key := range []string{"uptime", "shutdown"} {
		if d, ok := last[key].(float64); !ok || d < 0 || d > 60 {
			t.Errorf("the stop line's %s = %v, want seconds", key, last[key])
		}
	}
}
