// Package web serves flowsnap's browser pages: the dashboard at "/" (the runs
// list, the run page and the overview, a client of the GraphQL API) and the
// GraphiQL query explorer at "/explorer", with their scripts and styles
// under "/assets/", the settings the dashboard follows at
// "/dashboard/config.json", and the icon at "/favicon.svg" and
// "/favicon.ico".
//
// The pages are built from the sources in src/ by esbuild (npm run build)
// into dist/, which is committed and embedded, so the binary serves them
// offline and running or testing flowsnap never needs Node. dist/STAMP holds
// the digest of the build's inputs; a test fails when it does not match the
// sources, as for generated Go code.
package web

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/flowsnap/flowsnap/jsonwire"
)

//go:embed dist
var dist embed.FS

// Options configure the pages.
type Options struct {
	// Explorer serves GraphiQL at /explorer (off when introspection is off,
	// since GraphiQL needs the schema).
	Explorer bool
	// StaleAfter is how old a running run's heartbeat may be before the
	// dashboard marks it stale; 0 means DefaultStaleAfter.
	StaleAfter time.Duration
	// Auth says the server asks for a bearer token: the dashboard and the
	// explorer prompt for one and send it.
	Auth bool
}

// DefaultStaleAfter is the stale-heartbeat threshold when none is set.
const DefaultStaleAfter = 5 * time.Minute

// config is what /dashboard/config.json tells the dashboard.
type config struct {
	StaleAfterMs int64 `json:"staleAfterMs"`
	Explorer     bool  `json:"explorer"`
	Auth         bool  `json:"auth"`
}

func configAsset(opts Options) asset {
	stale := opts.StaleAfter
	if stale <= 0 {
		stale = DefaultStaleAfter
	}
	b, err := json.Marshal(config{StaleAfterMs: stale.Milliseconds(), Explorer: opts.Explorer, Auth: opts.Auth})
	if err != nil {
		panic("web: " + err.Error())
	}
	return newAsset(b, "application/json")
}

type asset struct {
	body        []byte
	contentType string
	etag        string
}

func load(name, contentType string) asset {
	b, err := fs.ReadFile(dist, "dist/"+name)
	if err != nil {
		// dist is embedded and covered by the package's tests.
		panic("web: " + err.Error())
	}
	return newAsset(b, contentType)
}

func newAsset(b []byte, contentType string) asset {
	sum := sha256.Sum256(b)
	return asset{body: b, contentType: contentType, etag: `"` + hex.EncodeToString(sum[:12]) + `"`}
}

// The pages call the API at this origin, or at another flowsnap named by the
// page's ?api= parameter, so connect-src allows any http(s) origin; scripts
// and styles come only from here.
const csp = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; " +
	"connect-src 'self' http: https:; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

type handler struct {
	routes map[string]asset
}

// Handler returns the pages: "/" the dashboard, "/explorer" GraphiQL (when
// opts.Explorer), their assets under "/assets/", the dashboard's settings
// and the icon. It answers GET and HEAD with ETag revalidation, and 404 for
// any other path.
func Handler(opts Options) http.Handler {
	const js, css, svg = "text/javascript; charset=utf-8", "text/css; charset=utf-8", "image/svg+xml"
	routes := map[string]asset{
		"/":                      load("dashboard.html", "text/html; charset=utf-8"),
		"/assets/dashboard.js":   load("dashboard.js", js),
		"/assets/dashboard.css":  load("dashboard.css", css),
		"/dashboard/config.json": configAsset(opts),
		// An SVG icon, at the path browsers ask for too: they read it by
		// its type, not its name.
		"/favicon.svg": load("favicon.svg", svg),
		"/favicon.ico": load("favicon.svg", svg),
	}
	if opts.Explorer {
		routes["/explorer"] = load("explorer.html", "text/html; charset=utf-8")
		routes["/assets/explorer.js"] = load("explorer.js", js)
		routes["/assets/explorer.css"] = load("explorer.css", css)
		routes["/explorer/examples.json"] = load("examples.json", "application/json")
	}
	return &handler{routes: routes}
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	if p == "/explorer/" {
		p = "/explorer"
	}
	a, ok := h.routes[p]
	if !ok {
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	hdr := w.Header()
	hdr.Set("Content-Type", a.contentType)
	hdr.Set("Content-Security-Policy", csp)
	hdr.Set("X-Content-Type-Options", "nosniff")
	hdr.Set("Referrer-Policy", "no-referrer")
	hdr.Set("Cache-Control", "no-cache")
	hdr.Set("ETag", a.etag)
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(a.body))
}

// Paths lists the paths Handler(opts) serves, for mounting it on a mux.
func Paths(opts Options) []string {
	paths := []string{"/", "/assets/", "/dashboard/", "/favicon.svg", "/favicon.ico"}
	if opts.Explorer {
		paths = append(paths, "/explorer", "/explorer/")
	}
	return paths
}

// Example is one ready query of the explorer.
type Example struct {
	Name        string
	Description string
	// Query is the GraphQL document, one operation and its fragments.
	Query string
	// Variables is the JSON object of the operation's variables. A string
	// value "$NAME" stands for the run id that Find[NAME] picks in the store
	// the explorer is pointed at.
	Variables map[string]any
	// Find says how the explorer picks the runs an example needs, so that no
	// example names an id that only one store has.
	Find map[string]Find
}

// Find picks a run id: from the first 100 runs that Filter lists, newest
// first, the first whose Pick field ("id", "parentRunId" or "lineageId") is
// set and, unless Pick is "id", is not the run's own id.
type Find struct {
	Filter map[string]any `json:"filter"`
	Pick   string         `json:"pick"`
}

type exampleFile struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Query       []string        `json:"query"`
	Variables   map[string]any  `json:"variables"`
	Find        map[string]Find `json:"find"`
}

var examples = sync.OnceValues(func() ([]Example, error) {
	b, err := fs.ReadFile(dist, "dist/examples.json")
	if err != nil {
		return nil, err
	}
	return parseExamples(b)
})

// Examples returns the explorer's examples in the order it lists them,
// parsed from the embedded file the page loads.
func Examples() []Example {
	list, err := examples()
	if err != nil {
		panic("web: " + err.Error())
	}
	return slices.Clone(list)
}

func parseExamples(data []byte) ([]Example, error) {
	var raw []exampleFile
	if err := jsonwire.DecodeStrict(data, &raw); err != nil {
		return nil, fmt.Errorf("examples.json: %w", err)
	}
	list := make([]Example, 0, len(raw))
	for i, e := range raw {
		query := strings.Join(e.Query, "\n")
		if strings.TrimSpace(e.Name) == "" || strings.TrimSpace(query) == "" {
			return nil, fmt.Errorf("examples.json: example %d has no name or no query", i)
		}
		for name, f := range e.Find {
			switch f.Pick {
			case "", "id", "parentRunId", "lineageId":
			default:
				return nil, fmt.Errorf("examples.json: example %q: find %q picks %q", e.Name, name, f.Pick)
			}
		}
		if e.Variables == nil {
			e.Variables = map[string]any{}
		}
		list = append(list, Example{Name: e.Name, Description: e.Description, Query: query, Variables: e.Variables, Find: e.Find})
	}
	return list, nil
}
