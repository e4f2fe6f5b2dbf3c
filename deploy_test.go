package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/storetest"
)

const (
	rulesFile     = "deploy/prometheus/flowsnap-rules.yml"
	rulesTestFile = "deploy/prometheus/flowsnap-rules.test.yml"
	dashboardFile = "deploy/grafana/flowsnap.json"
)

// promtool returns the path of promtool, skipping the test without it
// (failing it under CI=true).
func promtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("promtool is required in CI (Debian package prometheus): %v", err)
		}
		t.Skipf("promtool not found (Debian package prometheus): %v", err)
	}
	return p
}

func runPromtool(t *testing.T, args ...string) {
	t.Helper()
	out, err := exec.Command(promtool(t), args...).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	t.Logf("promtool %s:\n%s", strings.Join(args, " "), out)
}

func TestAlertRulesPassPromtool(t *testing.T) {
	t.Parallel()
	runPromtool(t, "check", "rules", rulesFile)
	runPromtool(t, "test", "rules", rulesTestFile)
}

type ruleFile struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []struct {
			Alert  string `yaml:"alert"`
			Record string `yaml:"record"`
			Expr   string `yaml:"expr"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

func readRules(t *testing.T) ruleFile {
	t.Helper()
	raw, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	var rf ruleFile
	if err := yaml.Unmarshal(raw, &rf); err != nil {
		t.Fatalf("%s: %v", rulesFile, err)
	}
	return rf
}

// TestEveryAlertHasAUnitTestThatFiresIt: an alert without input series
// that make it fire is an alert nobody has seen work.
func TestEveryAlertHasAUnitTestThatFiresIt(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(rulesTestFile)
	if err != nil {
		t.Fatal(err)
	}
	var tf struct {
		Tests []struct {
			InputSeries    []struct{ Series string } `yaml:"input_series"`
			AlertRuleTests []struct {
				Alertname string `yaml:"alertname"`
				ExpAlerts []any  `yaml:"exp_alerts"`
			} `yaml:"alert_rule_test"`
		} `yaml:"tests"`
	}
	if err := yaml.Unmarshal(raw, &tf); err != nil {
		t.Fatalf("%s: %v", rulesTestFile, err)
	}
	fired := map[string]bool{}
	for _, tc := range tf.Tests {
		if len(tc.InputSeries) == 0 {
			continue
		}
		for _, a := range tc.AlertRuleTests {
			if len(a.ExpAlerts) > 0 {
				fired[a.Alertname] = true
			}
		}
	}
	var alerts []string
	for _, g := range readRules(t).Groups {
		for _, r := range g.Rules {
			if r.Alert != "" {
				alerts = append(alerts, r.Alert)
				if !fired[r.Alert] {
					t.Errorf("alert %s: no unit test with input series expects it to fire", r.Alert)
				}
			}
		}
	}
	// What the rules are for: each must be there.
	for _, want := range []string{"FlowsnapStuckRuns", "FlowsnapPendingBacklogOld", "FlowsnapFailureRatioHigh",
		"FlowsnapStoreNotMoving", "FlowsnapNotReady", "FlowsnapReplicaLagging", "FlowsnapRefusalsSpike"} {
		if !slices.Contains(alerts, want) {
			t.Errorf("no alert %s among %v", want, alerts)
		}
	}
}

// dashboardQueries returns every PromQL expression of the dashboard: its
// panels' targets and its variables' queries.
func dashboardQueries(t *testing.T) []string {
	t.Helper()
	raw, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Definition string `json:"definition"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	var exprs []string
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			exprs = append(exprs, tg.Expr)
		}
	}
	for _, v := range d.Templating.List {
		if v.Definition != "" {
			exprs = append(exprs, v.Definition)
		}
	}
	if len(exprs) < 20 {
		t.Fatalf("only %d queries in %s", len(exprs), dashboardFile)
	}
	return exprs
}

