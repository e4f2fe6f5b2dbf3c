package auth_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flowsnap/flowsnap/auth"
	"github.com/flowsnap/flowsnap/fault"
)

func hash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// writeTokens writes a tokens file of name → token, each seeing flows
// "<name>-*" and no payloads.
func writeTokens(t *testing.T, path string, tokens map[string]string) {
	t.Helper()
	var entries []string
	for name, token := range tokens {
		entries = append(entries, fmt.Sprintf(`{"name": %q, "sha256": %q, "flows": [%q], "payloads": false}`, name, hash(token), name+"-*"))
	}
	writeFile(t, path, "["+strings.Join(entries, ",\n")+"]")
}

// writeFile replaces path's content as an editor would, through a new
// file renamed over it.
func writeFile(t *testing.T, path, content string) {
	t.Helper()
	tmp := path + ".new"
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func TestTokensAuthenticateByTheTokensHash(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens.json")
	writeFile(t, path, `[{"name": "ops-bot", "sha256": "`+hash("s3cret-ops")+`", "flows": ["billing-*", "report"], "payloads": true},
		{"name": "viewer", "sha256": "`+strings.ToUpper(hash("s3cret-view"))+`"}]`)
	tokens, err := auth.OpenTokens(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := tokens.Authenticate(t.Context(), "s3cret-ops")
	if err != nil {
		t.Fatal(err)
	}
	if p.Name != "ops-bot" || len(p.Flows) != 2 || !p.Payloads {
		t.Errorf("principal %+v", p)
	}
	p, err = tokens.Authenticate(t.Context(), "s3cret-view")
	if err != nil {
		t.Fatal(err)
	}
	if p.Name != "viewer" || len(p.Flows) != 0 || p.Payloads {
		t.Errorf("principal %+v, want viewer with no flows, no payloads", p)
	}
	for _, wrong := range []string{"s3cret-op", "s3cret-ops ", "", hash("s3cret-ops")} {
		_, err := tokens.Authenticate(t.Context(), wrong)
		if fault.CodeOf(err) != fault.Unauthenticated {
			t.Errorf("token %q: error %v, want UNAUTHENTICATED", wrong, err)
		}
	}
}

func TestTokensFileIsChecked(t *testing.T) {
	h := hash("x")
	for name, content := range map[string]string{
		"not JSON":               `[{"name": "a", "sha256": "` + h + `"`,
		"an object":              `{"name": "a", "sha256": "` + h + `"}`,
		"null":                   `null`,
		"a nameless token":       `[{"sha256": "` + h + `"}]`,
		"a short hash":           `[{"name": "a", "sha256": "abcd"}]`,
		"a hash that is not hex": `[{"name": "a", "sha256": "` + strings.Repeat("zz", 32) + `"}]`,
		"a name twice":           `[{"name": "a", "sha256": "` + h + `"}, {"name": "a", "sha256": "` + hash("y") + `"}]`,
		"a hash twice":           `[{"name": "a", "sha256": "` + h + `"}, {"name": "b", "sha256": "` + h + `"}]`,
		"a misspelt member":      `[{"name": "a", "sha256": "` + h + `", "payload": true}]`,
		"a star inside a flow":   `[{"name": "a", "sha256": "` + h + `", "flows": ["bill*ing"]}]`,
		"two arrays":             `[] []`,
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "tokens.json")
			writeFile(t, path, content)
			if _, err := auth.OpenTokens(path, nil); err == nil {
				t.Error("accepted")
			} else if !strings.Contains(err.Error(), path) {
				t.Errorf("error %q does not name the file", err)
			}
		})
	}
	if _, err := auth.OpenTokens(filepath.Join(t.TempDir(), "missing.json"), nil); err == nil {
		t.Error("a missing file accepted")
	}
}

func TestTokensReloadKeepingTheLastGoodSet(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens.json")
	writeTokens(t, path, map[string]string{"alpha": "token-a"})
	var log logBuffer
	tokens, err := auth.OpenTokens(path, slog.New(slog.NewTextHandler(&log, nil)))
	if err != nil {
		t.Fatal(err)
	}
	accepts := func(token string) bool {
		_, err := tokens.Authenticate(t.Context(), token)
		return err == nil
	}
	t.Run("on request (SIGHUP)", func(t *testing.T) {
		writeTokens(t, path, map[string]string{"beta": "token-b"})
		if err := tokens.Reload(); err != nil {
			t.Fatal(err)
		}
		if accepts("token-a") || !accepts("token-b") {
			t.Error("the reloaded set is not the file's")
		}
	})
	t.Run("a broken file keeps the last good set, logged", func(t *testing.T) {
		writeFile(t, path, `[{"name": "gamma", "sha256": `)
		if err := tokens.Reload(); err == nil {
			t.Error("a broken file reloaded without an error")
		}
		if !accepts("token-b") {
			t.Error("the last good set was dropped")
		}
		if !strings.Contains(log.String(), "tokens file not reloaded") || strings.Contains(log.String(), "token-b") {
			t.Errorf("log:\n%s", log.String())
		}
	})
	t.Run("when the file changes", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		done := make(chan struct{})
		go func() { defer close(done); tokens.Watch(ctx, 10*time.Millisecond) }()
		defer func() { cancel(); <-done }()
		writeTokens(t, path, map[string]string{"delta": "token-d", "epsilon": "token-e"})
		deadline := time.Now().Add(5 * time.Second)
		for !accepts("token-d") {
			if time.Now().After(deadline) {
				t.Fatal("the changed file was not taken up")
			}
			time.Sleep(10 * time.Millisecond)
		}
		if accepts("token-b") || tokens.Len() != 2 {
			t.Errorf("after the change: token-b accepted %v, %d tokens", accepts("token-b"), tokens.Len())
		}
		// Broken while watched: still the last good set.
		writeFile(t, path, `not json`)
		for !strings.Contains(log.String(), "not json") && !strings.Contains(log.String(), "invalid character") {
			if time.Now().After(deadline) {
				t.Fatal("the broken file was not noticed")
			}
			time.Sleep(10 * time.Millisecond)
		}
		if !accepts("token-e") {
			t.Error("a broken file dropped the set")
		}
	})
}

func TestBearer(t *testing.T) {
	for in, want := range map[string]string{
		"Bearer abc": "abc", "bearer abc": "abc", "BEARER  abc ": "abc",
		"Basic abc": "", "Bearer": "", "Bearer ": "", "": "", "Bearerabc": "",
	} {
		got, ok := auth.Bearer(in)
		if got != want || ok != (want != "") {
			t.Errorf("Bearer(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
}

// logBuffer is a log's output that goroutines may write while a test
// reads it.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
