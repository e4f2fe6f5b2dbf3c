package stats_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/flowsnap/flowsnap/engine"
	"github.com/flowsnap/flowsnap/snapshot"
	"github.com/flowsnap/flowsnap/stats"
	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/storetest"
	"github.com/flowsnap/flowsnap/store/vocab"
)

// t0 is the engine's and the collector's clock at the start of a test.
var t0 = time.UnixMilli(1_780_000_000_000)

var worker = vocab.Owner{HostID: "host-1", PID: 4242, Nonce: "nonce-1"}

type fixture struct {
	db    *store.DB
	ro    *store.DB
	w     *engine.Writer
	clock time.Time
}

func newFixture(t testing.TB, d store.Dialect) *fixture {
	t.Helper()
	dsn := storetest.DSN(t, d)
	f := &fixture{db: storetest.OpenDSN(t, dsn, true), ro: storetest.OpenReader(t, dsn), clock: t0}
	f.w = engine.NewWriter(f.db, func() int64 { return f.clock.UnixMilli() })
	return f
}

func (f *fixture) now() time.Time { return f.clock }

func (f *fixture) do(t testing.TB, fn func(ctx context.Context, tx *engine.Tx) error) {
	t.Helper()
	ctx := context.Background()
	if err := f.w.Do(ctx, func(tx *engine.Tx) error { return fn(ctx, tx) }); err != nil {
		t.Fatalf("engine write: %v", err)
	}
}

