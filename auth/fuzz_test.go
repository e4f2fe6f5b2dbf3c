package auth

import (
	"strings"
	"testing"
)

// FuzzTokensFile feeds parseTokens any bytes: it must refuse or accept
// without panicking, and what it accepts must hold its promises (names,
// flow patterns).
func FuzzTokensFile(f *testing.F) {
	h := strings.Repeat("ab", 32)
	for _, seed := range []string{
		`[]`, `null`, `[{"name":"a","sha256":"` + h + `"}]`,
		`[{"name":"a","sha256":"` + h + `","flows":["x*","y"],"payloads":true}]`,
		`[{"name":"","sha256":"` + h + `"}]`, `[{"name":"a","sha256":"` + h + `","flows":["*x"]}]`, `{`, `[1]`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		set, err := parseTokens(data)
		if err != nil {
			return
		}
		for _, p := range set {
			if strings.TrimSpace(p.Name) == "" {
				t.Fatalf("accepted a token without a name: %q", data)
			}
			if CheckFlows(p.Flows) != nil {
				t.Fatalf("accepted flows %q", p.Flows)
			}
		}
	})
}

// FuzzBearer: whatever the header, a token it returns is not empty and
// has no surrounding space.
func FuzzBearer(f *testing.F) {
	for _, seed := range []string{"Bearer abc", "bearer  x ", "Basic abc", "", "Bearer"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, h string) {
		tok, ok := Bearer(h)
		if ok != (tok != "") || tok != strings.TrimSpace(tok) {
			t.Fatalf("Bearer(%q) = %q, %v", h, tok, ok)
		}
	})
}
