package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flowsnap/flowsnap/engine"
	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/storetest"
)

// clientPackages is the npm install of clients/ (its lockfile, with npm ci),
// made once per lockfile in the user's cache folder and shared by every
// test that runs a client.
var clientPackages struct {
	once sync.Once
	dir  string
	err  error
}

// requireNode skips the test when node or npm is missing, or fails it
// under CI=true.
func requireNode(t *testing.T) {
	t.Helper()
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s is missing (apt-get install -y nodejs npm)", tool)
			}
			t.Skipf("%s is missing", tool)
		}
	}
}

// installClients returns a folder whose node_modules holds the packages of
// clients/package-lock.json, running npm ci into the cache the first time a
// lockfile is seen. The folder is named by the digest of package.json and
// the lockfile and appears whole or not at all (it is installed aside and
// renamed), so concurrent test runs and interrupted installs are safe.
func installClients(t *testing.T) string {
	t.Helper()
	requireNode(t)
	clientPackages.once.Do(func() {
		clientPackages.dir, clientPackages.err = npmCI()
	})
	if clientPackages.err != nil {
		t.Fatalf("installing clients/: %v", clientPackages.err)
	}
	return clientPackages.dir
}

func npmCI() (string, error) {
	h := sha256.New()
	var files [][]byte
	for _, name := range []string{"package.json", "package-lock.json"} {
		b, err := os.ReadFile(filepath.Join("clients", name))
		if err != nil {
			return "", err
		}
		h.Write(b)
		files = append(files, b)
	}
	root, err := os.UserCacheDir()
	if err != nil {
		root = os.TempDir()
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", err
	}
	dir := filepath.Join(root, "flowsnap-clients-"+hex.EncodeToString(h.Sum(nil))[:16])
	if _, err := os.Stat(filepath.Join(dir, "node_modules")); err == nil {
		return dir, nil
	}
	tmp, err := os.MkdirTemp(root, "flowsnap-clients-install-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	for i, name := range []string{"package.json", "package-lock.json"} {
		if err := os.WriteFile(filepath.Join(tmp, name), files[i], 0o644); err != nil {
			return "", err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund")
	cmd.Dir = tmp
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", errors.New(err.Error() + "\n" + string(out))
	}
	if err := os.Rename(tmp, dir); err != nil {
		if _, statErr := os.Stat(filepath.Join(dir, "node_modules")); statErr == nil {
			return dir, nil // another test run installed it first
		}
		return "", err
	}
	return dir, nil
}

// clientFiles are the scripts and documents of clients/ a test runs: not
// what npm or relay-compiler write there.
var clientFiles = []string{"*.mjs", "relay/relay.config.json", "relay/src/*.ts"}

// clientWorkdir copies clientFiles to a temporary folder beside a link to
// the installed node_modules, so that a test's outputs never land in the
// tree.
func clientWorkdir(t *testing.T) string {
	t.Helper()
	modules := filepath.Join(installClients(t), "node_modules")
	work := t.TempDir()
	for _, pattern := range clientFiles {
		paths, _ := filepath.Glob(filepath.Join("clients", pattern))
		if len(paths) == 0 {
			t.Fatalf("clients/%s matches nothing", pattern)
		}
		for _, path := range paths {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			rel, _ := filepath.Rel("clients", path)
			if err := os.MkdirAll(filepath.Dir(filepath.Join(work, rel)), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(work, rel), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := os.Symlink(modules, filepath.Join(work, "node_modules")); err != nil {
		t.Fatal(err)
	}
	return work
}

// runNode runs node with args in dir and returns its standard output,
// failing the test when it exits non-zero.
func runNode(t *testing.T, dir string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", args...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node %s: %v\n%s\n%s", args[0], err, stderr.String(), stdout.String())
	}
	return stdout.Bytes()
}

// gqlPost runs a query against url and returns its decoded answer.
func gqlPost(t *testing.T, url, query string, vars map[string]any) (data map[string]any, errs []any) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/graphql-response+json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out struct {
		Data   map[string]any `json:"data"`
		Errors []any          `json:"errors"`
	}
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil {
		t.Fatalf("%d: %v", res.StatusCode, err)
	}
	return out.Data, out.Errors
}

// withoutTypename is v without its __typename members, which clients add
// to every selection.
func withoutTypename(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, x := range v {
			if k != "__typename" {
				out[k] = withoutTypename(x)
			}
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = withoutTypename(x)
		}
		return out
	}
	return v
}

