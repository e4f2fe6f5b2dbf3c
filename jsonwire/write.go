// Package jsonwire is the one home of the JSON flowsnap reads and writes by
// hand, where the standard library costs more than a request can afford:
// checking a document (Valid), finding a member of its top level
// (TopLevelValue), skipping values (SkipSpace, SkipValue), counting values
// before decoding (CountValues), decoding plain variables (PlainObject),
// reading one fixed layout (Layout); and writing strings and raw values
// escaped as encoding/json escapes them (AppendQuoted, AppendJSON, and
// ResponseForm for a value kept to be written again), so that an answer
// written directly is the executor's byte for byte. Each reader
// has a fuzz test holding it to encoding/json and a benchmark beside it
// (docs/benchmarks.md#json-scanning).
package jsonwire

import (
	"bytes"
	"encoding/json"
)

// AppendQuoted appends s as a JSON string as the executor's response
// ends up with it: escaped as gqlgen escapes strings (", \ and the control
// characters, as \t, \r, \n or \u00XX), then as encoding/json escapes a
// response it writes (<, >, & and the line and paragraph separators).
func AppendQuoted(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !quoteStops[c] {
			// Most bytes: one look in the table.
			continue
		}
		if c == 0xE2 {
			if i+2 >= len(s) || s[i+1] != 0x80 || (s[i+2] != 0xA8 && s[i+2] != 0xA9) {
				continue
			}
			b = append(b, s[start:i]...)
			b = append(b, `\u202`...)
			b = append(b, "89"[s[i+2]-0xA8])
			i += 2
			start = i + 1
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '\t':
			b = append(b, `\t`...)
		case '\r':
			b = append(b, `\r`...)
		case '\n':
			b = append(b, `\n`...)
		case '\\':
			b = append(b, `\\`...)
		case '"':
			b = append(b, `\"`...)
		case '<', '>', '&':
			const lower = "0123456789abcdef"
			b = append(b, '\\', 'u', '0', '0', lower[c>>4], lower[c&0xf])
		default:
			const upper = "0123456789ABCDEF"
			b = append(b, '\\', 'u', '0', '0', upper[c>>4], upper[c&0xf])
		}
		start = i + 1
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// quoteStops are the bytes AppendQuoted looks at: the control characters,
// quotes, escapes, those a response escapes and the first byte of the line
// and paragraph separators.
var quoteStops = func() (t [256]bool) {
	for c := range 0x20 {
		t[c] = true
	}
	for _, c := range []byte{'"', '\\', '<', '>', '&', 0xE2} {
		t[c] = true
	}
	return t
}()

// compactPlain reports whether the JSON value raw is written as it is:
// no white space between its tokens (inside strings it is the strings'
// own) and none of <, >, & or the first byte of a line or paragraph
// separator anywhere.
func compactPlain(raw []byte) bool {
	in := false
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if !plainStops[c] {
			// Most bytes: one look in the table.
			continue
		}
		switch c {
		case '<', '>', '&', 0xE2:
			return false
		case '"':
			in = !in
		case '\\':
			if in {
				i++
			}
		default:
			// White space, a string's own or between tokens.
			if !in {
				return false
			}
		}
	}
	return true
}

// plainStops are the bytes compactPlain looks at: quotes, escapes, white
// space and those a response escapes.
var plainStops = func() (t [256]bool) {
	for _, c := range []byte{'"', '\\', ' ', '\t', '\r', '\n', '<', '>', '&', 0xE2} {
		t[c] = true
	}
	return t
}()

// ResponseForm returns the JSON value raw as AppendJSON writes it: raw
// itself when it is written as it is, else a compacted and escaped copy.
// A value kept in this form is written by copying it.
func ResponseForm(raw []byte) []byte {
	if raw == nil || compactPlain(raw) {
		return raw
	}
	return AppendJSON(nil, raw)
}

// AppendJSON appends a JSON value as encoding/json writes it in a
// response: compact, with <, >, & and the line and paragraph separators
// escaped. Most values are compact already and hold none of those, and are
// copied as they are.
func AppendJSON(b []byte, raw json.RawMessage) []byte {
	if raw == nil {
		return append(b, "null"...)
	}
	if compactPlain(raw) {
		return append(b, raw...)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, raw); err != nil {
		// Not JSON: the executor's writer would fail on it as well.
		return append(b, raw...)
	}
	var escaped bytes.Buffer
	json.HTMLEscape(&escaped, compact.Bytes())
	return append(b, escaped.Bytes()...)
}
