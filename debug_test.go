package main

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/storetest"
)

var debugPattern = regexp.MustCompile(`debug endpoints at http://([0-9.:]+)/`)

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
				var out syncBuffer
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan error, 1)
				go func() {
					done <- run(ctx, append([]string{"flowsnap", "serve", "--addr", "127.0.0.1:0"}, c.args...),
						func(k string) string { return c.env[k] }, &out)
				}()
				defer func() {
					cancel()
					if err := <-done; err != nil {
						t.Errorf("serve: %v", err)
					}
				}()
				var main, debug []string
				for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline) && (main == nil || debug == nil); time.Sleep(20 * time.Millisecond) {
					main, debug = addrPattern.FindStringSubmatch(out.String()), debugPattern.FindStringSubmatch(out.String())
				}
				if main == nil || debug == nil {
					t.Fatalf("no addresses in:\n%s", out.String())
				}
				if main[1] == debug[1] {
					t.Fatalf("the debug endpoints share the public listener %s", main[1])
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
				if code, _ := httpGet(t, "http://"+main[1]+"/debug/pprof/"); code == 200 {
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
	var out syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"flowsnap", "serve", "--addr", "127.0.0.1:0", "--db", dsn}, noEnv, &out)
	}()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline) && addrPattern.FindStringSubmatch(out.String()) == nil; {
		time.Sleep(20 * time.Millisecond)
	}
	m := addrPattern.FindStringSubmatch(out.String())
	if m == nil {
		cancel()
		t.Fatalf("serve did not start:\n%s", out.String())
	}
	code, _ := httpGet(t, "http://"+m[1]+"/debug/pprof/")
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if code == 200 {
		t.Errorf("the public listener serves /debug/pprof/")
	}
	if strings.Contains(out.String(), "debug endpoints") {
		t.Errorf("debug endpoints opened without --debug-addr:\n%s", out.String())
	}
}
