// Package access is who is asking: the principal a request carries, the
// flows it may see and whether it may read payloads
// (docs/contract.md#access-control). It is a leaf: the endpoint puts a
// principal in the request's context, and the reads below ask it what is in
// scope.
package access

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
)

// Principal is an authenticated caller: a token of the tokens file, or the
// subject of a JWT. Its fields are fixed once made; share it freely.
type Principal struct {
	// Name names the principal in logs and metrics; never a credential.
	Name string
	// Flows are glob patterns over a run's flowName: "*" is every run, a
	// trailing "*" a prefix, anything else one exact name. Empty: no run.
	Flows []string
	// Payloads says whether the principal may read payload fields.
	Payloads bool
}

// Everyone is the principal of a server without authentication: every run
// and every payload.
var Everyone = &Principal{Name: "anonymous", Flows: []string{"*"}, Payloads: true}

type contextKey struct{}

// NewContext returns ctx carrying p.
func NewContext(ctx context.Context, p *Principal) context.Context {
	return context.WithValue(ctx, contextKey{}, p)
}

// FromContext returns the principal ctx carries, or Everyone when it carries
// none (a server without authentication, or a read made by the server itself).
func FromContext(ctx context.Context) *Principal {
	if p, ok := ctx.Value(contextKey{}).(*Principal); ok && p != nil {
		return p
	}
	return Everyone
}

// Scope is a principal's flow patterns in the form a SQL filter wants.
type Scope struct {
	// All is true when a pattern is "*": no filter at all.
	All bool
	// Exact are flow names matched as they are, sorted and without repeats.
	Exact []string
	// Prefixes are the patterns with their trailing "*" removed, sorted,
	// without repeats and without one that another prefix already covers.
	Prefixes []string
}

// Scope returns p's patterns normalised. Two principals with equal scopes
// see exactly the same runs.
func (p *Principal) Scope() Scope {
	var s Scope
	for _, f := range p.Flows {
		switch {
		case f == "*":
			return Scope{All: true}
		case strings.HasSuffix(f, "*"):
			s.Prefixes = append(s.Prefixes, strings.TrimSuffix(f, "*"))
		default:
			s.Exact = append(s.Exact, f)
		}
	}
	slices.Sort(s.Prefixes)
	s.Prefixes = slices.Compact(s.Prefixes)
	// A prefix that starts with an earlier one adds nothing.
	kept := s.Prefixes[:0]
	for _, pre := range s.Prefixes {
		if len(kept) > 0 && strings.HasPrefix(pre, kept[len(kept)-1]) {
			continue
		}
		kept = append(kept, pre)
	}
	s.Prefixes = kept
	slices.Sort(s.Exact)
	s.Exact = slices.Compact(s.Exact)
	exact := s.Exact[:0]
	for _, name := range s.Exact {
		if !s.prefixed(name) {
			exact = append(exact, name)
		}
	}
	s.Exact = exact
	return s
}

// None reports whether the scope admits no run at all.
func (s Scope) None() bool { return !s.All && len(s.Exact) == 0 && len(s.Prefixes) == 0 }

// Sees reports whether a run whose flowName is name is in scope. A run
// without a flow name (hasName false) is seen only by "*".
func (s Scope) Sees(name string, hasName bool) bool {
	if s.All {
		return true
	}
	if !hasName {
		return false
	}
	if _, found := slices.BinarySearch(s.Exact, name); found {
		return true
	}
	return s.prefixed(name)
}

func (s Scope) prefixed(name string) bool {
	for _, pre := range s.Prefixes {
		if strings.HasPrefix(name, pre) {
			return true
		}
	}
	return false
}

// Key is a short, stable digest of the scope, for binding cursors to it: two
// scopes that see the same runs have the same key. The key of the scope of
// Everyone is "" so that what was bound before access control stays valid.
func (s Scope) Key() string {
	if s.All {
		return ""
	}
	h := sha256.New()
	for _, e := range s.Exact {
		h.Write([]byte("=" + e + "\x00"))
	}
	for _, pre := range s.Prefixes {
		h.Write([]byte("^" + pre + "\x00"))
	}
	return hex.EncodeToString(h.Sum(nil)[:12])
}

// Key is a short, stable digest of everything that can make p's answers
// differ from another principal's: its name, scope and payloads flag. Answers
// cached or tagged (ETags) for one key are never served to another.
func (p *Principal) Key() string {
	if p == Everyone {
		return ""
	}
	h := sha256.New()
	h.Write([]byte(p.Name + "\x00" + p.Scope().Key()))
	if p.Payloads {
		h.Write([]byte{1})
	}
	return hex.EncodeToString(h.Sum(nil)[:12])
}
