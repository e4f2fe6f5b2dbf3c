package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flowsnap/flowsnap/engine"
	"github.com/flowsnap/flowsnap/opscli"
	"github.com/flowsnap/flowsnap/snapshot"
	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/storetest"
	"github.com/flowsnap/flowsnap/store/vocab"
)

var updateOps = flag.Bool("update-ops", false, "rewrite the ops command line's golden outputs under testdata/ops")

// opsNow is the instant the ops commands read the stores at, so that ages
// and relative times are fixed: the end of the seeder's history, and ten
// minutes after opsT0, when the fixture's history happens.
var (
	opsNow = time.UnixMilli(engine.DefaultSeedNow).UTC()
	opsT0  = opsNow.Add(-10 * time.Minute)
)

func init() {
	opsHooks.now = func() time.Time { return opsNow }
	opsHooks.retry = 50 * time.Millisecond
	opsHooks.stderr = io.Discard // what watch says when it reconnects
}

// opsCmd runs flowsnap with args against server and returns what it
// printed, its error and its exit code.
func opsCmd(t *testing.T, server string, args ...string) (string, error, int) {
	t.Helper()
	getenv := func(k string) string {
		if k == "FLOWSNAP_SERVER" {
			return server
		}
		return ""
	}
	out, err := runCmd(t, getenv, args...)
	return out, err, opscli.ExitCode(err)
}

func opsOK(t *testing.T, server string, args ...string) string {
	t.Helper()
	out, err, _ := opsCmd(t, server, args...)
	if err != nil {
		t.Fatalf("flowsnap %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// opsStore migrates a store of dialect d and writes the fixture's history
// at fixed times: failed, completed, running, waiting, cancelled runs, a
// parent with children, a run created two days before it failed.
func opsStore(t *testing.T, d store.Dialect) (dsn string, db *store.DB) {
	t.Helper()
	dsn = storetest.DSN(t, d)
	db = storetest.OpenDSN(t, dsn, true)
	ctx := context.Background()
	clock := opsT0.UnixMilli()
	tick := func() int64 { clock += 1000; return clock }
	w := engine.NewWriter(db, tick)
	owner := vocab.Owner{HostID: "worker-1", PID: 4242, Nonce: "n-1"}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	early := engine.NewWriter(db, func() int64 { return opsT0.Add(-48 * time.Hour).UnixMilli() })
	must(early.CreateRun(ctx, engine.NewRun{ID: "old-1", FlowName: "billing"}))
	for _, id := range []string{"billing-1", "billing-2", "billing-3", "etl-1"} {
		flow, _, _ := strings.Cut(id, "-")
		must(w.CreateRun(ctx, engine.NewRun{ID: id, FlowName: flow}))
	}
	must(w.CreateRun(ctx, engine.NewRun{ID: "etl-2", FlowName: "etl", Parents: []engine.ParentEdge{{ParentID: "etl-1", Seq: 0}}}))
	must(w.CreateRun(ctx, engine.NewRun{ID: "etl-3", FlowName: "etl", Parents: []engine.ParentEdge{{ParentID: "etl-1", Seq: 1}}}))
	// billing-1 fails at its charge step after three attempts.
	must(w.Start(ctx, "billing-1", owner))
	must(w.AddStep(ctx, "billing-1", engine.Step{ID: "charge", Type: vocab.StepRun, MaxAttempts: 3}))
	for i := 1; i <= 3; i++ {
		a := fmt.Sprintf("charge-%d", i)
		must(w.StartAttempt(ctx, "billing-1", "charge", a))
		must(w.FailAttempt(ctx, "billing-1", a, engine.AttemptError{Name: "CardDeclined", Message: "the card was declined"}))
	}
	must(w.Fail(ctx, "billing-1", engine.RunError{Name: "CardDeclined", Message: "charge failed after 3 attempts"}))
	must(w.Start(ctx, "billing-2", owner))
	must(w.Complete(ctx, "billing-2", json.RawMessage(`{"ok":true}`)))
	must(w.Start(ctx, "billing-3", owner)) // its heartbeat stays at its start: stale
	must(w.Start(ctx, "etl-1", owner))
	must(w.Wait(ctx, "etl-1", engine.Waiting{Reason: "timer", WakeAt: opsT0.Add(time.Hour).UnixMilli()}))
	must(w.Start(ctx, "etl-2", owner))
	must(w.Complete(ctx, "etl-2", nil))
	must(w.RequestCancel(ctx, "etl-3"))
	must(w.Cancel(ctx, "etl-3"))
	must(w.Start(ctx, "old-1", owner))
	must(w.Fail(ctx, "old-1", engine.RunError{Message: "timed out"}))
	return dsn, db
}

// golden compares got with testdata/ops/name, or writes it with -update-ops.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "ops", name)
	if *updateOps {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run TestOpsCommandsGolden -update-ops)", err)
	}
	if string(want) != got {
		t.Errorf("%s differs (rerun with -update-ops to accept):\n--- want\n%s\n--- got\n%s", path, want, got)
	}
}

// TestOpsCommandsGolden runs every command against a served store of each
// dialect, with its times fixed, and compares what each prints with one
// golden file for both dialects.
func TestOpsCommandsGolden(t *testing.T) {
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		dsn, _ := opsStore(t, d)
		addr, _ := startServe(t, noEnv, "--db", dsn)
		server := "http://" + addr
		for _, c := range []struct {
			name string
			args []string
		}{
			{"list.table", []string{"runs", "list", "-o", "table"}},
			{"list.json", []string{"runs", "list", "-o", "json"}},
			{"list.ndjson", []string{"runs", "list", "-o", "ndjson", "--fields", "id,status,flowName,finished,waiting"}},
			{"list.csv", []string{"runs", "list", "-o", "csv", "--fields", "id,status,flow,created,started,finished,heartbeat,owner,cancel-requested"}},
			{"list_failed_since.table", []string{"runs", "list", "--status", "failed", "--finished-after", "1h", "-o", "table"}},
			{"list_stale.table", []string{"runs", "list", "--stale", "5m", "-o", "table", "--fields", "id,flow,heartbeat,owner"}},
			{"list_children_oldest.csv", []string{"runs", "list", "--execution-parent", "etl-1", "--order", "oldest", "-o", "csv"}},
			{"count.table", []string{"runs", "count", "-o", "table"}},
			{"count_by_status.table", []string{"runs", "count", "--by", "status", "-o", "table"}},
			{"count_by_status_capped.json", []string{"runs", "count", "--by", "status", "--up-to", "1", "-o", "json"}},
			{"get_failed.table", []string{"runs", "get", "billing-1", "-o", "table"}},
			{"get_parent.table", []string{"runs", "get", "etl-1", "-o", "table"}},
			{"get_failed.json", []string{"runs", "get", "billing-1", "-o", "json"}},
			{"flows.table", []string{"flows", "-o", "table"}},
			{"flows_prefix.json", []string{"flows", "--prefix", "bil", "-o", "json"}},
		} {
			t.Run(c.name, func(t *testing.T) {
				golden(t, c.name, opsOK(t, server, c.args...))
			})
		}
	})
}

