// Package explorer serves flowsnap's GraphQL explorer: one page where a
// person writes a query and its variables, runs it against the GraphQL
// endpoint and reads the answer, with its snapshot position, its errors and
// the time it took, and pages through connections.
//
// Everything the page needs is embedded in the binary and served from the
// same origin, so it works offline and under a strict Content-Security-Policy.
// The ready example queries live in one embedded file, examples.json, which
// the page loads and Examples exposes to Go.
package explorer

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
)

// DefaultEndpoint is where the page sends queries when Options.Endpoint is empty.
const DefaultEndpoint = "/graphql"

// DefaultTitle names the page when Options.Title is empty.
const DefaultTitle = "flowsnap"

// AssetPrefix is the path under which the page's scripts, styles and
// examples are served, next to the page itself at "/".
const AssetPrefix = "/explorer/"

//go:embed static
var static embed.FS

// Options configure the explorer page.
type Options struct {
	// Endpoint is the URL the page POSTs queries to: a path on this server
	// (the default, DefaultEndpoint) or an absolute http(s) URL, which is
	// then also allowed by the page's Content-Security-Policy.
	Endpoint string
	// Title names the page, in its heading and the browser tab
	// (DefaultTitle when empty).
	Title string
}

// asset is one response the handler serves, prepared once.
type asset struct {
	body        []byte
	contentType string
	etag        string // strong validator, quoted
	version     string // short content hash used in URLs as ?v=
}

func newAsset(body []byte, contentType string) asset {
	sum := sha256.Sum256(body)
	version := hex.EncodeToString(sum[:8])
	return asset{body: body, contentType: contentType, etag: `"` + version + `"`, version: version}
}

// handler serves the page at "/" and its assets under AssetPrefix.
type handler struct {
	page   asset
	assets map[string]asset // by name under AssetPrefix
	csp    string
}

// Handler returns the explorer: the page at "/" (an empty path counts as
// "/", so it can be mounted under a prefix with http.StripPrefix) and its
// assets under AssetPrefix, which the page references by relative URLs.
// It answers GET and HEAD, with ETag revalidation, and 404 for anything else
// under its paths.
func Handler(opts Options) http.Handler {
	if opts.Endpoint == "" {
		opts.Endpoint = DefaultEndpoint
	}
	if opts.Title == "" {
		opts.Title = DefaultTitle
	}
	assets := map[string]asset{
		"explorer.js":   newAsset(mustRead("static/explorer.js"), "text/javascript; charset=utf-8"),
		"explorer.css":  newAsset(mustRead("static/explorer.css"), "text/css; charset=utf-8"),
		"examples.json": newAsset(mustRead("static/examples.json"), "application/json"),
	}
	page, err := renderPage(opts, assets)
	if err != nil {
		// The template is embedded and covered by the package's tests.
		panic("explorer: " + err.Error())
	}
	return &handler{
		page:   newAsset(page, "text/html; charset=utf-8"),
		assets: assets,
		csp:    contentSecurityPolicy(opts.Endpoint),
	}
}

func mustRead(name string) []byte {
	b, err := fs.ReadFile(static, name)
	if err != nil {
		panic("explorer: " + err.Error())
	}
	return b
}

