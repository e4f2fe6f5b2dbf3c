package auth

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flowsnap/flowsnap/access"
	"github.com/flowsnap/flowsnap/jsonwire"
)

// Tokens authenticates the bearer tokens of a tokens file
// (docs/contract.md#authentication): a JSON array of
// {"name", "sha256", "flows", "payloads"}, the token itself never stored.
//
// A presented token is hashed with SHA-256 and the hash looked up in a map.
// The lookup compares hashes, never the token with a secret: how long it
// takes tells a caller at most how many leading bytes of the SHA-256 of its
// guess match a stored hash, which, SHA-256 being preimage resistant, says
// nothing about any stored token. A byte-by-byte comparison of tokens would
// leak a secret prefix; this does not.
//
// The set is replaced whole when the file is reloaded (Reload, Watch); a
// file that does not read or parse leaves the last good set in place and is
// logged.
type Tokens struct {
	path string
	log  *slog.Logger
	set  atomic.Pointer[tokenSet]
	// mu orders reloads; stamp is what the file looked like at the last
	// one, good or not.
	mu    sync.Mutex
	stamp os.FileInfo
}

var _ Authenticator = (*Tokens)(nil)

// tokenSet maps a token's SHA-256 to its principal.
type tokenSet map[[sha256.Size]byte]*access.Principal

// tokenEntry is one object of the tokens file.
type tokenEntry struct {
	Name     string   `json:"name"`
	SHA256   string   `json:"sha256"`
	Flows    []string `json:"flows"`
	Payloads bool     `json:"payloads"`
}

// OpenTokens reads the tokens file at path; it fails when the file does
// not read or parse, since a server must not start without its tokens.
// log receives the reloads; nil discards.
func OpenTokens(path string, log *slog.Logger) (*Tokens, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	t := &Tokens{path: path, log: log}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("the tokens file (--tokens-file): %w", err)
	}
	set, err := readTokens(path)
	if err != nil {
		return nil, err
	}
	t.stamp = fi
	t.set.Store(&set)
	return t, nil
}

// Len is how many tokens the current set holds.
func (t *Tokens) Len() int { return len(*t.set.Load()) }

// Authenticate returns the principal of token, or UNAUTHENTICATED.
func (t *Tokens) Authenticate(_ context.Context, token string) (*access.Principal, error) {
	if p, ok := (*t.set.Load())[sha256.Sum256([]byte(token))]; ok {
		return p, nil
	}
	return nil, Refuse("the bearer token is not valid")
}

// Reload reads the file again and replaces the set with it; when the file
// does not read or parse, the set stays as it was, the error is logged
// and returned.
func (t *Tokens) Reload() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if fi, err := os.Stat(t.path); err == nil {
		t.stamp = fi
	}
	return t.reload()
}

func (t *Tokens) reload() error {
	set, err := readTokens(t.path)
	if err != nil {
		t.log.Error("tokens file not reloaded: keeping the previous tokens", slog.String("file", t.path),
			slog.Int("tokens", t.Len()), slog.String("error", err.Error()))
		return err
	}
	t.set.Store(&set)
	t.log.Info("tokens file reloaded", slog.String("file", t.path), slog.Int("tokens", len(set)))
	return nil
}

// Watch reloads the file whenever it changes (its modification time, size
// or the file a path names, as when a Kubernetes Secret's link is swapped),
// looking every interval, until ctx ends.
func (t *Tokens) Watch(ctx context.Context, every time.Duration) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for ctx.Err() == nil {
		select {
		case <-tick.C:
			t.reloadIfChanged()
		case <-ctx.Done():
		}
	}
}

func (t *Tokens) reloadIfChanged() {
	t.mu.Lock()
	defer t.mu.Unlock()
	fi, err := os.Stat(t.path)
	if err != nil {
		// Gone for now (a file being replaced): the set stays, and the
		// file is read once it is back.
		return
	}
	if t.stamp != nil && os.SameFile(fi, t.stamp) && fi.ModTime().Equal(t.stamp.ModTime()) && fi.Size() == t.stamp.Size() {
		return
	}
	t.stamp = fi
	_ = t.reload()
}

// readTokens reads and checks a tokens file.
func readTokens(path string) (tokenSet, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("the tokens file (--tokens-file): %w", err)
	}
	set, err := parseTokens(data)
	if err != nil {
		return nil, fmt.Errorf("the tokens file %s: %w", path, err)
	}
	return set, nil
}

// parseTokens checks a tokens file's content: a JSON array of entries, each
// with a name and the hex SHA-256 of its token, names and hashes unique,
// flow patterns with "*" at their end only, no member it does not know (a
// misspelt "payload" must not silently mean false).
func parseTokens(data []byte) (tokenSet, error) {
	var entries []tokenEntry
	if err := jsonwire.DecodeStrict(data, &entries); err != nil {
		return nil, fmt.Errorf("want one JSON array of {\"name\", \"sha256\", \"flows\", \"payloads\"}: %w", err)
	}
	if entries == nil {
		return nil, fmt.Errorf("want a JSON array of tokens, found null")
	}
	set := make(tokenSet, len(entries))
	names := make(map[string]bool, len(entries))
	for i, e := range entries {
		if strings.TrimSpace(e.Name) == "" {
			return nil, fmt.Errorf("token %d has no name", i)
		}
		if names[e.Name] {
			return nil, fmt.Errorf("token %d: the name %q is used twice", i, e.Name)
		}
		names[e.Name] = true
		b, err := hex.DecodeString(e.SHA256)
		if err != nil || len(b) != sha256.Size {
			return nil, fmt.Errorf("token %q: sha256 must be 64 hex digits, the SHA-256 of the token", e.Name)
		}
		sum := [sha256.Size]byte(b)
		if _, dup := set[sum]; dup {
			return nil, fmt.Errorf("token %q: its sha256 is another token's too", e.Name)
		}
		if err := CheckFlows(e.Flows); err != nil {
			return nil, fmt.Errorf("token %q: %w", e.Name, err)
		}
		set[sum] = &access.Principal{Name: e.Name, Flows: e.Flows, Payloads: e.Payloads}
	}
	return set, nil
}

// CheckFlows checks flow patterns (docs/contract.md#principals): each
// non-empty, with "*" only as its last character.
func CheckFlows(flows []string) error {
	for _, f := range flows {
		if f == "" {
			return fmt.Errorf("a flow pattern is empty")
		}
		if i := strings.IndexByte(f, '*'); i >= 0 && i != len(f)-1 {
			return fmt.Errorf("flow pattern %q: \"*\" may only end a pattern", f)
		}
	}
	return nil
}