// allRuns reads every live run of the store at dsn, in one snapshot.
func allRuns(t *testing.T, dsn string) []*snapshot.Run {
	t.Helper()
	db := storetest.OpenReader(t, dsn)
	r := snapshot.NewReader(db)
	ctx, rd := r.Begin(context.Background())
	defer rd.End()
	tx, err := db.BeginRead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := tx.Query(ctx, `SELECT run_id FROM flows_runs`)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	rows.Close()
	_ = tx.Rollback(ctx)
	res, err := r.Load(ctx, ids)
	if err != nil {
		t.Fatal(err)
	}
	var out []*snapshot.Run
	for _, x := range res {
		if run, ok := x.Value.(*snapshot.Run); ok {
			out = append(out, run)
		}
	}
	return out
}

// ndjsonIDs are the ids of the runs an ndjson listing printed.
func ndjsonIDs(t *testing.T, out string) []string {
	t.Helper()
	var ids []string
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r struct{ ID string }
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("%q: %v", sc.Text(), err)
		}
		ids = append(ids, r.ID)
	}
	return ids
}

// TestOpsListAndCountAgreeWithBruteForce lists and counts a seeded store
// through the command line, with each kind of filter, and compares with a
// brute-force filter of every run.
func TestOpsListAndCountAgreeWithBruteForce(t *testing.T) {
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		dsn := storetest.DSN(t, d)
		db := storetest.OpenDSN(t, dsn, true)
		if _, err := engine.Seed(context.Background(), db, engine.SeedOptions{Runs: 500, Seed: 4}); err != nil {
			t.Fatal(err)
		}
		all := allRuns(t, dsn)
		addr, _ := startServe(t, noEnv, "--db", dsn)
		server := "http://" + addr
		ago := func(d time.Duration) snapshot.Millis { return snapshot.Millis(opsNow.Add(-d).UnixMilli()) }
		// A failed run's flow, and an instant some run was created before
		// and finished at: the window the creation filters alone miss.
		var flow string
		var split time.Time
		for _, r := range all {
			if r.Status == vocab.StatusFailed && flow == "" {
				flow = r.FlowName
			}
			if r.FinishedAt != nil && *r.FinishedAt > r.CreatedAt && split.IsZero() {
				split = time.UnixMilli(int64(*r.FinishedAt)).UTC()
			}
		}
		splitMs := snapshot.Millis(split.UnixMilli())
		for _, c := range []struct {
			name  string
			args  []string
			order string // newest, oldest, finished
			keep  func(r *snapshot.Run) bool
		}{
			{"every run", nil, "newest", func(*snapshot.Run) bool { return true }},
			{"failed or cancelled", []string{"--status", "failed,CANCELLED"}, "newest", func(r *snapshot.Run) bool {
				return r.Status == vocab.StatusFailed || r.Status == vocab.StatusCancelled
			}},
			{"a flow, oldest first", []string{"--flow", flow}, "oldest", func(r *snapshot.Run) bool { return r.FlowName == flow }},
			{"failed of a flow finished in the last 40 days", []string{"--status", "failed", "--flow", flow, "--finished-after", "40d"}, "finished", func(r *snapshot.Run) bool {
				return r.Status == vocab.StatusFailed && r.FlowName == flow && r.FinishedAt != nil && *r.FinishedAt >= ago(40*24*time.Hour)
			}},
			{"finished since an instant, created before it", []string{"--finished-after", split.Format(time.RFC3339Nano), "--created-before", split.Format(time.RFC3339Nano)}, "finished", func(r *snapshot.Run) bool {
				return r.FinishedAt != nil && *r.FinishedAt >= splitMs && r.CreatedAt < splitMs
			}},
			{"stale for 5m", []string{"--stale", "5m"}, "newest", func(r *snapshot.Run) bool {
				return r.Status == vocab.StatusRunning && r.HeartbeatAt != nil && *r.HeartbeatAt < ago(5*time.Minute)
			}},
			{"roots waiting for a timer", []string{"--roots", "--waiting-kind", "timer"}, "newest", func(r *snapshot.Run) bool {
				return r.ExecutionParentID == nil && r.Waiting != nil && r.Waiting.Kind == vocab.WaitingTimer
			}},
			{"cancel requested", []string{"--cancel-requested"}, "newest", func(r *snapshot.Run) bool {
				return r.Cancellation.RequestedAt != nil && r.FinishedAt == nil
			}},
		} {
			t.Run(c.name, func(t *testing.T) {
				var want []*snapshot.Run
				for _, r := range all {
					if c.keep(r) && (c.order != "finished" || r.FinishedAt != nil) {
						want = append(want, r)
					}
				}
				key := func(r *snapshot.Run) snapshot.Millis {
					if c.order == "finished" {
						return *r.FinishedAt
					}
					return r.CreatedAt
				}
				sort.Slice(want, func(i, j int) bool {
					a, b := want[i], want[j]
					less := key(a) < key(b) || key(a) == key(b) && a.ID < b.ID
					return less == (c.order == "oldest")
				})
				wantIDs := make([]string, len(want))
				for i, r := range want {
					wantIDs[i] = r.ID
				}
				list := append([]string{"runs", "list", "--all", "-o", "ndjson", "--fields", "id"}, c.args...)
				if c.order == "oldest" {
					list = append(list, "--order", "oldest")
				}
				got := ndjsonIDs(t, opsOK(t, server, list...))
				if !slices.Equal(got, wantIDs) {
					t.Fatalf("listed %d %v,\nbrute force %d %v", len(got), head(got), len(wantIDs), head(wantIDs))
				}
				count := strings.TrimSpace(opsOK(t, server, append([]string{"runs", "count", "-o", "table", "--up-to", "1000000"}, c.args...)...))
				if count != fmt.Sprint(len(wantIDs)) {
					t.Fatalf("count %s, brute force %d", count, len(wantIDs))
				}
				if len(wantIDs) == 0 {
					t.Errorf("the filter selects no run of the seeded store: it tests nothing")
				}
			})
		}
	})
}

