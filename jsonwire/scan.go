package jsonwire

import (
	"bytes"
	"encoding/json"
	"strings"
)

// TopLevelValue returns where the value of key is in the top level of
// doc, which must be valid JSON (see Valid): doc[start:end]; the last
// one when key repeats, as encoding/json takes it. object is false when doc
// is not an object. Hand-written because BenchmarkTopLevelValue shows it
// pays against unmarshalling the object.
func TopLevelValue(doc []byte, key string) (start, end int, found, object bool) {
	i := SkipSpace(doc, 0)
	if i >= len(doc) || doc[i] != '{' {
		return 0, 0, false, false
	}
	i++
	for {
		i = SkipSpace(doc, i)
		if doc[i] == '}' {
			return start, end, found, true
		}
		if doc[i] == ',' {
			i = SkipSpace(doc, i+1)
		}
		keyEnd := skipString(doc, i)
		k := doc[i+1 : keyEnd-1]
		i = SkipSpace(doc, keyEnd) + 1 // the colon
		i = SkipSpace(doc, i)
		valueEnd := SkipValue(doc, i)
		if string(k) == key || bytes.IndexByte(k, '\\') >= 0 && unquotes(doc[keyEnd-len(k)-2:keyEnd], key) {
			start, end, found = i, valueEnd, true
		}
		i = valueEnd
	}
}

// unquotes says that the JSON string quoted is key.
func unquotes(quoted []byte, key string) bool {
	var s string
	return json.Unmarshal(quoted, &s) == nil && s == key
}

// SkipSpace returns the index of the first byte at or after i that is not
// JSON whitespace.
func SkipSpace(doc []byte, i int) int {
	for i < len(doc) && (doc[i] == ' ' || doc[i] == '\t' || doc[i] == '\r' || doc[i] == '\n') {
		i++
	}
	return i
}

// skipString returns the index after the string that starts at i: past
// the first quote not escaped, found by bytes.IndexByte, which reads a
// long string (a query) many bytes at a time; len(doc) when there is none.
// A quote is escaped when an odd run of backslashes comes before it.
func skipString(doc []byte, i int) int {
	for j := i + 1; ; {
		k := bytes.IndexByte(doc[j:], '"')
		if k < 0 {
			return len(doc)
		}
		q := j + k
		backslashes := 0
		for p := q - 1; p > i && doc[p] == '\\'; p-- {
			backslashes++
		}
		if backslashes%2 == 0 {
			return q + 1
		}
		j = q + 1
	}
}

// SkipValue returns the index after the value that starts at doc[i], doc
// being valid JSON.
func SkipValue(doc []byte, i int) int {
	switch doc[i] {
	case '"':
		return skipString(doc, i)
	case '{', '[':
		depth := 0
		for i < len(doc) {
			switch doc[i] {
			case '"':
				i = skipString(doc, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return i
	}
	for i < len(doc) && !strings.ContainsRune(",}] \t\r\n", rune(doc[i])) {
		i++
	}
	return i
}

// CountValues counts, without decoding, the list elements and object
// members of a JSON text, roughly (commas and openings outside strings),
// so that a request can be refused before it is decoded. Hand-written
// because BenchmarkCountValues shows it pays against counting tokens.
func CountValues(b []byte) int {
	n := 0
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '"':
			i = skipString(b, i) - 1
		case ',', '[', '{':
			n++
		}
	}
	return n
}
