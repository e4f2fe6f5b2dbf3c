package explorer

import (
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

func get(t *testing.T, h http.Handler, method, target string, header http.Header) *http.Response {
	t.Helper()
	req := httptest.NewRequest(method, target, nil)
	for k, v := range header {
		req.Header[k] = v
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Result()
}

func body(t *testing.T, res *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestPage(t *testing.T) {
	h := Handler(Options{})
	res := get(t, h, http.MethodGet, "/", nil)
	page := body(t, res)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET / = %d, want 200", res.StatusCode)
	}
	if got := res.Header.Get("Content-Type"); got != "text/html; charset=utf-8" {
		t.Errorf("Content-Type = %q", got)
	}
	csp := res.Header.Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'self'", "script-src 'self'", "style-src 'self'", "connect-src 'self'", "object-src 'none'", "frame-ancestors 'none'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("Content-Security-Policy %q lacks %q", csp, want)
		}
	}
	if strings.Contains(csp, "unsafe-") {
		t.Errorf("Content-Security-Policy %q allows unsafe sources", csp)
	}
	if got := res.Header.Get("X-Content-Type-Options"); got != "nosniff" {
		t.Errorf("X-Content-Type-Options = %q", got)
	}
	if got := res.Header.Get("Cache-Control"); got != "no-cache" {
		t.Errorf("Cache-Control = %q, want no-cache", got)
	}
	if res.Header.Get("ETag") == "" {
		t.Error("no ETag")
	}
	for _, want := range []string{
		`<title>flowsnap</title>`,
		`<meta name="flowsnap-endpoint" content="/graphql">`,
		`<textarea id="query"`,
		`<textarea id="variables"`,
		`id="run"`,
		`id="next-page"`,
		`id="position"`,
		`id="example-list"`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %s", want)
		}
	}
}

// The page must not need anything a strict CSP refuses: no inline script,
// no inline style, no event handler attributes.
func TestPageHasNoInlineCode(t *testing.T) {
	page := body(t, get(t, Handler(Options{}), http.MethodGet, "/", nil))
	scripts := regexp.MustCompile(`(?is)<script\b([^>]*)>(.*?)</script>`).FindAllStringSubmatch(page, -1)
	if len(scripts) == 0 {
		t.Error("the page loads no script")
	}
	for _, m := range scripts {
		if !strings.Contains(m[1], "src=") || strings.TrimSpace(m[2]) != "" {
			t.Errorf("inline script: %q", m[0])
		}
	}
	for _, re := range []*regexp.Regexp{
		regexp.MustCompile(`(?i)<style`),
		regexp.MustCompile(`(?i)\sstyle\s*=`),
		regexp.MustCompile(`(?i)\son[a-z]+\s*=`),
		regexp.MustCompile(`(?i)javascript:`),
	} {
		if m := re.FindString(page); m != "" {
			t.Errorf("page has inline code: %q", m)
		}
	}
}

func TestOptions(t *testing.T) {
	h := Handler(Options{Title: `Ops <b>"prod"</b>`, Endpoint: "https://api.example.test:8443/v1/graphql"})
	res := get(t, h, http.MethodGet, "/", nil)
	page := body(t, res)
	if strings.Contains(page, "<b>") {
		t.Error("title is not escaped")
	}
	if !strings.Contains(page, "<title>Ops &lt;b&gt;&#34;prod&#34;&lt;/b&gt;</title>") {
		t.Error("title missing from the page")
	}
	if !strings.Contains(page, `content="https://api.example.test:8443/v1/graphql"`) {
		t.Error("endpoint missing from the page")
	}
	csp := res.Header.Get("Content-Security-Policy")
	if !strings.Contains(csp, "connect-src 'self' https://api.example.test:8443;") {
		t.Errorf("Content-Security-Policy %q does not allow the endpoint's origin", csp)
	}

	// A relative endpoint stays on this origin.
	csp = get(t, Handler(Options{Endpoint: "/api/graphql"}), http.MethodGet, "/", nil).Header.Get("Content-Security-Policy")
	if !strings.Contains(csp, "connect-src 'self';") {
		t.Errorf("Content-Security-Policy %q", csp)
	}
}

var refAttr = regexp.MustCompile(`\s(?:src|href|data-src)="([^"]*)"`)

