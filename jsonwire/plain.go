package jsonwire

import (
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// PlainObject decodes raw, a valid JSON document, as a json.Decoder
// with UseNumber would when raw is an object and none of its keys and
// strings has an escape or invalid UTF-8: strings are sliced from one
// copy of raw rather than unquoted one by one, and no reflection is
// involved. false for any other document, for encoding/json to decode.
// Hand-written because BenchmarkPlainObject shows it pays against
// encoding/json.
func PlainObject(raw json.RawMessage) (map[string]any, bool) {
	d := plainDecoder{s: string(raw)}
	d.space()
	if d.i == len(d.s) || d.s[d.i] != '{' {
		return nil, false
	}
	v, ok := d.value(0)
	d.space()
	if !ok || d.i != len(d.s) {
		return nil, false
	}
	return v.(map[string]any), true
}

// plainDecoder reads PlainObject's document, which is valid JSON.
type plainDecoder struct {
	s string
	i int
}

// maxPlainDepth is encoding/json's bound on nesting: the most objects and
// lists a value may lie within, counting itself. PlainObject leaves a
// document nested deeper to encoding/json, which refuses it.
const maxPlainDepth = 10000

func (d *plainDecoder) space() {
	for d.i < len(d.s) && (d.s[d.i] == ' ' || d.s[d.i] == '\t' || d.s[d.i] == '\n' || d.s[d.i] == '\r') {
		d.i++
	}
}

// value reads the value at d.i, within depth objects and lists; false
// for a string it cannot slice or nesting deeper than encoding/json takes.
func (d *plainDecoder) value(depth int) (any, bool) {
	switch c := d.s[d.i]; {
	case (c == '{' || c == '[') && depth == maxPlainDepth:
		return nil, false
	case c == '{':
		m := map[string]any{}
		d.i++
		d.space()
		if d.s[d.i] == '}' {
			d.i++
			return m, true
		}
		for {
			d.space()
			k, ok := d.text()
			if !ok {
				return nil, false
			}
			d.space()
			d.i++ // the colon
			d.space()
			v, ok := d.value(depth + 1)
			if !ok {
				return nil, false
			}
			m[k] = v
			d.space()
			d.i++ // a comma, or the closing brace
			if d.s[d.i-1] == '}' {
				return m, true
			}
		}
	case c == '[':
		l := []any{}
		d.i++
		d.space()
		if d.s[d.i] == ']' {
			d.i++
			return l, true
		}
		for {
			d.space()
			v, ok := d.value(depth + 1)
			if !ok {
				return nil, false
			}
			l = append(l, v)
			d.space()
			d.i++
			if d.s[d.i-1] == ']' {
				return l, true
			}
		}
	case c == '"':
		return d.text()
	case c == 't':
		d.i += len("true")
		return true, true
	case c == 'f':
		d.i += len("false")
		return false, true
	case c == 'n':
		d.i += len("null")
		return nil, true
	default:
		start := d.i
		for d.i < len(d.s) && strings.IndexByte("+-.0123456789eE", d.s[d.i]) >= 0 {
			d.i++
		}
		return json.Number(d.s[start:d.i]), true
	}
}

// text reads the string at d.i when it has no escape and is valid UTF-8.
func (d *plainDecoder) text() (string, bool) {
	end := strings.IndexByte(d.s[d.i+1:], '"')
	t := d.s[d.i+1 : d.i+1+end]
	if strings.IndexByte(t, '\\') >= 0 || !utf8.ValidString(t) {
		return "", false
	}
	d.i += end + 2
	return t, true
}
