package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flowsnap/flowsnap/engine"
	"github.com/flowsnap/flowsnap/snapshot"
	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/pgreplica"
	"github.com/flowsnap/flowsnap/store/storetest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	pgreplica.StopShared()
	os.Exit(code)
}

// replicated is an engine store on a primary with a streaming standby.
type replicated struct {
	pair             *pgreplica.Pair
	primary, standby string
	db               *store.DB
	w                *engine.Writer
	runs             int
}

func newReplicated(t *testing.T) *replicated {
	t.Helper()
	pair := pgreplica.Shared(t)
	name := pair.NewDatabase(t)
	r := &replicated{pair: pair, primary: pair.PrimaryDSN(name), standby: pair.StandbyDSN(name)}
	r.db = storetest.OpenDSN(t, r.primary, true)
	r.w = engine.NewWriter(r.db, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := r.w.CreateRun(ctx, engine.NewRun{ID: "parent", FlowName: "fan-out"}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		r.addChild(t)
	}
	r.caughtUp(t)
	return r
}

// addChild writes one more child of run parent: two revisions.
func (r *replicated) addChild(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r.runs++
	id := fmt.Sprintf("child-%03d", r.runs)
	if err := r.w.CreateRun(ctx, engine.NewRun{ID: id, FlowName: "leaf", Parents: []engine.ParentEdge{{ParentID: "parent", Seq: int64(r.runs)}}}); err != nil {
		t.Fatal(err)
	}
}

func (r *replicated) caughtUp(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := r.pair.WaitCaughtUp(ctx); err != nil {
		t.Fatal(err)
	}
}

func (r *replicated) pause(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := r.pair.PauseReplay(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.pair.ResumeReplay(context.Background()) })
}