func head(ids []string) []string { return ids[:min(len(ids), 8)] }

// TestOpsRunStatsIsCappedExactly counts by status with bounds around each
// status's own count: capped exactly when more runs match than the bound.
func TestOpsRunStatsIsCappedExactly(t *testing.T) {
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		dsn := storetest.DSN(t, d)
		db := storetest.OpenDSN(t, dsn, true)
		if _, err := engine.Seed(context.Background(), db, engine.SeedOptions{Runs: 300, Seed: 9}); err != nil {
			t.Fatal(err)
		}
		n := map[string]int64{}
		for _, r := range allRuns(t, dsn) {
			n[strings.ToUpper(string(r.Status))]++
		}
		addr, _ := startServe(t, noEnv, "--db", dsn)
		for _, bound := range []int64{n["COMPLETED"] - 1, n["COMPLETED"], n["FAILED"], n["FAILED"] - 1, 0} {
			var got []struct {
				Status string
				Count  int64
				Capped bool
			}
			out := opsOK(t, "http://"+addr, "runs", "count", "--by", "status", "--up-to", fmt.Sprint(bound), "-o", "json")
			if err := json.Unmarshal([]byte(out), &got); err != nil {
				t.Fatalf("%s: %v", out, err)
			}
			if len(got) != len(vocab.Statuses) {
				t.Fatalf("%d counts", len(got))
			}
			for i, s := range got {
				if want := strings.ToUpper(string(vocab.Statuses[i])); s.Status != want || s.Count != min(n[want], bound) || s.Capped != (n[want] > bound) {
					t.Errorf("up to %d: %+v, brute force %s %d", bound, s, want, n[want])
				}
			}
		}
	})
}