// clientQuery reads a run and its first children through named fragments
// on the Snapshot union, and the steps of two runs through a fragment on
// the Step interface: two runs with a step id in common, whose steps differ.
const clientQuery = `query RunPage($id: ID!, $pair: [ID!]!) {
  run(id: $id) { ...RunSnapshot }
  runs(ids: $pair) { ...StepsOf }
}
fragment RunSnapshot on Snapshot {
  ... on Run {
    id status flowName createdAt
    children(first: 3) { edges { cursor node { ...ChildSnapshot } } pageInfo { hasNextPage hasPreviousPage startCursor endCursor } }
  }
  ... on MissingRun { id deleted }
}
fragment ChildSnapshot on Snapshot {
  ... on Run { id status }
  ... on MissingRun { id deleted }
}
fragment StepsOf on Snapshot {
  ... on Run { id steps(first: 50) { nodes { ...StepFields } } }
}
fragment StepFields on Step {
  id state createdAt
  ... on RunStep { attemptCount }
}`

// demoRuns is what the client tests read from the seeded store.
type demoRuns struct {
	// parent has at least two children.
	parent   string
	children []string
	// pair are two runs with a step id in common whose steps differ.
	pair [2]string
}

// serveDemo serves a store seeded as the demo seeds it and finds the runs
// the client tests read.
func serveDemo(t *testing.T) (string, demoRuns) {
	t.Helper()
	dsn := storetest.DSN(t, store.SQLite)
	db := storetest.OpenDSN(t, dsn, true)
	if _, err := engine.Seed(context.Background(), db, engine.SeedOptions{Runs: 400, Seed: 1}); err != nil {
		t.Fatal(err)
	}
	addr, _ := startServe(t, noEnv, "--db", dsn)
	url := "http://" + addr + "/graphql"
	data, errs := gqlPost(t, url, `{ listRuns(first: 200) { nodes { ... on Run { id
		children(first: 3) { nodes { ... on Run { id } } }
		steps(first: 50) { nodes { id state } } } } } }`, nil)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	var runs demoRuns
	type step struct{ run, state string }
	seen := map[string]step{}
	for _, n := range data["listRuns"].(map[string]any)["nodes"].([]any) {
		run := n.(map[string]any)
		id := run["id"].(string)
		if kids := run["children"].(map[string]any)["nodes"].([]any); runs.parent == "" && len(kids) >= 2 {
			runs.parent = id
			for _, k := range kids {
				runs.children = append(runs.children, k.(map[string]any)["id"].(string))
			}
		}
		for _, s := range run["steps"].(map[string]any)["nodes"].([]any) {
			s := s.(map[string]any)
			sid, st := s["id"].(string), step{id, s["state"].(string)}
			if prev, ok := seen[sid]; ok && runs.pair[0] == "" && prev.state != st.state {
				runs.pair = [2]string{prev.run, id}
			}
			seen[sid] = st
		}
	}
	if runs.parent == "" || runs.pair[0] == "" {
		t.Fatalf("the seeded store lacks a run with two children (%q) or two runs with a step id in common (%v)", runs.parent, runs.pair)
	}
	return url, runs
}