func renderPage(opts Options, assets map[string]asset) ([]byte, error) {
	tmpl, err := template.ParseFS(static, "static/index.html")
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	err = tmpl.Execute(&buf, struct {
		Title, Endpoint                        string
		JSVersion, CSSVersion, ExamplesVersion string
	}{
		Title:           opts.Title,
		Endpoint:        opts.Endpoint,
		JSVersion:       assets["explorer.js"].version,
		CSSVersion:      assets["explorer.css"].version,
		ExamplesVersion: assets["examples.json"].version,
	})
	if err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// contentSecurityPolicy allows only this origin, plus the endpoint's origin
// when the endpoint is on another server.
func contentSecurityPolicy(endpoint string) string {
	connect := "'self'"
	if u, err := url.Parse(endpoint); err == nil && u.Host != "" && (u.Scheme == "http" || u.Scheme == "https") {
		connect += " " + u.Scheme + "://" + u.Host
	}
	return strings.Join([]string{
		"default-src 'self'",
		"script-src 'self'",
		"style-src 'self'",
		"img-src 'self' data:",
		"connect-src " + connect,
		"object-src 'none'",
		"base-uri 'none'",
		"form-action 'none'",
		"frame-ancestors 'none'",
	}, "; ")
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var a asset
	cache := "no-cache" // always revalidate: cheap with the ETag
	switch p := r.URL.Path; {
	case p == "/" || p == "":
		a = h.page
	case strings.HasPrefix(p, AssetPrefix):
		var ok bool
		if a, ok = h.assets[strings.TrimPrefix(p, AssetPrefix)]; !ok {
			http.NotFound(w, r)
			return
		}
		if r.URL.Query().Get("v") == a.version {
			// The URL names this exact content, so it never changes.
			cache = "public, max-age=31536000, immutable"
		}
	default:
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
	hdr.Set("Content-Security-Policy", h.csp)
	hdr.Set("X-Content-Type-Options", "nosniff")
	hdr.Set("Referrer-Policy", "no-referrer")
	hdr.Set("Cross-Origin-Opener-Policy", "same-origin")
	hdr.Set("Cache-Control", cache)
	hdr.Set("ETag", a.etag)
	// ServeContent answers If-None-Match with 304 and HEAD without a body.
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(a.body))
}

// Example is one ready query of the explorer's list.
type Example struct {
	// Name is the short label shown in the list.
	Name string
	// Description says in a sentence what the example shows.
	Description string
	// Query is the GraphQL document, one operation and its fragments.
	Query string
	// Variables is the JSON object of the operation's variables, indented
	// by two spaces; "{}" when it has none.
	Variables string
}

// exampleFile is the shape of one entry of examples.json: the query is a
// list of lines so that the file stays readable and diffable.
type exampleFile struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Query       []string        `json:"query"`
	Variables   json.RawMessage `json:"variables"`
}

var examples = sync.OnceValues(func() ([]Example, error) {
	return parseExamples(mustRead("static/examples.json"))
})

// Examples returns the explorer's example queries, in the order the page
// lists them, parsed from the same embedded file the page loads. A test can
// validate each one against the GraphQL schema.
func Examples() []Example {
	list, err := examples()
	if err != nil {
		// The file is embedded and covered by the package's tests.
		panic("explorer: " + err.Error())
	}
	return slices.Clone(list)
}

func parseExamples(data []byte) ([]Example, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var raw []exampleFile
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("examples.json: %w", err)
	}
	if dec.More() {
		return nil, errors.New("examples.json: data after the list")
	}
	list := make([]Example, 0, len(raw))
	for i, e := range raw {
		if strings.TrimSpace(e.Name) == "" {
			return nil, fmt.Errorf("examples.json: example %d has no name", i)
		}
		query := strings.Join(e.Query, "\n")
		if strings.TrimSpace(query) == "" {
			return nil, fmt.Errorf("examples.json: example %q has no query", e.Name)
		}
		vars := "{}"
		if len(e.Variables) > 0 && string(e.Variables) != "null" {
			var obj map[string]json.RawMessage
			if err := json.Unmarshal(e.Variables, &obj); err != nil {
				return nil, fmt.Errorf("examples.json: example %q: variables must be a JSON object: %w", e.Name, err)
			}
			var buf bytes.Buffer
			if err := json.Indent(&buf, e.Variables, "", "  "); err != nil {
				return nil, fmt.Errorf("examples.json: example %q: %w", e.Name, err)
			}
			vars = buf.String()
		}
		list = append(list, Example{Name: e.Name, Description: e.Description, Query: query, Variables: vars})
	}
	return list, nil
}
