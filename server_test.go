package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

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
	var out syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		cmd := newCommand(getenv, &out, func(addr string) { ready <- addr })
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
		return addr, stop
	case err := <-done:
		t.Fatalf("serve stopped: %v\n%s", err, out.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("serve did not start:\n%s", out.String())
	}
	return "", nil
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