// TestClientsAgainstAServedStore runs the JavaScript clients docs/clients.md
// documents, set up as it says, against a served store: relay-compiler
// accepts @connection on every connection and @refetchable on Run, and the
// operations it writes run; Apollo Client and urql return exactly what the
// server answers; the graphql-http audit passes. Without Node the test is
// skipped, except under CI=true.
func TestClientsAgainstAServedStore(t *testing.T) {
	work := clientWorkdir(t)
	url, runs := serveDemo(t)
	vars := map[string]any{"id": runs.parent, "pair": runs.pair[:]}
	direct, errs := gqlPost(t, url, clientQuery, vars)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	want := withoutTypename(direct)

	t.Run("relay-compiler accepts every connection and a refetchable Run, and its operations run", func(t *testing.T) {
		relay := filepath.Join(work, "relay")
		sdl := runNode(t, work, "schema.mjs", url)
		if err := os.WriteFile(filepath.Join(relay, "schema.graphql"), sdl, 0o644); err != nil {
			t.Fatal(err)
		}
		out := runNode(t, relay, "../node_modules/relay-compiler/cli.js")
		if !bytes.Contains(out, []byte("Compilation completed")) {
			t.Fatalf("relay-compiler:\n%s", out)
		}
		gen := filepath.Join(relay, "src", "__generated__")
		texts := relayOperations(t, gen)
		for _, name := range []string{
			"RunPageQuery", "RunPageNodeQuery", "RunPageRefetchQuery", "RunListQuery", "RunListPaginationQuery",
			"RunPageChildrenPaginationQuery", "RunPageRoundsPaginationQuery", "RunPageStepsPaginationQuery",
			"RunPageInboundEventsPaginationQuery", "RunPageEventsPaginationQuery",
		} {
			text, ok := texts[name]
			if !ok {
				t.Errorf("relay-compiler wrote no operation %s (wrote %v)", name, slices.Sorted(maps.Keys(texts)))
				continue
			}
			data, errs := gqlPost(t, url, text, map[string]any{"id": runs.parent})
			if len(errs) > 0 || len(data) == 0 {
				t.Errorf("%s: %v %v", name, errs, data)
			}
			if strings.HasSuffix(name, "PaginationQuery") && name != "RunListPaginationQuery" || name == "RunPageRefetchQuery" {
				if node, _ := data["node"].(map[string]any); node["id"] != runs.parent {
					t.Errorf("%s: node = %v", name, data["node"])
				}
			}
		}
		// Relay's pagination query reads the next page from the cursor of
		// the last: one child at a time, in order.
		pages := texts["RunPageChildrenPaginationQuery"]
		var got []string
		cursor := any(nil)
		for range 2 {
			data, errs := gqlPost(t, url, pages, map[string]any{"id": runs.parent, "count": 1, "cursor": cursor})
			if len(errs) > 0 {
				t.Fatal(errs)
			}
			children := data["node"].(map[string]any)["children"].(map[string]any)
			got = append(got, ids(children)...)
			cursor = children["pageInfo"].(map[string]any)["endCursor"]
		}
		if !slices.Equal(got, runs.children[:2]) {
			t.Fatalf("two pages of one child = %v, want %v", got, runs.children[:2])
		}
	})

	// What each client must return as the server answers it: data (with
	// the part an error nulls) and the errors' codes. vars may be a list of
	// pages, queried in order; then the client's cache merges them, and
	// its last answer must be what the server answers to wantQuery.
	const childPage = `query($id: ID!, $first: Int = 1, $after: String) { run(id: $id) { ... on Run { id
		children(first: $first, after: $after) { edges { cursor node { ... on Run { id status } } } pageInfo { hasNextPage hasPreviousPage startCursor endCursor } } } } }`
	first, errs := gqlPost(t, url, childPage, map[string]any{"id": runs.parent})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	cursor := first["run"].(map[string]any)["children"].(map[string]any)["pageInfo"].(map[string]any)["endCursor"]
	answers := []clientCase{
		{name: "named fragments on a union and an interface", query: clientQuery, vars: vars},
		{name: "a bad cursor nulls only its connection", query: `query($id: ID!) { run(id: $id) { ... on Run { id status children(after: "bad") { nodes { __typename } } } } }`, vars: map[string]any{"id": runs.parent}},
		{name: "a document that does not validate", query: `{ nope }`, invalid: true},
		{name: "two pages of children merge into the first two", query: childPage,
			vars:      []map[string]any{{"id": runs.parent}, {"id": runs.parent, "after": cursor}},
			wantQuery: childPage, wantVars: map[string]any{"id": runs.parent, "first": 2}},
	}
	expect := func(t *testing.T, query string, vars map[string]any) (any, []string) {
		t.Helper()
		data, errs := gqlPost(t, url, query, vars)
		codes := []string{}
		for _, e := range errs {
			codes = append(codes, e.(map[string]any)["extensions"].(map[string]any)["code"].(string))
		}
		if data == nil {
			return nil, codes
		}
		return withoutTypename(data), codes
	}
	type clientAnswer struct {
		Data  map[string]any
		Codes []string
	}
	check := func(t *testing.T, client string, got clientAnswer, c clientCase) {
		t.Helper()
		q, v := c.want()
		wantData, wantCodes := expect(t, q, v)
		if len(got.Codes) == 0 {
			got.Codes = []string{}
		}
		var gotData any
		if got.Data != nil {
			gotData = withoutTypename(got.Data)
		}
		if !reflect.DeepEqual(gotData, wantData) || !slices.Equal(got.Codes, wantCodes) {
			t.Errorf("%s returned\n%v %v\nthe server answered\n%v %v", client, gotData, got.Codes, wantData, wantCodes)
		}
	}

	t.Run("Apollo Client with possibleTypes and typePolicies returns what the server answers", func(t *testing.T) {
		for i, a := range answers {
			t.Run(a.name, func(t *testing.T) {
				varsJSON, _ := json.Marshal(a.vars)
				var res struct {
					Configured                                clientAnswer
					WithoutPossibleTypes, WithoutTypePolicies map[string]any
					Warnings                                  []string
				}
				args := []string{"apollo.mjs", url, a.query, string(varsJSON)}
				if i == 0 {
					args = append(args, "--controls")
				}
				if err := json.Unmarshal(runNode(t, work, args...), &res); err != nil {
					t.Fatal(err)
				}
				check(t, "Apollo", res.Configured, a)
				if len(res.Warnings) > 0 {
					t.Errorf("Apollo warned: %q", res.Warnings)
				}
				if i > 0 {
					return
				}
				// What each part of the setup is for: without possibleTypes a
				// fragment on the union matches nothing and only __typename is
				// left; without typePolicies one run's step overwrites another's.
				if run := res.WithoutPossibleTypes["run"].(map[string]any); len(run) != 1 || run["__typename"] != "Run" {
					t.Errorf("without possibleTypes, run = %v; docs/clients.md's reason for it no longer holds", run)
				}
				if reflect.DeepEqual(withoutTypename(res.WithoutTypePolicies["runs"]), want.(map[string]any)["runs"]) {
					t.Error("without typePolicies the steps of two runs came back right; docs/clients.md's reason for them no longer holds")
				}
			})
		}
	})

	t.Run("urql with Graphcache and the schema returns what the server answers", func(t *testing.T) {
		for _, a := range answers {
			t.Run(a.name, func(t *testing.T) {
				varsJSON, _ := json.Marshal(a.vars)
				var res struct {
					clientAnswer
					NetworkError any
					Warnings     []string
				}
				if err := json.Unmarshal(runNode(t, work, "urql.mjs", url, a.query, string(varsJSON)), &res); err != nil {
					t.Fatal(err)
				}
				warned := len(res.Warnings) == 1 && strings.Contains(res.Warnings[0], "`nope` does not exist")
				if res.NetworkError != nil || len(res.Warnings) > 0 && !(a.invalid && warned) || a.invalid && !warned {
					t.Errorf("urql: network error %v, warnings %q", res.NetworkError, res.Warnings)
				}
				check(t, "urql", res.clientAnswer, a)
			})
		}
	})

	t.Run("the graphql-http audit passes", func(t *testing.T) {
		sc := bufio.NewScanner(bytes.NewReader(runNode(t, work, "audit.mjs", url)))
		passed := 0
		for sc.Scan() {
			var a struct{ ID, Name, Status, Reason string }
			if err := json.Unmarshal(sc.Bytes(), &a); err != nil {
				t.Fatalf("%v: %s", err, sc.Bytes())
			}
			switch {
			case a.Status == "ok":
				passed++
			case deliberateAuditWarnings[a.ID] != "" && a.Status == "warn":
				t.Logf("deliberate: %s %s: %s", a.ID, a.Name, deliberateAuditWarnings[a.ID])
			default:
				t.Errorf("%s %s: %s (%s)", a.Status, a.ID, a.Name, a.Reason)
			}
		}
		if passed < 40 {
			t.Fatalf("only %d audits passed", passed)
		}
	})
}