// pageRefs returns the URLs the page references, resolved against base.
func pageRefs(t *testing.T, page string, base *url.URL) []*url.URL {
	t.Helper()
	var refs []*url.URL
	for _, m := range refAttr.FindAllStringSubmatch(page, -1) {
		ref := strings.ReplaceAll(m[1], "&amp;", "&")
		if strings.HasPrefix(ref, "data:") || strings.HasPrefix(ref, "#") {
			continue
		}
		u, err := url.Parse(ref)
		if err != nil {
			t.Fatalf("bad reference %q: %v", ref, err)
		}
		if u.IsAbs() || u.Host != "" {
			t.Errorf("page references another host: %q", ref)
			continue
		}
		refs = append(refs, base.ResolveReference(u))
	}
	return refs
}

func TestAssetsReferencedByPageAreServed(t *testing.T) {
	h := Handler(Options{})
	page := body(t, get(t, h, http.MethodGet, "/", nil))
	refs := pageRefs(t, page, &url.URL{Path: "/"})
	wantType := map[string]string{
		".js":   "text/javascript; charset=utf-8",
		".css":  "text/css; charset=utf-8",
		".json": "application/json",
	}
	seen := map[string]bool{}
	for _, u := range refs {
		res := get(t, h, http.MethodGet, u.RequestURI(), nil)
		b := body(t, res)
		if res.StatusCode != http.StatusOK || len(b) == 0 {
			t.Errorf("GET %s = %d with %d bytes", u, res.StatusCode, len(b))
			continue
		}
		ext := path.Ext(u.Path)
		seen[ext] = true
		if got := res.Header.Get("Content-Type"); got != wantType[ext] {
			t.Errorf("GET %s: Content-Type = %q, want %q", u, got, wantType[ext])
		}
		if res.Header.Get("Content-Security-Policy") == "" || res.Header.Get("ETag") == "" {
			t.Errorf("GET %s: missing CSP or ETag", u)
		}
		// The page names each asset with its content hash, so it may be
		// cached for good; the bare URL is revalidated.
		if got := res.Header.Get("Cache-Control"); !strings.Contains(got, "immutable") {
			t.Errorf("GET %s: Cache-Control = %q, want immutable", u, got)
		}
		bare := get(t, h, http.MethodGet, u.Path, nil)
		if bare.StatusCode != http.StatusOK || bare.Header.Get("Cache-Control") != "no-cache" {
			t.Errorf("GET %s: %d, Cache-Control %q", u.Path, bare.StatusCode, bare.Header.Get("Cache-Control"))
		}
		stale := get(t, h, http.MethodGet, u.Path+"?v=0000", nil)
		if stale.Header.Get("Cache-Control") != "no-cache" {
			t.Errorf("GET %s?v=0000: Cache-Control %q", u.Path, stale.Header.Get("Cache-Control"))
		}
	}
	for ext := range wantType {
		if !seen[ext] {
			t.Errorf("the page references no %s asset", ext)
		}
	}
}

func TestMountedUnderPrefix(t *testing.T) {
	h := http.StripPrefix("/ui", Handler(Options{}))
	res := get(t, h, http.MethodGet, "/ui/", nil)
	page := body(t, res)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET /ui/ = %d", res.StatusCode)
	}
	for _, u := range pageRefs(t, page, &url.URL{Path: "/ui/"}) {
		if res := get(t, h, http.MethodGet, u.RequestURI(), nil); res.StatusCode != http.StatusOK {
			t.Errorf("GET %s = %d", u, res.StatusCode)
		}
	}
}

func TestCachingAndMethods(t *testing.T) {
	h := Handler(Options{})
	for _, target := range []string{"/", "/explorer/explorer.js", "/explorer/explorer.css", "/explorer/examples.json"} {
		first := get(t, h, http.MethodGet, target, nil)
		etag := first.Header.Get("ETag")
		if etag == "" {
			t.Fatalf("GET %s: no ETag", target)
		}
		again := get(t, h, http.MethodGet, target, http.Header{"If-None-Match": {etag}})
		if again.StatusCode != http.StatusNotModified || body(t, again) != "" {
			t.Errorf("GET %s with If-None-Match = %d, want 304 and no body", target, again.StatusCode)
		}
		head := get(t, h, http.MethodHead, target, nil)
		if head.StatusCode != http.StatusOK || body(t, head) != "" || head.Header.Get("Content-Type") != first.Header.Get("Content-Type") {
			t.Errorf("HEAD %s = %d", target, head.StatusCode)
		}
		post := get(t, h, http.MethodPost, target, nil)
		if post.StatusCode != http.StatusMethodNotAllowed || post.Header.Get("Allow") != "GET, HEAD" {
			t.Errorf("POST %s = %d, Allow %q", target, post.StatusCode, post.Header.Get("Allow"))
		}
	}
	for _, target := range []string{"/index.html", "/explorer/", "/explorer/nope.js", "/explorer/../explorer.go", "/graphql"} {
		if res := get(t, h, http.MethodGet, target, nil); res.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s = %d, want 404", target, res.StatusCode)
		}
	}
}

