package jsonwire

import (
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// Unquote returns the string a JSON string literal raw holds, as
// json.Unmarshal into a string decodes it; false when raw is not one. A
// request's query arrives as such a literal, its new lines and tabs
// escaped: decoding it through encoding/json checks it byte by byte with
// a function call each, then decodes it again.
func Unquote(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", false
	}
	body := raw[1 : len(raw)-1]
	var b strings.Builder
	b.Grow(len(body))
	for i := 0; i < len(body); i++ {
		// The bytes up to the next escape go in at once.
		start := i
		for i < len(body) && plainByte[body[i]] {
			i++
		}
		if !utf8.Valid(body[start:i]) {
			// Invalid UTF-8 encoding/json replaces: its to judge.
			return slowUnquote(raw)
		}
		b.Write(body[start:i])
		if i == len(body) {
			break
		}
		if body[i] != '\\' {
			// A control character or a quote is no string: encoding/json
			// says why.
			return slowUnquote(raw)
		}
		if i+1 >= len(body) {
			return "", false
		}
		i++
		switch body[i] {
		case '"', '\\', '/':
			b.WriteByte(body[i])
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'u':
			r, ok := hex4(body[i+1:])
			if !ok || r >= 0xD800 && r < 0xE000 {
				// Surrogates pair up, or are replaced: encoding/json's.
				return slowUnquote(raw)
			}
			b.WriteRune(r)
			i += 4
		default:
			return "", false
		}
	}
	return b.String(), true
}

// hex4 reads the four hex digits of a \u escape.
func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

func slowUnquote(raw []byte) (string, bool) {
	var s string
	err := json.Unmarshal(raw, &s)
	return s, err == nil
}
