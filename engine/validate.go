package engine

import (
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/flowsnap/flowsnap/fault"
	"github.com/flowsnap/flowsnap/store/vocab"
)

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
	if !vocab.Safe(v) {
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