// TestOpsFlowsPagesEveryName lists more flows than a page holds: every
// distinct name once, in order.
func TestOpsFlowsPagesEveryName(t *testing.T) {
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		dsn := storetest.DSN(t, d)
		db := storetest.OpenDSN(t, dsn, true)
		w := engine.NewWriter(db, func() int64 { return opsT0.UnixMilli() })
		var want []string
		if err := w.Do(context.Background(), func(tx *engine.Tx) error {
			for i := range 450 {
				name := fmt.Sprintf("flow-%03d", i)
				want = append(want, name)
				for j := range 2 { // a name with several runs is listed once
					if err := tx.CreateRun(context.Background(), engine.NewRun{ID: fmt.Sprintf("r-%d-%d", i, j), FlowName: name}); err != nil {
						return err
					}
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		addr, _ := startServe(t, noEnv, "--db", dsn)
		var got []string
		if err := json.Unmarshal([]byte(opsOK(t, "http://"+addr, "flows", "-o", "json")), &got); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("%d flows %v…, want %d", len(got), head(got), len(want))
		}
		if got := opsOK(t, "http://"+addr, "flows", "--prefix", "flow-44", "-o", "table"); got != "FLOW\nflow-440\nflow-441\nflow-442\nflow-443\nflow-444\nflow-445\nflow-446\nflow-447\nflow-448\nflow-449\n" {
			t.Fatalf("prefix flow-44: %q", got)
		}
	})
}

// TestOpsListAllWhileTheEngineWrites pages a store to its end while the
// simulated engine writes: no run twice, and every run that was there
// before and is still there after is listed.
func TestOpsListAllWhileTheEngineWrites(t *testing.T) {
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		dsn := storetest.DSN(t, d)
		db := storetest.OpenDSN(t, dsn, true)
		ctx := context.Background()
		if _, err := engine.Seed(ctx, db, engine.SeedOptions{Runs: 1200, Seed: 3}); err != nil {
			t.Fatal(err)
		}
		before := allRuns(t, dsn)
		addr, _ := startServe(t, noEnv, "--db", dsn)
		simCtx, stop := context.WithCancel(ctx)
		simDone := make(chan error, 1)
		go func() { simDone <- engine.Simulate(simCtx, db, engine.SimOptions{Rate: 400, Seed: 2}) }()
		time.Sleep(100 * time.Millisecond) // the engine is writing
		for _, order := range []string{"newest", "oldest"} {
			ids := ndjsonIDs(t, opsOK(t, "http://"+addr, "runs", "list", "--all", "--order", order, "-o", "ndjson", "--fields", "id"))
			if len(ids) <= 200 {
				t.Fatalf("%s: %d runs, fewer than two pages", order, len(ids))
			}
			seen := map[string]bool{}
			for _, id := range ids {
				if seen[id] {
					t.Fatalf("%s: run %q listed twice", order, id)
				}
				seen[id] = true
			}
			after := map[string]bool{}
			for _, r := range allRuns(t, dsn) {
				after[r.ID] = true
			}
			for _, r := range before {
				if after[r.ID] && !seen[r.ID] {
					t.Fatalf("%s: run %q, there before and after, was not listed", order, r.ID)
				}
			}
		}
		stop()
		if err := <-simDone; err != nil {
			t.Fatal(err)
		}
	})
}