// clientCase is a query a client runs and what it must return.
type clientCase struct {
	name  string
	query string
	// vars is one object of variables, or a list: pages queried in order.
	vars any
	// invalid: the document does not validate, which Graphcache, knowing
	// the schema, warns about before sending it.
	invalid bool
	// wantQuery and wantVars, when set, ask the server for the answer the
	// client must return; else query and vars do.
	wantQuery string
	wantVars  map[string]any
}

func (c clientCase) want() (string, map[string]any) {
	if c.wantQuery != "" {
		return c.wantQuery, c.wantVars
	}
	vars, _ := c.vars.(map[string]any)
	return c.query, vars
}

// deliberateAuditWarnings are the graphql-http audits flowsnap warns on by
// design, by audit id, with the reason; docs/clients.md lists
// them too.
var deliberateAuditWarnings = map[string]string{}

// relayOperations reads the operation texts relay-compiler wrote into its
// artifacts, by operation name.
func relayOperations(t *testing.T, dir string) map[string]string {
	t.Helper()
	text := regexp.MustCompile(`"text": ("(?:[^"\\]|\\.)*")`)
	name := regexp.MustCompile(`^query (\w+)`)
	out := map[string]string{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		m := text.FindSubmatch(b)
		if m == nil {
			continue // a fragment
		}
		var s string
		if err := json.Unmarshal(m[1], &s); err != nil {
			t.Fatalf("%s: %v", e.Name(), err)
		}
		if n := name.FindStringSubmatch(s); n != nil {
			out[n[1]] = s
		}
	}
	return out
}

