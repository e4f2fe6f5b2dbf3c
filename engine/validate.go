package engine

import (
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/flowsnap/flowsnap/fault"
)

// maxIDUnits is the longest identifier the store admits, counted in UTF-16
// code units because that is what a JavaScript client measures.
const maxIDUnits = 1024

// maxSafeInt is the largest integer a JSON client reads exactly (2^53−1):
// timestamps, pids and ordinals beyond it would come back rounded.
const maxSafeInt = 1<<53 - 1

// checkID reports whether s is a valid identifier: non-empty, valid Unicode
// (Go's UTF-8 decoder also refuses encoded surrogates, so no lone surrogate
// can pass), no NUL, at most 1024 UTF-16 code units. The message names what
// the identifier is but never quotes it, since a bad one may be huge or
// unprintable.
func checkID(what, s string) error {
	switch {
	case s == "":
		return fault.Errorf(fault.BadUserInput, "%s must not be empty", what)
	case !utf8.ValidString(s):
		return fault.Errorf(fault.BadUserInput, "%s must be valid Unicode", what)
	case strings.IndexByte(s, 0) >= 0:
		return fault.Errorf(fault.BadUserInput, "%s must not contain NUL", what)
	case utf16Len(s) > maxIDUnits:
		return fault.Errorf(fault.BadUserInput, "%s must be at most %d UTF-16 code units long", what, maxIDUnits)
	}
	return nil
}

// utf16Len counts the UTF-16 code units of a valid UTF-8 string: one per
// rune, two for a rune outside the Basic Multilingual Plane.
func utf16Len(s string) int {
	if len(s) <= maxIDUnits {
		// A UTF-8 string never has more UTF-16 units than bytes.
		return len(s)
	}
	n := 0
	for _, r := range s {
		n++
		if r >= 0x10000 {
			n++
		}
	}
	return n
}

// checkText reports whether s is storable free text (a reason, a message):
// valid Unicode without NUL, which PostgreSQL text cannot hold.
func checkText(what, s string) error {
	if !utf8.ValidString(s) {
		return fault.Errorf(fault.BadUserInput, "%s must be valid Unicode", what)
	}
	if strings.IndexByte(s, 0) >= 0 {
		return fault.Errorf(fault.BadUserInput, "%s must not contain NUL", what)
	}
	return nil
}

// checkMs reports whether a millisecond timestamp or other natural number is
// in the range the store admits.
func checkMs(what string, v int64) error {
	if v < 0 || v > maxSafeInt {
		return fault.Errorf(fault.BadUserInput, "%s must be between 0 and 2^53-1", what)
	}
	return nil
}

// checkJSON reports whether raw is one valid JSON value. Invalid UTF-8 or a
// NUL escape would be accepted by encoding/json but not by PostgreSQL jsonb,
// so both are refused here, where the caller can still be told.
func checkJSON(what string, raw json.RawMessage) error {
	if !json.Valid(raw) {
		return fault.Errorf(fault.BadUserInput, "%s must be valid JSON", what)
	}
	if !utf8.Valid(raw) || strings.Contains(string(raw), `\u0000`) {
		return fault.Errorf(fault.BadUserInput, "%s must not contain invalid Unicode or NUL", what)
	}
	return nil
}

// nullable turns the zero value of an optional column into SQL NULL: the
// writer's inputs use "" and 0 for "not set".
func nullable[T comparable](v T) any {
	var zero T
	if v == zero {
		return nil
	}
	return v
}

// nullableJSON turns an absent JSON value into SQL NULL and a present one
// into its text. The text "null" stays text: it is JSON null, not absence.
func nullableJSON(raw json.RawMessage) any {
	if raw == nil {
		return nil
	}
	return string(raw)
}