// TestOpsWatchResumesAcrossARestart watches the change feed while a writer
// changes runs, stops the server, writes more while it is down, starts it
// again on the same address: the watch prints every change of a matching
// run, the ones made while the server was down included, in revision order.
func TestOpsWatchResumesAcrossARestart(t *testing.T) {
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		dsn := storetest.DSN(t, d)
		db := storetest.OpenDSN(t, dsn, true)
		ctx := context.Background()
		w := engine.NewWriter(db, func() int64 { return opsT0.UnixMilli() })
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		fixed := ln.Addr().String()
		ln.Close()
		_, stop := startServe(t, noEnv, "--db", dsn, "--addr", fixed, "--live-interval", "20ms")
		out := &syncBuffer{}
		wctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		getenv := func(k string) string {
			if k == "FLOWSNAP_SERVER" {
				return "http://" + fixed
			}
			return ""
		}
		must := func(err error) {
			t.Helper()
			if err != nil {
				t.Fatal(err)
			}
		}
		must(w.CreateRun(ctx, engine.NewRun{ID: "before-watch", FlowName: "watched"}))
		go func() {
			done <- run(wctx, []string{"flowsnap", "runs", "watch", "--flow", "watched", "-o", "ndjson"}, getenv, out)
		}()
		waitFor := func(what string, cond func(string) bool) {
			t.Helper()
			// Generous: a server restarting on a busy machine is slow.
			deadline := time.Now().Add(90 * time.Second)
			for !cond(out.String()) {
				if time.Now().After(deadline) {
					t.Fatalf("%s: the watch printed\n%s", what, out.String())
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
		// The watch starts from now: write probes until one shows, so that
		// it has read where now is.
		for i := 0; !strings.Contains(out.String(), `"runId":"probe-`); i++ {
			if i == 200 {
				t.Fatalf("the watch printed no probe:\n%s", out.String())
			}
			must(w.CreateRun(ctx, engine.NewRun{ID: fmt.Sprintf("probe-%d", i), FlowName: "watched"}))
			time.Sleep(100 * time.Millisecond)
		}
		must(w.CreateRun(ctx, engine.NewRun{ID: "w-1", FlowName: "watched"}))
		must(w.CreateRun(ctx, engine.NewRun{ID: "other-1", FlowName: "not-watched"}))
		waitFor("w-1", func(s string) bool { return strings.Contains(s, `"runId":"w-1"`) })
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		// Written while the server is down: the resumed feed must bring them.
		must(w.CreateRun(ctx, engine.NewRun{ID: "w-2", FlowName: "watched"}))
		must(w.Start(ctx, "w-1", vocab.Owner{HostID: "h", PID: 1, Nonce: "n"}))
		time.Sleep(200 * time.Millisecond) // the watch retries against nothing
		startServe(t, noEnv, "--db", dsn, "--addr", fixed, "--live-interval", "20ms")
		waitFor("w-2 and w-1 running", func(s string) bool {
			return strings.Contains(s, `"runId":"w-2"`) && strings.Contains(s, `"status":"RUNNING"`)
		})
		must(w.Start(ctx, "w-2", vocab.Owner{HostID: "h", PID: 1, Nonce: "n"}))
		must(w.Complete(ctx, "w-2", nil))
		waitFor("w-2 completed", func(s string) bool { return strings.Contains(s, `"status":"COMPLETED"`) })
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("an interrupted watch: %v", err)
		}
		var last int64
		var lines []string
		for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
			var ch struct {
				RunID    string
				Revision int64
				Run      struct{ Status, FlowName string }
			}
			if err := json.Unmarshal([]byte(line), &ch); err != nil {
				t.Fatalf("%q: %v", line, err)
			}
			if ch.Revision <= last || ch.Run.FlowName != "watched" {
				t.Fatalf("line %q: out of order or of another flow", line)
			}
			last = ch.Revision
			if ch.RunID == "before-watch" {
				t.Fatalf("the watch from now printed a change from before it: %q", line)
			}
			// w-2 running may be printed or not: it completed right after.
			if !strings.HasPrefix(ch.RunID, "probe-") && ch.RunID+" "+ch.Run.Status != "w-2 RUNNING" {
				lines = append(lines, ch.RunID+" "+ch.Run.Status)
			}
		}
		if want := []string{"w-1 PENDING", "w-2 PENDING", "w-1 RUNNING", "w-2 COMPLETED"}; !slices.Equal(lines, want) &&
			!slices.Equal(lines, []string{"w-1 PENDING", "w-1 RUNNING", "w-2 PENDING", "w-2 COMPLETED"}) {
			t.Fatalf("the watch printed %v, want %v (the changes after it started, each once)", lines, want)
		}
	})
}

