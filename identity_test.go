package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flowsnap/flowsnap/fault"
	"github.com/flowsnap/flowsnap/snapshot"
	"github.com/flowsnap/flowsnap/store"
)

// graphqlCodes posts query to base and returns the answer's position source
// (empty when none) and its error codes.
func graphqlCodes(t *testing.T, base, query string) (string, []string) {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"query": query})
	res, err := http.Post(base+"/graphql", "application/json", strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var body struct {
		Data struct {
			Position struct{ Source string } `json:"position"`
		} `json:"data"`
		Errors []struct {
			Extensions map[string]any `json:"extensions"`
		} `json:"errors"`
	}
	if err := json.NewDecoder(res.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	var codes []string
	for _, e := range body.Errors {
		c, _ := e.Extensions["code"].(string)
		codes = append(codes, c)
	}
	return body.Data.Position.Source, codes
}

func TestAReplacedOrRemovedSQLiteStoreIsRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	served, other := filepath.Join(dir, "served.db"), filepath.Join(dir, "other.db")
	for _, p := range []string{served, other} {
		if out, err := runCmd(t, noEnv, "seed", "--db", p, "--runs", "20"); err != nil {
			t.Fatalf("seed: %v\n%s", err, out)
		}
	}
	addr, stop := startServe(t, noEnv, "--db", served, "--max-readers", "4")
	base := "http://" + addr
	first, codes := graphqlCodes(t, base, `{ position { source } }`)
	if first == "" || len(codes) > 0 {
		t.Fatalf("before: source %q, codes %v", first, codes)
	}
	// Warm several pooled connections on the served file.
	for range 8 {
		graphqlCodes(t, base, `{ position { source } }`)
	}
	if err := os.Rename(other, served); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		src, codes := graphqlCodes(t, base, `{ position { source } }`)
		if src != "" || len(codes) != 1 || codes[0] != "PERSISTENCE_FAILED" {
			t.Fatalf("answer %d after the file was replaced: source %q, codes %v", i, src, codes)
		}
	}
	if code, _ := httpGet(t, base+"/readyz"); code != http.StatusServiceUnavailable {
		t.Fatalf("/readyz = %d after the file was replaced", code)
	}
	if err := os.Remove(served); err != nil {
		t.Fatal(err)
	}
	if _, codes := graphqlCodes(t, base, `{ position { source } }`); len(codes) != 1 || codes[0] != "PERSISTENCE_FAILED" {
		t.Fatalf("after the file was removed: codes %v", codes)
	}
	if code, _ := httpGet(t, base+"/readyz"); code != http.StatusServiceUnavailable {
		t.Fatalf("/readyz = %d after the file was removed", code)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

func TestASQLiteLockWaitEndsAsTimeoutAtTheOperationsDeadline(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "locked.db")
	if out, err := runCmd(t, noEnv, "seed", "--db", path, "--runs", "5"); err != nil {
		t.Fatalf("seed: %v\n%s", err, out)
	}
	// A connection in exclusive locking mode keeps its lock after its write
	// commits: every reader waits on it.
	locker, err := sql.Open("sqlite", "file:"+path+"?_pragma=locking_mode(EXCLUSIVE)")
	if err != nil {
		t.Fatal(err)
	}
	defer locker.Close()
	ctx := context.Background()
	conn, err := locker.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// A busy timeout far shorter than the operation's: the wait must last
	// until the operation's deadline at most and end as TIMEOUT, not as a
	// PERSISTENCE_FAILED when the busy timeout runs out.
	db, err := store.Open(ctx, path, store.Options{ReadOnly: true, BusyTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// The reader's idle connection from Open goes, so the lock can be taken.
	db.SQLReader().SetMaxIdleConns(0)
	if _, err := conn.ExecContext(ctx, `UPDATE flows_run_source SET revision = revision`); err != nil {
		t.Fatal(err)
	}
	db.SQLReader().SetMaxIdleConns(2)
	reader := snapshot.NewReader(db)
	opCtx, cancel := context.WithTimeout(ctx, 1500*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = reader.Position(opCtx)
	took := time.Since(start)
	if code := fault.CodeOf(err); code != fault.Timeout {
		t.Fatalf("after %s: %v (code %s), want TIMEOUT", took, err, code)
	}
	if took < time.Second || took > 10*time.Second {
		t.Fatalf("the lock wait ended after %s, want about the operation's 1.5 s", took)
	}
	t.Logf("the lock wait ended as TIMEOUT after %s", took)
}