// seedMix writes runs of every status in flows alpha, beta and gamma at
// various ages, running runs with old and new heartbeats, and wait steps
// overdue, not yet due, without a timeout and resolved.
func (f *fixture) seedMix(t testing.TB) {
	t.Helper()
	// An hour before t0, every ten minutes something is created.
	f.clock = t0.Add(-time.Hour)
	step := func() { f.clock = f.clock.Add(10 * time.Minute) }
	f.do(t, func(ctx context.Context, tx *engine.Tx) error {
		for i, flow := range []string{"alpha", "alpha", "beta", "gamma", "alpha", "beta"} {
			if err := tx.CreateRun(ctx, engine.NewRun{ID: fmt.Sprintf("p%d", i), FlowName: flow}); err != nil {
				return err
			}
			step()
		}
		return nil
	})
	f.clock = t0.Add(-20 * time.Minute)
	f.do(t, func(ctx context.Context, tx *engine.Tx) error {
		for i, flow := range []string{"alpha", "beta", "beta", "gamma"} {
			id := fmt.Sprintf("r%d", i)
			if err := firstErr(tx.CreateRun(ctx, engine.NewRun{ID: id, FlowName: flow}), tx.Start(ctx, id, worker)); err != nil {
				return err
			}
		}
		// Runs that finish, fail, are cancelled, suspended, deleted.
		for i, flow := range []string{"alpha", "beta", "gamma", "alpha"} {
			c, x, s, d, g := "c"+fmt.Sprint(i), "x"+fmt.Sprint(i), "s"+fmt.Sprint(i), "d"+fmt.Sprint(i), "f"+fmt.Sprint(i)
			for _, id := range []string{c, x, s, d, g} {
				if err := tx.CreateRun(ctx, engine.NewRun{ID: id, FlowName: flow}); err != nil {
					return err
				}
			}
			if err := firstErr(
				tx.Start(ctx, c, worker), tx.Complete(ctx, c, nil),
				tx.Cancel(ctx, x),
				tx.Start(ctx, s, worker), tx.Wait(ctx, s, engine.Waiting{Reason: "event"}),
				tx.Delete(ctx, d),
				tx.Fail(ctx, g, engine.RunError{Message: "boom"}),
			); err != nil {
				return err
			}
			// Wait steps: overdue, due later, no timeout, overdue but satisfied.
			for j, timeout := range []int64{t0.Add(-time.Minute).UnixMilli(), t0.Add(time.Hour).UnixMilli(), 0} {
				if err := tx.AddStep(ctx, s, engine.Step{ID: fmt.Sprintf("w%d", j), Type: vocab.StepWait, EventName: "go", TimeoutAt: timeout}); err != nil {
					return err
				}
			}
			if err := tx.AddStep(ctx, s, engine.Step{ID: "late", Type: vocab.StepWait, EventName: "late", TimeoutAt: t0.Add(-2 * time.Minute).UnixMilli()}); err != nil {
				return err
			}
			if err := tx.TimeOutWait(ctx, s, "late"); err != nil {
				return err
			}
		}
		return nil
	})
	// r0 and r2 beat again two minutes before t0; r1 and r3 last beat 20
	// minutes before it.
	f.clock = t0.Add(-2 * time.Minute)
	f.do(t, func(ctx context.Context, tx *engine.Tx) error {
		return firstErr(tx.Heartbeat(ctx, "r0", worker.Nonce), tx.Heartbeat(ctx, "r2", worker.Nonce))
	})
	f.clock = t0
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// bruteForce reads every row of flows_runs and flows_steps and computes
// the workflow metrics in Go, as series name{labels} → value, folding
// flows past maxFlows into "other".
func (f *fixture) bruteForce(t testing.TB, now time.Time, staleAfter time.Duration, maxFlows int) map[string]float64 {
	t.Helper()
	ctx := context.Background()
	tx, err := f.db.BeginRead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	type run struct {
		flow, status string
		created      int64
		heartbeat    *int64
	}
	runs := map[string]run{}
	rows, err := tx.Query(ctx, `SELECT run_id, state_json, status, created_at_ms, heartbeat_at_ms FROM flows_runs`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id, state string
		var r run
		if err := rows.Scan(&id, &state, &r.status, &r.created, &r.heartbeat); err != nil {
			t.Fatal(err)
		}
		var s struct{ FlowName string }
		if err := json.Unmarshal([]byte(state), &s); err != nil {
			t.Fatal(err)
		}
		r.flow = s.FlowName
		runs[id] = r
	}
	rows.Close()
	var revision int64
	if err := tx.QueryRow(ctx, `SELECT revision FROM flows_run_source`).Scan(&revision); err != nil {
		t.Fatal(err)
	}
	// Rank flows by runs, then name.
	total := map[string]int{}
	for _, r := range runs {
		total[r.flow]++
	}
	flows := slices.Collect(maps.Keys(total))
	slices.SortFunc(flows, func(a, b string) int {
		if total[a] != total[b] {
			return total[b] - total[a]
		}
		return strings.Compare(a, b)
	})
	label := map[string]string{}
	for i, fl := range flows {
		label[fl] = fl
		if len(flows) > maxFlows && (i >= maxFlows || fl == stats.Other) {
			label[fl] = stats.Other
		}
	}
	want := map[string]float64{
		"flowsnap_store_revision":                  float64(revision),
		"flowsnap_stats_refresh_timestamp_seconds": float64(now.UnixNano()) / 1e9,
	}
	oldest := map[string]int64{}
	for _, r := range runs {
		fl := label[r.flow]
		for _, st := range vocab.Statuses {
			want[fmt.Sprintf("flowsnap_runs{flow=%q,status=%q}", fl, st)] += 0
		}
		want[fmt.Sprintf("flowsnap_runs{flow=%q,status=%q}", fl, r.status)]++
		want[fmt.Sprintf("flowsnap_runs_stale{flow=%q}", fl)] += 0
		want[fmt.Sprintf("flowsnap_overdue_waits{flow=%q}", fl)] += 0
		if r.status == "running" && *r.heartbeat < now.Add(-staleAfter).UnixMilli() {
			want[fmt.Sprintf("flowsnap_runs_stale{flow=%q}", fl)]++
		}
		if r.status == "pending" {
			if o, ok := oldest[fl]; !ok || r.created < o {
				oldest[fl] = r.created
			}
		}
	}
	for fl, created := range oldest {
		want[fmt.Sprintf("flowsnap_oldest_pending_run_age_seconds{flow=%q}", fl)] = float64(now.UnixMilli()-created) / 1e3
	}
	steps, err := tx.Query(ctx, `SELECT run_id, type, state, timeout_at_ms FROM flows_steps`)
	if err != nil {
		t.Fatal(err)
	}
	defer steps.Close()
	for steps.Next() {
		var id, typ string
		var state *string
		var timeout *int64
		if err := steps.Scan(&id, &typ, &state, &timeout); err != nil {
			t.Fatal(err)
		}
		if typ == "wait" && *state == "waiting" && timeout != nil && *timeout < now.UnixMilli() {
			want[fmt.Sprintf("flowsnap_overdue_waits{flow=%q}", label[runs[id].flow])]++
		}
	}
	return want
}

// gather collects reg and returns its workflow gauges as name{labels} →
// value (labels in name order), leaving out the refresh's own duration,
// errors and the revision's age.
func gather(t testing.TB, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetType() != dto.MetricType_GAUGE || mf.GetName() == "flowsnap_store_revision_age_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			out[series(mf.GetName(), m)] = m.GetGauge().GetValue()
		}
	}
	return out
}