// TestOpsErrors runs each way a command can fail: usage errors exit 2
// before asking anything, the API's errors and an unreachable server exit
// 1 with the code or the URL in the message.
func TestOpsErrors(t *testing.T) {
	t.Parallel()
	dsn, _ := opsStore(t, store.SQLite)
	addr, _ := startServe(t, noEnv, "--db", dsn)
	server := "http://" + addr
	for _, c := range []struct {
		name string
		args []string
		exit int
		says string
	}{
		{"an unknown status", []string{"runs", "list", "--status", "exploded"}, 2, `--status "exploded": want one of pending`},
		{"an unknown waiting kind", []string{"runs", "count", "--waiting-kind", "nap"}, 2, "--waiting-kind"},
		{"a time that is neither RFC 3339 nor an age", []string{"runs", "list", "--created-after", "yesterday"}, 2, "RFC 3339"},
		{"a negative age", []string{"runs", "list", "--stale", "-5m"}, 2, "above zero"},
		{"an unknown format", []string{"runs", "list", "-o", "yaml"}, 2, `-o "yaml"`},
		{"csv for get", []string{"runs", "get", "billing-1", "-o", "csv"}, 2, `-o "csv"`},
		{"an unknown field", []string{"runs", "list", "--fields", "id,colour"}, 2, `no field "colour"`},
		{"an unknown order", []string{"runs", "list", "--order", "random"}, 2, "--order"},
		{"a limit of 0", []string{"runs", "list", "--limit", "0"}, 2, "--limit 0"},
		{"both --limit and --all", []string{"runs", "list", "--limit", "5", "--all"}, 2, "--limit and --all"},
		{"get without an id", []string{"runs", "get"}, 2, "one run id"},
		{"an argument list does not take", []string{"runs", "list", "failed"}, 2, "takes no arguments"},
		{"an unknown flag", []string{"runs", "list", "--colour"}, 2, "colour"},
		{"a grouping other than status", []string{"runs", "count", "--by", "flow"}, 2, "--by"},
		{"a server that is no URL", []string{"runs", "list", "--server", "localhost:8080"}, 2, "--server"},
		{"a bound beyond the API's", []string{"runs", "count", "--up-to", "2000000"}, 1, "BAD_USER_INPUT: upTo must be between 0 and 1000000"},
		{"an id the API refuses", []string{"runs", "list", "--parent", strings.Repeat("x", 1100)}, 1, "BAD_USER_INPUT"},
		{"a watch from beyond the store", []string{"runs", "watch", "--since", "999999999"}, 1, "SOURCE_CHANGED"},
		{"a run that does not exist", []string{"runs", "get", "no-such-run"}, 1, `no run "no-such-run"`},
		{"a run that does not exist, as json", []string{"runs", "get", "no-such-run", "-o", "json"}, 1, `no run "no-such-run"`},
		{"a server that is not there", []string{"runs", "list", "--server", "http://127.0.0.1:1"}, 1, "cannot reach flowsnap at http://127.0.0.1:1"},
		{"flows from a server that is not there", []string{"flows", "--server", "http://127.0.0.1:1"}, 1, "cannot reach flowsnap at http://127.0.0.1:1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, err, code := opsCmd(t, server, c.args...)
			if code != c.exit || err == nil || !strings.Contains(err.Error(), c.says) {
				t.Fatalf("exit %d, error %v (output %q); want exit %d saying %q", code, err, out, c.exit, c.says)
			}
		})
	}
	t.Run("success exits 0", func(t *testing.T) {
		if _, err, code := opsCmd(t, server, "runs", "count"); err != nil || code != 0 {
			t.Fatalf("exit %d, %v", code, err)
		}
	})
}

