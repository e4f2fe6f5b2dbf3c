package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/urfave/cli/v3"

	"github.com/flowsnap/flowsnap/auth"
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

const (
	dockerfile  = "Dockerfile"
	systemdUnit = "deploy/systemd/flowsnap.service"
	kubeDir     = "deploy/kubernetes"
)

// systemdAnalyze returns the path of systemd-analyze, skipping the test
// without it (failing it under CI=true).
func systemdAnalyze(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("systemd-analyze")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("systemd-analyze is required in CI (Debian package systemd): %v", err)
		}
		t.Skipf("systemd-analyze not found (Debian package systemd): %v", err)
	}
	return p
}

// TestSystemdUnitVerifiesAndIsHardened runs systemd-analyze verify on the
// unit (its binary path pointed at one that exists here), which fails on
// any complaint, and systemd-analyze security, which fails above an
// exposure of 2 of 10.
func TestSystemdUnitVerifiesAndIsHardened(t *testing.T) {
	t.Parallel()
	tool := systemdAnalyze(t)
	raw, err := os.ReadFile(systemdUnit)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"DynamicUser=yes", "ProtectSystem=strict", "NoNewPrivileges=yes", "ExecReload=/bin/kill -HUP $MAINPID"} {
		if !bytes.Contains(raw, []byte("\n"+want+"\n")) {
			t.Errorf("the unit lacks %s", want)
		}
	}
	unit := filepath.Join(t.TempDir(), "flowsnap.service")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(unit, bytes.ReplaceAll(raw, []byte("/usr/local/bin/flowsnap"), []byte(exe)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(tool, "verify", unit).CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
	out, err = exec.Command(tool, "security", "--offline=true", "--threshold=20", unit).CombinedOutput()
	if err != nil {
		t.Errorf("systemd-analyze security: exposure above 2.0: %v\n%s", err, out)
	}
}

// twinsOf returns the environment twins of every flag of the commands
// named, and each command's flag names.
func twinsOf(t *testing.T, names ...string) (twins map[string]bool, flags map[string]bool) {
	t.Helper()
	twins, flags = map[string]bool{}, map[string]bool{}
	root := newCommand(func(string) string { return "" }, io.Discard, nil)
	for _, cmd := range root.Commands {
		if !slices.Contains(names, cmd.Name) {
			continue
		}
		for _, f := range cmd.Flags {
			flags[f.Names()[0]] = true
			if s, ok := f.(interface{ GetEnvVars() []string }); ok {
				for _, k := range s.GetEnvVars() {
					twins[k] = true
				}
			}
		}
	}
	return twins, flags
}

// envNames are the FLOWSNAP_* names a file sets.
var envNames = regexp.MustCompile(`\bFLOWSNAP_[A-Z_]+\b`)

// TestDeployFilesNameOnlyFlagsThatExist holds the Dockerfile, the unit and
// the manifests to the command line: every FLOWSNAP_* they set is a flag's
// twin of serve or healthcheck, and every command they run exists.
func TestDeployFilesNameOnlyFlagsThatExist(t *testing.T) {
	t.Parallel()
	twins, _ := twinsOf(t, "serve", "healthcheck")
	files := []string{dockerfile, systemdUnit}
	kube, _ := filepath.Glob(filepath.Join(kubeDir, "*.yaml"))
	if len(kube) == 0 {
		t.Fatalf("no manifests in %s", kubeDir)
	}
	for _, f := range append(files, kube...) {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range envNames.FindAllString(string(raw), -1) {
			if !twins[name] {
				t.Errorf("%s names %s, the twin of no flag of serve or healthcheck", f, name)
			}
		}
	}
	raw, err := os.ReadFile(dockerfile)
	if err != nil {
		t.Fatal(err)
	}
	df := string(raw)
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^FROM \S+ AS build$`),
		regexp.MustCompile(`(?m)^RUN CGO_ENABLED=0 go build .* -o /out/flowsnap \.$`),
		regexp.MustCompile(`(?m)^USER 65532:65532$`),
		regexp.MustCompile(`(?m)^HEALTHCHECK .*\n\s+CMD \["/usr/local/bin/flowsnap", "healthcheck"\]$`),
		regexp.MustCompile(`(?m)^CMD \["serve"\]$`),
	} {
		if !want.MatchString(df) {
			t.Errorf("the Dockerfile has no line matching %s", want)
		}
	}
	stages := regexp.MustCompile(`(?m)^FROM (\S+)`).FindAllStringSubmatch(df, -1)
	if len(stages) < 2 || !strings.HasPrefix(stages[len(stages)-1][1], "gcr.io/distroless/static") {
		t.Errorf("stages %v: want a build stage and a final static distroless one", stages)
	}
	root := newCommand(func(string) string { return "" }, io.Discard, nil)
	for _, name := range []string{"serve", "healthcheck"} {
		if !slices.ContainsFunc(root.Commands, func(c *cli.Command) bool { return c.Name == name }) {
			t.Errorf("no command %s", name)
		}
	}
}

type manifest struct {
	Kind     string `yaml:"kind"`
	Metadata struct {
		Name string `yaml:"name"`
	} `yaml:"metadata"`
	StringData map[string]string `yaml:"stringData"`
	Spec       struct {
		Selector struct {
			MatchLabels map[string]string `yaml:"matchLabels"`
		} `yaml:"selector"`
		Ports []struct {
			Name       string `yaml:"name"`
			TargetPort string `yaml:"targetPort"`
		} `yaml:"ports"`
		Template struct {
			Metadata struct {
				Labels map[string]string `yaml:"labels"`
			} `yaml:"metadata"`
			Spec struct {
				SecurityContext struct {
					RunAsNonRoot bool `yaml:"runAsNonRoot"`
				} `yaml:"securityContext"`
				Containers []container `yaml:"containers"`
				Volumes    []struct {
					Name   string `yaml:"name"`
					Secret struct {
						SecretName string `yaml:"secretName"`
					} `yaml:"secret"`
				} `yaml:"volumes"`
			} `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

type probe struct {
	HTTPGet struct {
		Path string `yaml:"path"`
		Port string `yaml:"port"`
	} `yaml:"httpGet"`
}

type container struct {
	Env []struct {
		Name  string `yaml:"name"`
		Value string `yaml:"value"`
	} `yaml:"env"`
	Ports []struct {
		Name          string `yaml:"name"`
		ContainerPort int    `yaml:"containerPort"`
	} `yaml:"ports"`
	LivenessProbe   probe `yaml:"livenessProbe"`
	ReadinessProbe  probe `yaml:"readinessProbe"`
	SecurityContext struct {
		ReadOnlyRootFilesystem   bool `yaml:"readOnlyRootFilesystem"`
		AllowPrivilegeEscalation bool `yaml:"allowPrivilegeEscalation"`
	} `yaml:"securityContext"`
	VolumeMounts []struct {
		Name      string `yaml:"name"`
		MountPath string `yaml:"mountPath"`
	} `yaml:"volumeMounts"`
}

// TestKubernetesManifestsHoldTogether reads the manifests and checks what
// would only show once applied: the probes' paths and ports, the Service's
// target port, the tokens file's path inside the Secret's volume, and that
// the Secret's tokens file loads.
func TestKubernetesManifestsHoldTogether(t *testing.T) {
	t.Parallel()
	byKind := map[string]manifest{}
	files, _ := filepath.Glob(filepath.Join(kubeDir, "*.yaml"))
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var m manifest
		if err := yaml.Unmarshal(raw, &m); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		byKind[m.Kind] = m
	}
	dep, svc, sec := byKind["Deployment"], byKind["Service"], byKind["Secret"]
	if dep.Kind == "" || svc.Kind == "" || sec.Kind == "" {
		t.Fatalf("want a Deployment, a Service and a Secret, have %v", slices.Collect(func(yield func(string) bool) {
			for k := range byKind {
				if !yield(k) {
					return
				}
			}
		}))
	}
	pod := dep.Spec.Template.Spec
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers", len(pod.Containers))
	}
	c := pod.Containers[0]
	ports := map[string]int{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
	}
	if c.LivenessProbe.HTTPGet.Path != "/healthz" || c.ReadinessProbe.HTTPGet.Path != "/readyz" {
		t.Errorf("probes on %q and %q, want /healthz and /readyz", c.LivenessProbe.HTTPGet.Path, c.ReadinessProbe.HTTPGet.Path)
	}
	if !strings.HasSuffix(env["FLOWSNAP_ADDR"], ":"+strconv.Itoa(ports["http"])) || ports[c.LivenessProbe.HTTPGet.Port] != ports["http"] || ports[c.ReadinessProbe.HTTPGet.Port] != ports["http"] {
		t.Errorf("FLOWSNAP_ADDR %q, the probes' ports %q/%q and the container's ports %v disagree", env["FLOWSNAP_ADDR"], c.LivenessProbe.HTTPGet.Port, c.ReadinessProbe.HTTPGet.Port, ports)
	}
	if !strings.HasSuffix(env["FLOWSNAP_METRICS_ADDR"], ":"+strconv.Itoa(ports["metrics"])) {
		t.Errorf("FLOWSNAP_METRICS_ADDR %q is not the metrics port %d", env["FLOWSNAP_METRICS_ADDR"], ports["metrics"])
	}
	if len(svc.Spec.Ports) == 0 || ports[svc.Spec.Ports[0].TargetPort] == 0 || svc.Spec.Ports[0].TargetPort == "metrics" {
		t.Errorf("the Service targets %+v, want the http port", svc.Spec.Ports)
	}
	for k, v := range svc.Spec.Selector.MatchLabels {
		if dep.Spec.Template.Metadata.Labels[k] != v {
			t.Errorf("the Service selects %s=%s, which the pods lack", k, v)
		}
	}
	if env["FLOWSNAP_AUTH"] != auth.ModeTokens {
		t.Errorf("FLOWSNAP_AUTH %q, want tokens", env["FLOWSNAP_AUTH"])
	}
	// The tokens file is the Secret's key inside the volume it is mounted by.
	var mounted bool
	for _, vm := range c.VolumeMounts {
		for _, v := range pod.Volumes {
			if v.Name == vm.Name && v.Secret.SecretName == sec.Metadata.Name {
				for key := range sec.StringData {
					mounted = mounted || filepath.Join(vm.MountPath, key) == env["FLOWSNAP_TOKENS_FILE"]
				}
			}
		}
	}
	if !mounted {
		t.Errorf("FLOWSNAP_TOKENS_FILE %q is no key of the Secret %s as mounted", env["FLOWSNAP_TOKENS_FILE"], sec.Metadata.Name)
	}
	for key, content := range sec.StringData {
		path := filepath.Join(t.TempDir(), key)
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := auth.OpenTokens(path, nil); err != nil {
			t.Errorf("the Secret's %s: %v", key, err)
		}
	}
	if !pod.SecurityContext.RunAsNonRoot || !c.SecurityContext.ReadOnlyRootFilesystem || c.SecurityContext.AllowPrivilegeEscalation {
		t.Error("the pod may run as root, write its root filesystem or escalate")
	}
}