func series(name string, m *dto.Metric) string {
	if len(m.GetLabel()) == 0 {
		return name
	}
	var parts []string
	for _, l := range m.GetLabel() {
		parts = append(parts, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
	}
	return name + "{" + strings.Join(parts, ",") + "}"
}

// scalar gathers one unlabelled metric of reg: a gauge's or counter's
// value, a histogram's count.
func scalar(t testing.TB, reg *prometheus.Registry, name string) (float64, bool) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		m := mf.GetMetric()[0]
		switch mf.GetType() {
		case dto.MetricType_HISTOGRAM:
			return float64(m.GetHistogram().GetSampleCount()), true
		case dto.MetricType_COUNTER:
			return m.GetCounter().GetValue(), true
		default:
			return m.GetGauge().GetValue(), true
		}
	}
	return 0, false
}

func diff(t *testing.T, got, want map[string]float64) {
	t.Helper()
	for k, w := range want {
		g, ok := got[k]
		switch {
		case !ok:
			t.Errorf("%s missing, want %v", k, w)
		case abs(g-w) > 1e-3:
			t.Errorf("%s = %v, want %v", k, g, w)
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("%s = %v, not in the brute-force count", k, g)
		}
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

func newCollector(f *fixture, opts stats.Options) (*stats.Collector, *prometheus.Registry) {
	opts.Now = f.now
	c := stats.New(snapshot.NewReader(f.ro), opts)
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	return c, reg
}

func TestMetricsEqualABruteForceCountAndFollowTheEngine(t *testing.T) {
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		f := newFixture(t, d)
		f.seedMix(t)
		_, reg := newCollector(f, stats.Options{Interval: time.Minute})
		want := f.bruteForce(t, f.clock, stats.DefaultStaleAfter, stats.DefaultMaxFlows)
		got := gather(t, reg)
		diff(t, got, want)
		// The rows above hold every kind of figure, so the comparison
		// cannot pass on zeros alone.
		for _, k := range []string{
			`flowsnap_runs_stale{flow="beta"}`, `flowsnap_overdue_waits{flow="alpha"}`,
			`flowsnap_oldest_pending_run_age_seconds{flow="alpha"}`, `flowsnap_runs{flow="gamma",status="failed"}`,
		} {
			if got[k] == 0 {
				t.Errorf("%s = 0: the fixture meant it to be more", k)
			}
		}
		if got[`flowsnap_runs_stale{flow="beta"}`] != 1 || got[`flowsnap_overdue_waits{flow="alpha"}`] != 2 ||
			got[`flowsnap_oldest_pending_run_age_seconds{flow="alpha"}`] != 3600 {
			t.Errorf("stale beta, overdue alpha, oldest pending alpha = %v, %v, %v; want 1, 2, 3600",
				got[`flowsnap_runs_stale{flow="beta"}`], got[`flowsnap_overdue_waits{flow="alpha"}`], got[`flowsnap_oldest_pending_run_age_seconds{flow="alpha"}`])
		}

		// Within the interval a scrape serves the same read, even though
		// the engine has written since.
		f.do(t, func(ctx context.Context, tx *engine.Tx) error {
			return firstErr(tx.Start(ctx, "p0", worker), tx.Complete(ctx, "r0", nil),
				tx.CreateRun(ctx, engine.NewRun{ID: "n1", FlowName: "delta"}))
		})
		f.clock = t0.Add(30 * time.Second)
		if again := gather(t, reg); !maps.Equal(again, got) {
			t.Errorf("a scrape within the interval read again:\n%v\nwant\n%v", again, got)
		}
		if n, _ := scalar(t, reg, "flowsnap_stats_refresh_duration_seconds"); n != 1 {
			t.Errorf("%v refreshes within one interval, want 1", n)
		}

		// Past it, the next scrape reads what the engine wrote.
		f.clock = t0.Add(time.Minute)
		want = f.bruteForce(t, f.clock, stats.DefaultStaleAfter, stats.DefaultMaxFlows)
		got = gather(t, reg)
		diff(t, got, want)
		if got[`flowsnap_runs{flow="delta",status="pending"}`] != 1 || got[`flowsnap_runs{flow="alpha",status="completed"}`] != 3 {
			t.Errorf("after the engine's writes: delta pending %v, alpha completed %v; want 1, 3",
				got[`flowsnap_runs{flow="delta",status="pending"}`], got[`flowsnap_runs{flow="alpha",status="completed"}`])
		}
		if n, _ := scalar(t, reg, "flowsnap_stats_refresh_duration_seconds"); n != 2 {
			t.Errorf("%v refreshes after two intervals, want 2", n)
		}
	})
}

