package main

import (
	"encoding/json"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/storetest"
)

var debugPattern = regexp.MustCompile(`debug endpoints at http://([0-9.:]+)/`)

// serveWithOutput runs `flowsnap serve` on port 0 until the test ends and
// returns its address and what it printed by the time it was ready.
func serveWithOutput(t *testing.T, getenv func(string) string, args ...string) (string, string) {
	t.Helper()
	addr, out, stop := startServeOutput(t, getenv, args...)
	printed := out.String()
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return addr, printed
}

// TestDebugAddr serves pprof and runtime metrics on a listener of their
// own when --debug-addr (or FLOWSNAP_DEBUG_ADDR) is set, and nowhere
// otherwise.
func TestDebugAddr(t *testing.T) {
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		dsn := storetest.DSN(t, d)
		if out, err := runCmd(t, noEnv, "migrate", "--db", dsn); err != nil {
			t.Fatalf("migrate: %v\n%s", err, out)
		}
		for _, c := range []struct {
			name string
			env  map[string]string
			args []string
		}{
			{"from the flag", map[string]string{"FLOWSNAP_DB": dsn}, []string{"--debug-addr", "127.0.0.1:0"}},
			{"from its environment twin", map[string]string{"FLOWSNAP_DB": dsn, "FLOWSNAP_DEBUG_ADDR": "127.0.0.1:0"}, nil},
		} {
			t.Run(c.name, func(t *testing.T) {
				addr, out := serveWithOutput(t, func(k string) string { return c.env[k] }, c.args...)
				debug := debugPattern.FindStringSubmatch(out)
				if debug == nil {
					t.Fatalf("no debug address in:\n%s", out)
				}
				if addr == debug[1] {
					t.Fatalf("the debug endpoints share the public listener %s", addr)
				}
				for path, want := range map[string]string{
					"/debug/pprof/":                  "goroutine",
					"/debug/pprof/heap?debug=1":      "heap profile",
					"/debug/pprof/goroutine?debug=1": "goroutine profile",
					"/debug/vars":                    "memstats",
					"/debug/runtime-metrics":         "/gc/heap/allocs:bytes",
				} {
					if code, body := httpGet(t, "http://"+debug[1]+path); code != 200 || !strings.Contains(body, want) {
						t.Errorf("GET %s = %d %.200s", path, code, body)
					}
				}
				if code, _ := httpGet(t, "http://"+addr+"/debug/pprof/"); code == 200 {
					t.Errorf("the public listener serves /debug/pprof/")
				}
			})
		}
	})
}

// TestDebugAddrIsOffByDefault checks that nothing but the public listener
// opens without --debug-addr.
func TestDebugAddrIsOffByDefault(t *testing.T) {
	dsn := storetest.DSN(t, store.SQLite)
	if out, err := runCmd(t, noEnv, "migrate", "--db", dsn); err != nil {
		t.Fatalf("migrate: %v\n%s", err, out)
	}
	addr, out := serveWithOutput(t, noEnv, "--db", dsn)
	if code, _ := httpGet(t, "http://"+addr+"/debug/pprof/"); code == 200 {
		t.Errorf("the public listener serves /debug/pprof/")
	}
	if strings.Contains(out, "debug endpoints") {
		t.Errorf("debug endpoints opened without --debug-addr:\n%s", out)
	}
}

func TestTheDebugEndpointsNeverShowAPassword(t *testing.T) {
	// The command line as a server started with credentials in its DSNs
	// would have it.
	saved := os.Args
	t.Cleanup(func() { os.Args = saved })
	os.Args = []string{"flowsnap", "serve", "--db", "postgres://flowsnap:s3cret-url@db.internal:5432/engine?sslmode=disable",
		"--replica=postgresql://reader:s3cret-replica@standby/engine", "--db", "host=db user=x password=s3cret-kv dbname=engine"}
	srv := httptest.NewServer(debugHandler())
	t.Cleanup(srv.Close)
	for _, path := range []string{"/debug/vars", "/debug/pprof/cmdline"} {
		code, body := httpGet(t, srv.URL+path)
		if code != 200 || !strings.Contains(body, "db.internal") || !strings.Contains(body, "REDACTED") {
			t.Fatalf("GET %s = %d, without the redacted command line:\n%.500s", path, code, body)
		}
		if strings.Contains(body, "s3cret") {
			t.Errorf("GET %s shows a password:\n%.2000s", path, body)
		}
	}
	_, vars := httpGet(t, srv.URL+"/debug/vars")
	var parsed map[string]any
	if err := json.Unmarshal([]byte(vars), &parsed); err != nil || parsed["memstats"] == nil {
		t.Errorf("/debug/vars is not expvar's JSON: %v", err)
	}
}