// Everything is embedded and served from this origin: no file names a URL
// on another host, so the page works with no network at all.
func TestEmbeddedFilesAreOffline(t *testing.T) {
	remote := []*regexp.Regexp{
		regexp.MustCompile(`(?i)\b(?:https?|wss?|ftp)://`),
		regexp.MustCompile(`(?i)(?:src|href|action|data-src)\s*=\s*["']?//`),
		regexp.MustCompile(`(?i)url\(\s*["']?//`),
		regexp.MustCompile(`(?i)url\(\s*["']?[a-z]+:`),
		regexp.MustCompile(`(?i)@import`),
		regexp.MustCompile(`(?i)fetch\(\s*["'\x60]//`),
	}
	files := 0
	err := fs.WalkDir(static, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		files++
		b, err := fs.ReadFile(static, name)
		if err != nil {
			return err
		}
		for _, re := range remote {
			if m := re.Find(b); m != nil {
				t.Errorf("%s refers to another host: %q", name, m)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 4 {
		t.Fatalf("only %d embedded files", files)
	}
	page := body(t, get(t, Handler(Options{}), http.MethodGet, "/", nil))
	for _, re := range remote {
		if m := re.FindString(page); m != "" {
			t.Errorf("the served page refers to another host: %q", m)
		}
	}
}

var (
	declaredVar = regexp.MustCompile(`\$(\w+)\s*:\s*([\w\[\]!\s]+?)\s*(=|[,)])`)
	usedVar     = regexp.MustCompile(`\$(\w+)`)
)

func TestExamples(t *testing.T) {
	list := Examples()
	if len(list) == 0 {
		t.Fatal("no examples")
	}
	names := map[string]bool{}
	all := ""
	for _, e := range list {
		if strings.TrimSpace(e.Name) == "" || strings.TrimSpace(e.Query) == "" {
			t.Errorf("example %+v has no name or no query", e)
			continue
		}
		if names[e.Name] {
			t.Errorf("two examples named %q", e.Name)
		}
		names[e.Name] = true
		all += e.Query + "\n"

		var vars map[string]any
		if err := json.Unmarshal([]byte(e.Variables), &vars); err != nil || vars == nil {
			t.Errorf("%s: variables %q are not a JSON object: %v", e.Name, e.Variables, err)
			continue
		}
		if strings.Count(e.Query, "{") != strings.Count(e.Query, "}") || strings.Count(e.Query, "(") != strings.Count(e.Query, ")") {
			t.Errorf("%s: unbalanced brackets", e.Name)
		}
		// Each operation variable is declared once, used, and given a value
		// when it is required and has no default.
		declared := map[string]bool{}
		for _, m := range declaredVar.FindAllStringSubmatch(e.Query, -1) {
			name, typ, hasDefault := m[1], strings.TrimSpace(m[2]), m[3] == "="
			declared[name] = true
			if _, ok := vars[name]; !ok && strings.HasSuffix(typ, "!") && !hasDefault {
				t.Errorf("%s: required variable $%s has no value", e.Name, name)
			}
		}
		for _, m := range usedVar.FindAllStringSubmatch(e.Query, -1) {
			if !declared[m[1]] {
				t.Errorf("%s: $%s is used but not declared", e.Name, m[1])
			}
		}
		for name := range vars {
			if !declared[name] {
				t.Errorf("%s: variable %q is not declared by the operation", e.Name, name)
			}
		}
		// Paged examples continue through $after, which Next page sets.
		if strings.Contains(e.Query, "hasNextPage") && strings.Contains(e.Query, "after:") && !declared["after"] {
			t.Errorf("%s: pages without an $after variable", e.Name)
		}
		if declared["after"] && !strings.Contains(e.Query, "$after: String") {
			t.Errorf("%s: $after must be a nullable String", e.Name)
		}
	}
	// The list covers the API's core reads and the journal.
	for _, want := range []string{
		"position {", "run(id: $id)", "runs(ids: $ids)", "children(first: $first, after: $after)",
		"rounds(first: $first, after: $after)", "children(first: 10)", "rounds(first: 10)",
		"owner {", "claim {", "cancellation {", "tokenDigest", "... on MissingRun", "deletedAtRevision",
		"currentStep", "steps(first: $first, after: $after)", "... on RunStep", "... on SleepStep",
		"... on WaitStep", "claimedEvent", "inboundEvents", "events {", "cancellationReason",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("no example has %q", want)
		}
	}
}

// Examples and the page read the same file.
func TestExamplesMatchServedFile(t *testing.T) {
	res := get(t, Handler(Options{}), http.MethodGet, "/explorer/examples.json", nil)
	served, err := parseExamples([]byte(body(t, res)))
	if err != nil {
		t.Fatal(err)
	}
	list := Examples()
	if len(served) != len(list) {
		t.Fatalf("served %d examples, Examples() has %d", len(served), len(list))
	}
	for i := range list {
		if served[i] != list[i] {
			t.Errorf("example %d differs", i)
		}
	}
	list[0].Name = "changed"
	if Examples()[0].Name == "changed" {
		t.Error("Examples returns shared state")
	}
}

func TestParseExamplesRejects(t *testing.T) {
	for _, data := range []string{
		``,
		`{}`,
		`[{"name": "", "query": ["{ position { revision } }"]}]`,
		`[{"name": "x", "query": []}]`,
		`[{"name": "x", "query": ["  "]}]`,
		`[{"name": "x", "query": ["{ a }"], "variables": [1]}]`,
		`[{"name": "x", "query": ["{ a }"], "variables": "id"}]`,
		`[{"name": "x", "query": ["{ a }"], "vars": {}}]`,
		`[{"name": "x", "query": "{ a }"}]`,
		`[] []`,
	} {
		if _, err := parseExamples([]byte(data)); err == nil {
			t.Errorf("parseExamples(%s) succeeded", data)
		}
	}
	list, err := parseExamples([]byte(`[{"name": "x", "query": ["{", "  a", "}"]}, {"name": "y", "query": ["{ b }"], "variables": {"id":"r","n":[1,2]}}]`))
	if err != nil {
		t.Fatal(err)
	}
	if list[0].Query != "{\n  a\n}" || list[0].Variables != "{}" {
		t.Errorf("got %+v", list[0])
	}
	if want := "{\n  \"id\": \"r\",\n  \"n\": [\n    1,\n    2\n  ]\n}"; list[1].Variables != want {
		t.Errorf("variables = %q, want %q", list[1].Variables, want)
	}
}

// The scripts at least parse, when Node.js is there to check them.
func TestScriptSyntax(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node not installed")
	}
	dir := t.TempDir()
	err = fs.WalkDir(static, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || path.Ext(name) != ".js" {
			return err
		}
		b, err := fs.ReadFile(static, name)
		if err != nil {
			return err
		}
		file := filepath.Join(dir, path.Base(name))
		if err := os.WriteFile(file, b, 0o600); err != nil {
			return err
		}
		if out, err := exec.Command(node, "--check", file).CombinedOutput(); err != nil {
			t.Errorf("%s: %v\n%s", name, err, out)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// In a real browser, under the real CSP, the script runs and lists the
// examples. Skipped when no Chromium is installed.
func TestBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("short mode")
	}
	var browser string
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			browser = p
			break
		}
	}
	if browser == "" {
		t.Skip("no Chromium installed")
	}
	srv := httptest.NewServer(Handler(Options{Title: "flowsnap test"}))
	defer srv.Close()

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	cmd := exec.CommandContext(ctx, browser,
		"--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
		"--user-data-dir="+dir, "--virtual-time-budget=5000",
		"--enable-logging=stderr", "--v=0",
		"--dump-dom", srv.URL+"/")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s", browser, err, stderr.String())
	}
	dom := string(out)
	for _, e := range Examples() {
		if !strings.Contains(dom, ">"+domText(e.Name)+"<") {
			t.Errorf("the page does not list example %q", e.Name)
		}
	}
	if !strings.Contains(dom, `aria-current="true"`) {
		t.Error("no example was loaded into the editor")
	}
	if strings.Contains(stderr.String(), "Content Security Policy") {
		t.Errorf("the browser reported CSP violations:\n%s", stderr.String())
	}
}

// domText escapes text the way the DOM serializer does.
func domText(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}
