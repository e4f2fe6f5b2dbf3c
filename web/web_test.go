package web

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// inputsDigest is build.mjs's stamp: the SHA-256 over every input file, in
// path order, of "path\0content\0".
func inputsDigest(t *testing.T) string {
	t.Helper()
	list := []string{"build.mjs", "package.json", "package-lock.json"}
	err := filepath.WalkDir("src", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			list = append(list, filepath.ToSlash(p))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(list)
	h := sha256.New()
	for _, p := range list {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		h.Write([]byte(p + "\x00"))
		h.Write(b)
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// TestBuiltFilesAreFresh fails when dist/ was not rebuilt after a change to
// the sources or the lockfile: run `npm ci && npm run build` in web/.
func TestBuiltFilesAreFresh(t *testing.T) {
	stamp, err := fs.ReadFile(dist, "dist/STAMP")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.TrimSpace(string(stamp)), inputsDigest(t); got != want {
		t.Fatalf("web/dist is stale (STAMP %s, sources %s): run `npm ci && npm run build` in web/ and commit dist/", got, want)
	}
	for _, name := range []string{"dashboard.js", "dashboard.css", "dashboard.html", "explorer.js", "explorer.css", "explorer.html", "examples.json", "favicon.svg"} {
		want, err := os.ReadFile(filepath.Join("dist", name))
		if err != nil {
			t.Fatal(err)
		}
		got, _ := fs.ReadFile(dist, "dist/"+name)
		if string(got) != string(want) || len(got) == 0 {
			t.Errorf("embedded %s differs from the file or is empty", name)
		}
	}
}

// TestBuildReproducesDist rebuilds with esbuild when Node and the installed
// packages are there, and compares the result with the committed files.
func TestBuildReproducesDist(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("node is missing")
		}
		t.Skip("node is missing")
	}
	if _, err := os.Stat("node_modules/esbuild"); err != nil {
		t.Skip("web/node_modules is not installed (npm ci)")
	}
	if testing.Short() {
		t.Skip("rebuilding takes a few seconds")
	}
	before := map[string][]byte{}
	for _, name := range []string{"dist/dashboard.js", "dist/explorer.js", "dist/STAMP", "testdata/axe.min.js"} {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		before[name] = b
	}
	out, err := exec.Command("node", "build.mjs").CombinedOutput()
	if err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	for name, b := range before {
		after, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if string(after) != string(b) {
			t.Errorf("%s changed when rebuilt: commit the rebuilt files", name)
		}
	}
}

func TestHandler(t *testing.T) {
	for _, tc := range []struct {
		name     string
		opts     Options
		path     string
		status   int
		contains string
	}{
		{"the dashboard is at the root", Options{}, "/", 200, `id="app"`},
		{"its script is an asset", Options{}, "/assets/dashboard.js", 200, "runs"},
		{"the explorer is at /explorer", Options{Explorer: true}, "/explorer", 200, `id="graphiql"`},
		{"the explorer's examples", Options{Explorer: true}, "/explorer/examples.json", 200, `"find"`},
		{"no explorer without introspection", Options{}, "/explorer", 404, ""},
		{"the dashboard's settings", Options{StaleAfter: 90 * time.Second, Explorer: true}, "/dashboard/config.json", 200, `{"staleAfterMs":90000,"explorer":true,"auth":false}`},
		{"whether the server asks for a token", Options{Auth: true}, "/dashboard/config.json", 200, `"auth":true`},
		{"the default stale threshold", Options{}, "/dashboard/config.json", 200, `"staleAfterMs":300000`},
		{"the icon", Options{}, "/favicon.svg", 200, "<svg"},
		{"the icon where browsers look for it", Options{}, "/favicon.ico", 200, "<svg"},
		{"an unknown path", Options{Explorer: true}, "/nope", 404, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			Handler(tc.opts).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, tc.path, nil))
			if rec.Code != tc.status || !strings.Contains(rec.Body.String(), tc.contains) {
				t.Fatalf("GET %s = %d (%.80q)", tc.path, rec.Code, rec.Body.String())
			}
			if tc.status == 200 && (rec.Header().Get("ETag") == "" || !strings.Contains(rec.Header().Get("Content-Security-Policy"), "script-src 'self'")) {
				t.Errorf("headers = %v", rec.Header())
			}
		})
	}
	rec := httptest.NewRecorder()
	Handler(Options{}).ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/", nil))
	if rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST / = %d", rec.Code)
	}
}

// TestNoCDN: nothing the pages load names another origin.
func TestNoCDN(t *testing.T) {
	for _, name := range []string{"dashboard.html", "explorer.html", "dashboard.css", "explorer.css"} {
		b, _ := fs.ReadFile(dist, "dist/"+name)
		for _, bad := range []string{"https://", "http://", "//cdn", "//fonts."} {
			if strings.Contains(string(b), bad) {
				t.Errorf("%s mentions %q", name, bad)
			}
		}
	}
}