// TestDashboardQueriesParse hands every panel query to promtool as a
// recording rule, Grafana's variables replaced by values, so that a query
// Prometheus would refuse fails here.
func TestDashboardQueriesParse(t *testing.T) {
	t.Parallel()
	vars := strings.NewReplacer("$__rate_interval", "5m", "$job", ".*", "$flow", ".*")
	var b strings.Builder
	b.WriteString("groups:\n  - name: dashboard\n    rules:\n")
	n := 0
	for _, e := range dashboardQueries(t) {
		if strings.HasPrefix(e, "label_values(") {
			continue
		}
		n++
		q, _ := json.Marshal(vars.Replace(e)) // a JSON string is a YAML string
		fmt.Fprintf(&b, "      - record: dashboard:query%d\n        expr: %s\n", n, q)
	}
	path := filepath.Join(t.TempDir(), "dashboard-rules.yml")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	runPromtool(t, "check", "rules", path)
}

// metricName finds the flowsnap metrics a query names.
var metricName = regexp.MustCompile(`\bflowsnap_[a-z0-9_]+`)

// TestRulesAndDashboardNameOnlyExportedMetrics scrapes a real server, after
// an operation, a refusal and a refresh of the workflow metrics, and fails
// when an alert rule or a dashboard query names a metric it does not
// export (histograms by their _bucket, _sum and _count series).
func TestRulesAndDashboardNameOnlyExportedMetrics(t *testing.T) {
	t.Parallel()
	dsn := storetest.DSN(t, store.SQLite)
	if out, err := runCmd(t, noEnv, "migrate", "--db", dsn); err != nil {
		t.Fatalf("migrate: %v\n%s", err, out)
	}
	if out, err := runCmd(t, noEnv, "seed", "--db", dsn, "--runs", "200"); err != nil {
		t.Fatalf("seed: %v\n%s", err, out)
	}
	addr, stop := startServe(t, noEnv, "--db", dsn)
	base := "http://" + addr
	for _, body := range []string{`{"query":"{ position { revision } }"}`, `{"query":"{"}`} {
		res, err := http.Post(base+"/graphql", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
	}
	_, metrics := httpGet(t, base+"/metrics")
	exported := map[string]bool{}
	for _, line := range strings.Split(metrics, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		exported[strings.FieldsFunc(line, func(r rune) bool { return r == '{' || r == ' ' })[0]] = true
	}
	// The replicas' metrics have a series per replica, and this server has
	// none: their names come from the collector's descriptions.
	descs := make(chan *prometheus.Desc, 10)
	replicaCollector{}.Describe(descs)
	close(descs)
	fqName := regexp.MustCompile(`fqName: "([^"]+)"`)
	for d := range descs {
		m := fqName.FindStringSubmatch(d.String())
		if m == nil {
			t.Fatalf("no name in %s", d)
		}
		exported[m[1]] = true
	}
	// Every workflow metric is exported, once refreshed.
	for _, name := range []string{"flowsnap_runs", "flowsnap_runs_stale", "flowsnap_oldest_pending_run_age_seconds",
		"flowsnap_overdue_waits", "flowsnap_store_revision", "flowsnap_store_revision_age_seconds",
		"flowsnap_stats_refresh_timestamp_seconds", "flowsnap_stats_refresh_duration_seconds_bucket",
		"flowsnap_stats_refresh_errors_total", "flowsnap_ready"} {
		if !exported[name] {
			t.Errorf("/metrics lacks %s", name)
		}
	}

	named := map[string][]string{}
	for _, g := range readRules(t).Groups {
		for _, r := range g.Rules {
			for _, m := range metricName.FindAllString(r.Expr, -1) {
				named[m] = append(named[m], rulesFile+" "+r.Alert+r.Record)
			}
		}
	}
	for _, e := range dashboardQueries(t) {
		for _, m := range metricName.FindAllString(e, -1) {
			named[m] = append(named[m], dashboardFile)
		}
	}
	if len(named) < 15 {
		t.Fatalf("the rules and the dashboard name only %d metrics: %v", len(named), named)
	}
	for m, where := range named {
		if !exported[m] {
			t.Errorf("%s names %s, which the server does not export", slices.Compact(where), m)
		}
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}
