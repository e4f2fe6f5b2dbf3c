package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flowsnap/flowsnap/engine"
	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/storetest"
)

// TestAStreamThatIsNotReadIsDroppedByTheServer serves a large change feed
// to a client that reads nothing, through flowsnap serve's whole stack
// (compression, metrics, tracing): the stream is dropped at
// --stream-write-timeout and the client's one place is free again.
func TestAStreamThatIsNotReadIsDroppedByTheServer(t *testing.T) {
	dsn := storetest.DSN(t, store.SQLite)
	db := storetest.OpenDSN(t, dsn, true)
	if _, err := engine.Seed(context.Background(), db, engine.SeedOptions{Runs: 3000, Seed: 1}); err != nil {
		t.Fatal(err)
	}
	addr, _ := startServe(t, noEnv, "--db", dsn, "--stream-write-timeout", "1s", "--max-connections-per-client", "1")
	waitForTheWatcher(t, addr)
	d := &net.Dialer{Timeout: 10 * time.Second, Control: func(_, _ string, c syscall.RawConn) error {
		return c.Control(func(fd uintptr) { _ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
	}}
	conn, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	body, _ := json.Marshal(map[string]any{"query": `subscription { changes(since: 0) { nextRevision changes { runId revision
		run { ... on Run { id flowName status createdAt steps(first: 20) { nodes { id state } } } } } } }`})
	fmt.Fprintf(conn, "POST /graphql HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: text/event-stream\r\nAccept-Encoding: gzip\r\nContent-Length: %d\r\n\r\n%s", addr, len(body), body)
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	if status, _ := bufio.NewReader(conn).ReadString('\n'); !strings.Contains(status, " 200 ") {
		t.Fatalf("the stream: %q", status)
	}
	subscribe := func() int {
		req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/graphql", strings.NewReader(`{"query":"subscription { position { revision } }"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "text/event-stream")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	if got := subscribe(); got != http.StatusServiceUnavailable {
		t.Fatalf("while the stream holds the client's one place: status %d, want 503", got)
	}
	// The engine writes on, until the stream has more than the sockets'
	// buffers hold (the kernel grows them to a few MiB).
	w := engine.NewWriter(db, nil)
	deadline := time.Now().Add(60 * time.Second)
	for batch := 0; subscribe() != http.StatusOK; batch++ {
		if time.Now().After(deadline) {
			t.Fatal("the stream nobody reads still holds its place after 60s")
		}
		ctx := context.Background()
		if err := w.Do(ctx, func(tx *engine.Tx) error {
			for i := range 500 {
				id := fmt.Sprintf("more-%04d-%03d-%s", batch, i, strings.Repeat("x", 100))
				if err := tx.CreateRun(ctx, engine.NewRun{ID: id, FlowName: "a-flow-whose-name-takes-room"}); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
}

// waitForTheWatcher waits until the server's revision watcher has looked at
// the store twice: until its first look, a subscription ends at once
// (UNAVAILABLE), and with it the stream that held the client's place.
func waitForTheWatcher(t *testing.T, addr string) {
	t.Helper()
	ticks := regexp.MustCompile(`(?m)^flowsnap_live_watcher_tick_seconds_count (\d+)$`)
	deadline := time.Now().Add(30 * time.Second)
	for {
		res, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if m := ticks.FindSubmatch(b); m != nil {
			if n, _ := strconv.Atoi(string(m[1])); n >= 2 {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the revision watcher did not look at the store within 30s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
