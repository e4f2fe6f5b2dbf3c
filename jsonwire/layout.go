package jsonwire

import (
	"strings"
	"unicode/utf8"
)

// Layout reads a document written in one fixed layout, piece by piece from
// its start: Done is false once any piece was not what was asked for. It
// suits documents a known writer makes (an engine's acknowledgement),
// where encoding/json would reflect on every member; any other spelling of
// the same value is left to encoding/json.
type Layout struct {
	s  string
	i  int
	ok bool
}

// NewLayout returns a Layout reading doc.
func NewLayout(doc []byte) *Layout { return &Layout{s: string(doc), ok: true} }

// Done reports whether every piece was as asked and nothing follows them.
func (p *Layout) Done() bool { return p.ok && p.i == len(p.s) }

// Literal reads l as it is.
func (p *Layout) Literal(l string) {
	if p.ok = p.ok && strings.HasPrefix(p.s[p.i:], l); p.ok {
		p.i += len(l)
	}
}

// Digits reads a whole number of 1 to most digits without a leading zero.
func (p *Layout) Digits(most int) string {
	j := p.i
	for p.ok && j < len(p.s) && '0' <= p.s[j] && p.s[j] <= '9' {
		j++
	}
	n := j - p.i
	if p.ok = p.ok && n > 0 && n <= most && (n == 1 || p.s[p.i] != '0'); !p.ok {
		return ""
	}
	d := p.s[p.i:j]
	p.i = j
	return d
}

// Text reads a string without escapes or control characters whose text is
// valid UTF-8, and returns its text.
func (p *Layout) Text() string {
	if p.ok = p.ok && p.i < len(p.s) && p.s[p.i] == '"'; !p.ok {
		return ""
	}
	j := p.i + 1
	for j < len(p.s) && p.s[j] != '"' && p.s[j] != '\\' && p.s[j] >= 0x20 {
		j++
	}
	if p.ok = j < len(p.s) && p.s[j] == '"' && utf8.ValidString(p.s[p.i+1:j]); !p.ok {
		return ""
	}
	t := p.s[p.i+1 : j]
	p.i = j + 1
	return t
}