// TestOpsTokenAndHTTPErrors checks that --token (and FLOWSNAP_TOKEN) is
// sent as a bearer token, and that an HTTP refusal is reported with its
// status and the API's code when it has one.
func TestOpsTokenAndHTTPErrors(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get("Authorization"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("WWW-Authenticate", "Bearer")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `{"errors":[{"message":"a valid credential is needed","extensions":{"code":"UNAUTHENTICATED"}}]}`)
	}))
	t.Cleanup(srv.Close)
	_, err, code := opsCmd(t, srv.URL, "runs", "list", "--token", "s3cret")
	if code != 1 || err == nil || !strings.Contains(err.Error(), "UNAUTHENTICATED: a valid credential is needed") {
		t.Fatalf("exit %d, %v", code, err)
	}
	getenv := func(k string) string {
		return map[string]string{"FLOWSNAP_SERVER": srv.URL, "FLOWSNAP_TOKEN": "from-env"}[k]
	}
	if _, err := runCmd(t, getenv, "flows"); err == nil {
		t.Fatal("a refused request succeeded")
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(seen, []string{"Bearer s3cret", "Bearer from-env"}) {
		t.Fatalf("Authorization headers sent: %q", seen)
	}
}

// TestOpsHelpAndCompletion reads every command's help, which must show an
// example, and the shell completion the CLI library writes.
func TestOpsHelpAndCompletion(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"runs", "list"}, {"runs", "count"}, {"runs", "get"}, {"runs", "watch"}, {"flows"}} {
		out, err := runCmd(t, noEnv, append(args, "--help")...)
		if err != nil || !strings.Contains(out, "Examples:\n      flowsnap "+strings.Join(args, " ")) || !strings.Contains(out, "FLOWSNAP_SERVER") {
			t.Errorf("flowsnap %s --help: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	if out, _ := runCmd(t, noEnv, "runs", "list", "--help"); !strings.Contains(out, "snapshot of its own") {
		t.Errorf("list --help does not say each page is its own snapshot:\n%s", out)
	}
	out, err := runCmd(t, noEnv, "completion", "bash")
	if err != nil || !strings.Contains(out, "flowsnap") || !strings.Contains(out, "complete") {
		t.Fatalf("completion bash: %v\n%s", err, out)
	}
}

// TestOpsGetCountsChildrenAcrossPages counts the children of a run with
// more children than a page holds.
func TestOpsGetCountsChildrenAcrossPages(t *testing.T) {
	t.Parallel()
	dsn := storetest.DSN(t, store.SQLite)
	db := storetest.OpenDSN(t, dsn, true)
	ctx := context.Background()
	w := engine.NewWriter(db, func() int64 { return opsT0.UnixMilli() })
	if err := w.Do(ctx, func(tx *engine.Tx) error {
		if err := tx.CreateRun(ctx, engine.NewRun{ID: "fan", FlowName: "fan"}); err != nil {
			return err
		}
		for i := range 450 {
			id := fmt.Sprintf("kid-%03d", i)
			if err := tx.CreateRun(ctx, engine.NewRun{ID: id, FlowName: "kid", Parents: []engine.ParentEdge{{ParentID: "fan", Seq: int64(i)}}}); err != nil {
				return err
			}
			if i%3 == 0 {
				if err := tx.Cancel(ctx, id); err != nil {
					return err
				}
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	addr, _ := startServe(t, noEnv, "--db", dsn)
	out := opsOK(t, "http://"+addr, "runs", "get", "fan", "-o", "table")
	if !strings.Contains(out, "\nChildren (450): 300 pending, 150 cancelled\n") {
		t.Fatalf("runs get fan:\n%s", out)
	}
}