func TestFlowsPastTheMaximumFoldIntoOther(t *testing.T) {
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		f := newFixture(t, d)
		f.seedMix(t)
		_, reg := newCollector(f, stats.Options{MaxFlows: 2})
		want := f.bruteForce(t, f.clock, stats.DefaultStaleAfter, 2)
		got := gather(t, reg)
		diff(t, got, want)
		// alpha has 12 live runs, beta 8, gamma 6: gamma
		// becomes other.
		flows := map[string]bool{}
		for k := range got {
			if i := strings.Index(k, `flow="`); i >= 0 {
				flows[strings.SplitN(k[i+6:], `"`, 2)[0]] = true
			}
		}
		if wantFlows := map[string]bool{"alpha": true, "beta": true, stats.Other: true}; !maps.Equal(flows, wantFlows) {
			t.Errorf("flow labels %v, want %v", flows, wantFlows)
		}
		if got[`flowsnap_runs{flow="other",status="failed"}`] != 1 || got[`flowsnap_runs_stale{flow="other"}`] != 1 {
			t.Errorf("other: failed %v, stale %v; want gamma's 1 and 1",
				got[`flowsnap_runs{flow="other",status="failed"}`], got[`flowsnap_runs_stale{flow="other"}`])
		}
	})
}

func TestAFailedRefreshWithdrawsTheFigures(t *testing.T) {
	f := newFixture(t, store.SQLite)
	f.seedMix(t)
	c, reg := newCollector(f, stats.Options{Interval: time.Minute})
	got := gather(t, reg)
	if _, ok := got["flowsnap_store_revision"]; !ok {
		t.Fatalf("no revision after a good refresh: %v", got)
	}
	read := got["flowsnap_stats_refresh_timestamp_seconds"]
	if read != float64(t0.UnixNano())/1e9 {
		t.Errorf("refresh timestamp %v, want %v", read, float64(t0.UnixNano())/1e9)
	}
	f.ro.Close()
	if err := c.Refresh(context.Background()); err == nil {
		t.Fatal("a refresh of a closed store succeeded")
	}
	f.clock = t0.Add(time.Minute / 2)
	got = gather(t, reg)
	if len(got) != 1 || got["flowsnap_stats_refresh_timestamp_seconds"] != read {
		t.Errorf("after a failed refresh the scrape served %v; want only the timestamp of the last good read, %v", got, read)
	}
	if n, _ := scalar(t, reg, "flowsnap_stats_refresh_errors_total"); n != 1 {
		t.Errorf("refresh errors %v, want 1", n)
	}
	// A due refresh that fails again counts again, and still serves nothing.
	f.clock = t0.Add(2 * time.Minute)
	got = gather(t, reg)
	if n, _ := scalar(t, reg, "flowsnap_stats_refresh_errors_total"); n != 2 || len(got) != 1 {
		t.Errorf("after a second failure: errors %v, served %v", n, got)
	}
}

func TestTheRevisionAgeCountsFromTheLastMove(t *testing.T) {
	f := newFixture(t, store.SQLite)
	f.seedMix(t)
	_, reg := newCollector(f, stats.Options{})
	age := func() float64 {
		t.Helper()
		v, ok := scalar(t, reg, "flowsnap_store_revision_age_seconds")
		if !ok {
			t.Fatal("no flowsnap_store_revision_age_seconds")
		}
		return v
	}
	if a := age(); a != 0 {
		t.Errorf("age at the first refresh %v, want 0", a)
	}
	f.clock = t0.Add(90 * time.Second)
	if a := age(); a != 90 {
		t.Errorf("age after 90s without a write %v, want 90", a)
	}
	f.do(t, func(ctx context.Context, tx *engine.Tx) error { return tx.Cancel(ctx, "p1") })
	f.clock = t0.Add(100 * time.Second)
	if a := age(); a != 0 {
		t.Errorf("age right after a write %v, want 0", a)
	}
}