// TestReadmeClientSetupsAreWhatTheTestsRun holds docs/clients.md's client
// setups to the files TestClientsAgainstAServedStore runs: every code block
// of its "JavaScript clients" section appears, as written, in one of them.
func TestReadmeClientSetupsAreWhatTheTestsRun(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("docs/clients.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "\n## JavaScript clients")
	if !ok {
		t.Fatal("docs/clients.md has no JavaScript clients section")
	}
	if loc := regexp.MustCompile(`\n#{1,3} `).FindStringIndex(section); loc != nil {
		section = section[:loc[0]]
	}
	var sources []string
	for _, pattern := range clientFiles {
		paths, _ := filepath.Glob(filepath.Join("clients", pattern))
		for _, path := range paths {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			sources = append(sources, string(b))
		}
	}
	blocks := regexp.MustCompile("(?s)```(?:js|json)\n(.*?)```").FindAllStringSubmatch(section, -1)
	if len(blocks) < 4 {
		t.Fatalf("the section has %d code blocks, want the schema script, relay.config.json, Apollo's and urql's setup", len(blocks))
	}
	for _, b := range blocks {
		if !slices.ContainsFunc(sources, func(s string) bool { return strings.Contains(s, b[1]) }) {
			t.Errorf("this docs/clients.md block is in no file under clients/:\n%s", b[1])
		}
	}
}