func (r *replicated) resume(t *testing.T) {
	t.Helper()
	if err := r.pair.ResumeReplay(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func (r *replicated) revision(t *testing.T) int64 {
	t.Helper()
	return revisionOf(t, r.db)
}

// serveReplicated starts flowsnap on the primary with the standby as its
// replica, checking it often so tests need not wait.
func (r *replicated) serve(t *testing.T, args ...string) string {
	t.Helper()
	addr, stop := startServe(t, noEnv, append([]string{"--db", r.primary, "--replica", r.standby, "--replica-check-interval", "20ms"}, args...)...)
	t.Cleanup(func() { _ = stop() })
	return "http://" + addr
}

type gqlAnswer struct {
	Data       map[string]json.RawMessage `json:"data"`
	Errors     []gqlError                 `json:"errors"`
	Extensions struct {
		Position *struct {
			Source   string `json:"source"`
			Revision int64  `json:"revision"`
		} `json:"position"`
	} `json:"extensions"`
}

type gqlError struct {
	Message    string         `json:"message"`
	Extensions map[string]any `json:"extensions"`
}

// post sends query (with extensions, when set) and, when min ≥ 0, the
// minimum revision header.
func post(t *testing.T, base, query string, min int64, extensions map[string]any) gqlAnswer {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"query": query, "extensions": extensions})
	req, _ := http.NewRequest(http.MethodPost, base+"/graphql", strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	if min >= 0 {
		req.Header.Set("Flowsnap-Min-Revision", strconv.FormatInt(min, 10))
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var a gqlAnswer
	if err := json.NewDecoder(res.Body).Decode(&a); err != nil {
		t.Fatal(err)
	}
	return a
}

func (a gqlAnswer) revision(t *testing.T) int64 {
	t.Helper()
	if a.Extensions.Position == nil || len(a.Errors) > 0 {
		t.Fatalf("no position in the answer: %+v", a)
	}
	return a.Extensions.Position.Revision
}

func (a gqlAnswer) code() string {
	if len(a.Errors) == 0 {
		return ""
	}
	c, _ := a.Errors[0].Extensions["code"].(string)
	return c
}

const positionQuery = `{ position { revision } }`

func TestReadsLandOnTheStandby(t *testing.T) {
	r := newReplicated(t)
	base := r.serve(t)
	behind := r.revision(t)
	r.pause(t)
	r.addChild(t)
	ahead := r.revision(t)
	// The standby stays at behind while replay is paused: a read that
	// answers behind was read there, not on the primary.
	if got := post(t, base, positionQuery, -1, nil).revision(t); got != behind {
		t.Fatalf("a read without a minimum answered at revision %d; the standby is at %d, the primary at %d", got, behind, ahead)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, body := httpGet(t, base+"/readyz")
		_, metrics := httpGet(t, base+"/metrics")
		want := fmt.Sprintf("lag %d revisions", ahead-behind)
		if strings.Contains(body, want) && strings.Contains(metrics, fmt.Sprintf(`flowsnap_replica_lag_revisions{replica="1"} %d`, ahead-behind)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz and /metrics do not report the lag (want %q):\n%s\n%s", want, body, grepLines(metrics, "flowsnap_replica"))
		}
		time.Sleep(20 * time.Millisecond)
	}
	r.resume(t)
	r.caughtUp(t)
	deadline = time.Now().Add(10 * time.Second)
	for post(t, base, positionQuery, -1, nil).revision(t) != ahead {
		if time.Now().After(deadline) {
			t.Fatal("reads never reached the primary's revision after replay resumed")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestAMinimumAheadOfTheStandbyWaitsThenReadsThePrimary(t *testing.T) {
	r := newReplicated(t)
	base := r.serve(t, "--stale-wait", "300ms")
	behind := r.revision(t)
	r.pause(t)
	r.addChild(t)
	ahead := r.revision(t)
	start := time.Now()
	a := post(t, base, positionQuery, ahead, nil)
	if got := a.revision(t); got < ahead {
		t.Fatalf("a read with minimum %d answered at %d", ahead, got)
	}
	if took := time.Since(start); took < 300*time.Millisecond {
		t.Fatalf("the read answered from the primary after %s, before --stale-wait", took)
	}
	// extensions.minRevision works as the header does.
	if got := post(t, base, positionQuery, -1, map[string]any{"minRevision": ahead}).revision(t); got < ahead {
		t.Fatalf("a read with extensions.minRevision %d answered at %d", ahead, got)
	}
	// A change feed's since is a minimum too: a standby behind it must
	// not answer SOURCE_CHANGED.
	feed := post(t, base, fmt.Sprintf(`{ changes(since: %d) { nextRevision } }`, ahead), -1, nil)
	if got := feed.revision(t); got < ahead {
		t.Fatalf("changes(since: %d) answered at %d", ahead, got)
	}
	// A minimum the standby has is read there at once.
	if got := post(t, base, positionQuery, behind, nil).revision(t); got != behind {
		t.Fatalf("a read with minimum %d answered at %d, want the standby's %d", behind, got, behind)
	}
}

func TestAMinimumAheadOfTheStandbyIsStaleWhenThePrimaryIsNotRead(t *testing.T) {
	r := newReplicated(t)
	base := r.serve(t, "--stale-wait", "200ms", "--stale-from-primary=false")
	behind := r.revision(t)
	r.pause(t)
	r.addChild(t)
	ahead := r.revision(t)
	a := post(t, base, positionQuery, ahead, nil)
	if a.code() != "STALE" {
		t.Fatalf("got %+v, want STALE", a)
	}
	ext := a.Errors[0].Extensions
	if ext["availableRevision"] != float64(behind) || ext["minRevision"] != float64(ahead) {
		t.Fatalf("STALE extensions = %v, want availableRevision %d and minRevision %d", ext, behind, ahead)
	}
	// Replay catches up, and the same request is answered.
	r.resume(t)
	r.caughtUp(t)
	if got := post(t, base, positionQuery, ahead, nil).revision(t); got < ahead {
		t.Fatalf("after replay resumed, minimum %d answered at %d", ahead, got)
	}
}

func TestAMinimumAboveThePrimaryIsSourceChanged(t *testing.T) {
	r := newReplicated(t)
	base := r.serve(t)
	rev := r.revision(t)
	a := post(t, base, positionQuery, rev+1000, nil)
	if a.code() != "SOURCE_CHANGED" {
		t.Fatalf("got %+v, want SOURCE_CHANGED", a)
	}
	for _, bad := range []string{"-1", "x", "9007199254740992"} {
		req, _ := http.NewRequest(http.MethodPost, base+"/graphql", strings.NewReader(`{"query":"{ position { revision } }"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Flowsnap-Min-Revision", bad)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var ans gqlAnswer
		_ = json.NewDecoder(res.Body).Decode(&ans)
		res.Body.Close()
		if ans.code() != "BAD_USER_INPUT" {
			t.Errorf("header %q: got %+v, want BAD_USER_INPUT", bad, ans)
		}
	}
	if a := post(t, base, positionQuery, -1, map[string]any{"minRevision": "soon"}); a.code() != "BAD_USER_INPUT" {
		t.Errorf("extensions.minRevision \"soon\": got %+v, want BAD_USER_INPUT", a)
	}
}

const childrenQuery = `query($after: String) { run(id: "parent") { ... on Run { children(first: 1, after: $after) { edges { cursor node { ... on Run { id } } } } } } }`

func TestACursorFromAFreshInstanceIsHonouredByOneWhoseStandbyLags(t *testing.T) {
	r := newReplicated(t)
	lagging := r.serve(t, "--stale-wait", "200ms")
	addr, stop := startServe(t, noEnv, "--db", r.primary)
	t.Cleanup(func() { _ = stop() })
	fresh := "http://" + addr
	r.pause(t)
	r.addChild(t)
	ahead := r.revision(t)

	page := func(base string, after any) (gqlAnswer, string) {
		body, _ := json.Marshal(map[string]any{"query": childrenQuery, "variables": map[string]any{"after": after}})
		res, err := http.Post(base+"/graphql", "application/json", strings.NewReader(string(body)))
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var a gqlAnswer
		_ = json.NewDecoder(res.Body).Decode(&a)
		var data struct {
			Children struct {
				Edges []struct{ Cursor string } `json:"edges"`
			} `json:"children"`
		}
		_ = json.Unmarshal(a.Data["run"], &data)
		if len(data.Children.Edges) == 0 {
			return a, ""
		}
		return a, data.Children.Edges[0].Cursor
	}
	first, c := page(fresh, nil)
	if first.revision(t) != ahead || c == "" {
		t.Fatalf("the fresh instance answered %+v", first)
	}
	second, _ := page(lagging, c)
	if got := second.revision(t); got < ahead {
		t.Fatalf("page 2 was read at revision %d, older than page 1's %d", got, ahead)
	}
}

func TestTwoInstancesBehindARoundRobinNeverGoBackInTime(t *testing.T) {
	r := newReplicated(t)
	// One instance reads the standby, the other the primary, which is as
	// far apart as two instances' replicas can be.
	a := r.serve(t, "--stale-wait", "50ms")
	addr, stop := startServe(t, noEnv, "--db", r.primary)
	t.Cleanup(func() { _ = stop() })
	b := "http://" + addr
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	wg.Go(func() {
		// The engine writes while replay pauses and resumes, so the
		// standby falls behind and catches up over and over.
		for i := 0; ctx.Err() == nil; i++ {
			id := fmt.Sprintf("rr-%d", i)
			_ = r.w.CreateRun(ctx, engine.NewRun{ID: id, FlowName: "leaf"})
			switch i % 20 {
			case 5:
				_ = r.pair.PauseReplay(ctx)
			case 15:
				_ = r.pair.ResumeReplay(ctx)
			}
			time.Sleep(5 * time.Millisecond)
		}
	})
	var last int64
	requests, moved := 0, 0
	for ctx.Err() == nil && requests < 5000 {
		base := []string{a, b}[requests%2]
		got := post(t, base, positionQuery, last, nil).revision(t)
		if got < last {
			t.Fatalf("request %d went back in time: revision %d after %d", requests, got, last)
		}
		if got > last {
			moved++
		}
		last = got
		requests++
	}
	cancel()
	wg.Wait()
	_ = r.pair.ResumeReplay(context.Background())
	if moved < 3 {
		t.Fatalf("the revision moved only %d times in %d requests: the test did not exercise writes", moved, requests)
	}
	t.Logf("%d requests, the revision moved %d times, last %d", requests, moved, last)
}

func TestWithoutReplicasAMinimumIsMetOrSourceChanged(t *testing.T) {
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		dsn := storetest.DSN(t, d)
		db := storetest.OpenDSN(t, dsn, true)
		w := engine.NewWriter(db, nil)
		if err := w.CreateRun(context.Background(), engine.NewRun{ID: "only", FlowName: "f"}); err != nil {
			t.Fatal(err)
		}
		addr, stop := startServe(t, noEnv, "--db", dsn)
		t.Cleanup(func() { _ = stop() })
		base := "http://" + addr
		rev := post(t, base, positionQuery, -1, nil).revision(t)
		if got := post(t, base, positionQuery, rev, nil).revision(t); got != rev {
			t.Fatalf("minimum %d answered at %d", rev, got)
		}
		start := time.Now()
		a := post(t, base, positionQuery, rev+1, nil)
		if a.code() != "SOURCE_CHANGED" || a.Errors[0].Extensions["revision"] != float64(rev) {
			t.Fatalf("minimum above the store: got %+v, want SOURCE_CHANGED with revision %d", a, rev)
		}
		if took := time.Since(start); took > time.Second {
			t.Errorf("a minimum no store can reach waited %s; there is nothing to wait for", took)
		}
	})
}

func TestReplicasNeedAPostgreSQLPrimary(t *testing.T) {
	dsn := storetest.DSN(t, store.SQLite)
	storetest.OpenDSN(t, dsn, true)
	out, err := runCmd(t, noEnv, "serve", "--addr", "127.0.0.1:0", "--db", dsn, "--replica", "postgres://127.0.0.1:1/x")
	if err == nil || !strings.Contains(err.Error(), "--replica needs a PostgreSQL --db") {
		t.Fatalf("serve with a SQLite primary and a replica: %v\n%s", err, out)
	}
}

func TestReplicaFlagsHaveEnvironmentTwins(t *testing.T) {
	r := newReplicated(t)
	env := map[string]string{"FLOWSNAP_DB": r.primary, "FLOWSNAP_REPLICA": r.standby + "," + r.standby, "FLOWSNAP_REPLICA_CHECK_INTERVAL": "20ms"}
	addr, stop := startServe(t, func(k string) string { return env[k] })
	t.Cleanup(func() { _ = stop() })
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, body := httpGet(t, "http://"+addr+"/readyz")
		if strings.Count(body, ": healthy") == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("FLOWSNAP_REPLICA with two replicas: /readyz says\n%s", body)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// positionEvents subscribes to the store's position over Server-Sent Events
// and sends the revision of every event on the channel it returns.
func positionEvents(t *testing.T, base string) <-chan int64 {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	body := `{"query":"subscription { position { revision } }"}`
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/graphql", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	out := make(chan int64, 1000)
	go func() {
		defer res.Body.Close()
		sc := bufio.NewScanner(res.Body)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			var ev struct {
				Data struct {
					Position struct{ Revision int64 } `json:"position"`
				} `json:"data"`
			}
			if json.Unmarshal([]byte(data), &ev) == nil && ev.Data.Position.Revision > 0 {
				out <- ev.Data.Position.Revision
			}
		}
	}()
	return out
}

// eventually polls cond every 20ms until it holds or within passes.
func eventually(t *testing.T, within time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		ok, got := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not within %s; last saw:\n%s", what, within, got)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestAReplicaPastTheLagBoundIsLeftForThePrimary(t *testing.T) {
	r := newReplicated(t)
	// The environment twin sets the bound: 3 revisions.
	env := map[string]string{"FLOWSNAP_MAX_REPLICA_LAG": "3"}
	addr, stop := startServe(t, func(k string) string { return env[k] },
		"--db", r.primary, "--replica", r.standby, "--replica-check-interval", "20ms", "--stale-wait", "5s", "--live-interval", "20ms")
	t.Cleanup(func() { _ = stop() })
	base := "http://" + addr
	behind := r.revision(t)
	events := subscribedAt(t, base, behind)
	r.pause(t)
	t.Cleanup(func() { r.resume(t) })
	r.addChild(t)
	r.addChild(t)
	ahead := r.revision(t)
	if ahead-behind <= 3 {
		t.Fatalf("the primary moved %d revisions; the test needs more than the bound", ahead-behind)
	}
	eventually(t, 5*time.Second, "the lagging standby reported unhealthy", func() (bool, string) {
		_, body := httpGet(t, base+"/readyz")
		_, metrics := httpGet(t, base+"/metrics")
		m := grepLines(metrics, "flowsnap_replica")
		want := fmt.Sprintf("unhealthy: it lags %d revisions behind the primary, more than the bound of 3", ahead-behind)
		return strings.Contains(body, want) &&
			strings.Contains(m, `flowsnap_replica_healthy{replica="1"} 0`) &&
			strings.Contains(m, fmt.Sprintf(`flowsnap_replica_lag_revisions{replica="1"} %d`, ahead-behind)), body + m
	})
	if got := post(t, base, positionQuery, -1, nil).revision(t); got != ahead {
		t.Errorf("a read without a minimum answered at revision %d, the lagging standby's; want the primary's %d", got, ahead)
	}
	start := time.Now()
	if got := post(t, base, positionQuery, ahead, nil).revision(t); got != ahead {
		t.Errorf("a read with minimum %d answered at %d", ahead, got)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("a read with a minimum waited %s for the lagging standby (--stale-wait 5s)", took)
	}
	timeout := time.After(5 * time.Second)
	for got := int64(0); got < ahead; {
		select {
		case got = <-events:
		case <-timeout:
			t.Fatalf("the subscription saw nothing past revision %d within 5s; the primary is at %d", got, ahead)
		}
	}
	r.resume(t)
	r.caughtUp(t)
	eventually(t, 10*time.Second, "the standby healthy again once caught up", func() (bool, string) {
		_, body := httpGet(t, base+"/readyz")
		return strings.Contains(body, ": healthy"), body
	})
}

// TestAReplicaLaggingLongerThanTheTimeBoundIsLeftForThePrimary pauses the
// standby's replay under a subscription and a reader: both move to the
// primary once the standby lags past the bound, well before --stale-wait
// would have let the subscription's event wait for the standby and then
// read the primary.
func TestAReplicaLaggingLongerThanTheTimeBoundIsLeftForThePrimary(t *testing.T) {
	r := newReplicated(t)
	base := r.serve(t, "--max-replica-lag", "1000,300ms", "--stale-wait", "20s", "--live-interval", "20ms")
	behind := r.revision(t)
	events := subscribedAt(t, base, behind)
	r.pause(t)
	t.Cleanup(func() { r.resume(t) })
	r.addChild(t)
	ahead := r.revision(t)
	eventually(t, 5*time.Second, "reads on the primary once the standby lags past 300ms", func() (bool, string) {
		a := post(t, base, positionQuery, -1, nil)
		_, body := httpGet(t, base+"/readyz")
		return a.revision(t) == ahead && strings.Contains(body, "more than the bound of 300ms"), body
	})
	timeout := time.After(5 * time.Second)
	for got := int64(0); got < ahead; {
		select {
		case got = <-events:
		case <-timeout:
			t.Fatalf("the subscription saw nothing past revision %d within 5s of the reads moving; the primary is at %d", got, ahead)
		}
	}
	_, metrics := httpGet(t, base+"/metrics")
	if !strings.Contains(metrics, `flowsnap_replica_lag_seconds{replica="1"} `) || strings.Contains(metrics, `flowsnap_replica_lag_seconds{replica="1"} 0`+"\n") {
		t.Errorf("the lag in time is not reported:\n%s", grepLines(metrics, "flowsnap_replica_lag"))
	}
}

func TestMaxReplicaLagIsCheckedWhenParsed(t *testing.T) {
	for _, c := range []struct {
		in   string
		want snapshot.MaxLag
		bad  bool
	}{
		{in: "1000", want: snapshot.MaxLag{Revisions: 1000}},
		{in: "5s", want: snapshot.MaxLag{Time: 5 * time.Second}},
		{in: "1000, 5s", want: snapshot.MaxLag{Revisions: 1000, Time: 5 * time.Second}},
		{in: "off"},
		{in: "0"},
		{in: "-1", bad: true},
		{in: "5s,6s", bad: true},
		{in: "ten", bad: true},
		{in: "", bad: true},
	} {
		got, err := parseMaxLag(c.in)
		if (err != nil) != c.bad || got != c.want {
			t.Errorf("parseMaxLag(%q) = %+v, %v", c.in, got, err)
		}
		if err != nil && !strings.Contains(err.Error(), "--max-replica-lag") {
			t.Errorf("parseMaxLag(%q): %v does not name the flag", c.in, err)
		}
	}
	out, err := runCmd(t, noEnv, "serve", "--db", "x.db", "--max-replica-lag", "soon")
	if err == nil || !strings.Contains(err.Error()+out, "--max-replica-lag") {
		t.Errorf("serve --max-replica-lag soon: %v\n%s", err, out)
	}
}

// subscribedAt subscribes to the position until a subscription's first
// event is at revision want, and returns that subscription's events. Until
// the server has read the store once, a subscription is refused as
// UNAVAILABLE, so it subscribes again.
func subscribedAt(t *testing.T, base string, want int64) <-chan int64 {
	t.Helper()
	var events <-chan int64
	eventually(t, 10*time.Second, "a first event", func() (bool, string) {
		events = positionEvents(t, base)
		select {
		case got := <-events:
			return got == want, fmt.Sprintf("revision %d, want %d", got, want)
		case <-time.After(time.Second):
			return false, "none"
		}
	})
	return events
}
