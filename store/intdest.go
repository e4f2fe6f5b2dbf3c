package store

import (
	"bytes"

	"github.com/jackc/pgx/v5/pgtype"
)

// IntDest is a scan destination for an integer column that fills a plain
// value (*any, as a scan into &v fills it) without boxing the integer:
// PostgreSQL's driver hands it the integer itself, which it keeps and puts
// in the value as a pointer (*int64), nil for NULL. A row of a run has a
// dozen integer columns, and boxing each was an allocation apiece. SQLite's
// driver hands it the value it read, of whatever type the row holds, which
// goes into the value as it is (a blob copied, as a plain scan copies it).
type IntDest struct {
	plainDest
	n int64
}

// IntDests returns scan destinations for the integer columns targets.
func IntDests(targets ...*any) []any {
	return dests(targets, func(d *IntDest) *plainDest { return &d.plainDest })
}

// plainDest is what IntDest and TextDest share: the value they fill, and
// how SQLite's values go into it.
type plainDest struct {
	target *any
}

// dests returns a destination D for each of targets, all made at once.
func dests[D any](targets []*any, plain func(*D) *plainDest) []any {
	cells := make([]D, len(targets))
	out := make([]any, len(targets))
	for i, t := range targets {
		plain(&cells[i]).target = t
		out[i] = &cells[i]
	}
	return out
}

// ScanInt64 takes PostgreSQL's integer.
func (d *IntDest) ScanInt64(v pgtype.Int8) error {
	if !v.Valid {
		*d.target = nil
		return nil
	}
	d.n = v.Int64
	*d.target = &d.n
	return nil
}

// Scan takes SQLite's value.
func (d *plainDest) Scan(src any) error {
	if b, ok := src.([]byte); ok {
		src = bytes.Clone(b)
	}
	*d.target = src
	return nil
}

// Text is a text column's bytes as PostgreSQL's driver holds them, valid
// until the next row is read: a TextDest puts it in its value as a *Text.
type Text []byte

// TextDest is a scan destination for a text column that fills a plain
// value without making the column a string: PostgreSQL's driver hands it
// the column's bytes, which it puts in the value as a *Text (nil for NULL),
// so that the decoder copies only what it keeps, and only once; a run's
// row has half a dozen text columns, and each was a string and a boxing of
// it. SQLite's driver hands it the value it read, which goes into the value
// as it is (a blob copied, as a plain scan copies it).
type TextDest struct {
	plainDest
	text Text
}

// TextDests returns scan destinations for the text columns targets.
func TextDests(targets ...*any) []any {
	return dests(targets, func(d *TextDest) *plainDest { return &d.plainDest })
}

// ScanBytes takes PostgreSQL's bytes: nil for NULL, the driver's memory
// otherwise.
func (d *TextDest) ScanBytes(v []byte) error {
	if v == nil {
		*d.target = nil
		return nil
	}
	d.text = v
	*d.target = &d.text
	return nil
}

// AsText returns the text a plain value holds, as TextDest fills it or a
// scan into *any would: a string, or a *Text copied; false for any other
// value, NULL, an integer or a blob among them.
func AsText(v any) (string, bool) {
	switch s := v.(type) {
	case string:
		return s, true
	case *Text:
		return string(*s), true
	}
	return "", false
}

// textArray binds a list of text to a text[] placeholder. pgx encodes a
// []string through its elements as values of type any, which boxes every
// one of them: for a batch of ids, an allocation per id. textArray hands
// it pointers into the list instead, which need no boxing, as textElems,
// which pgx encodes without reflection (which would box them again).
type textArray []string

var _ pgtype.ArrayGetter = textArray(nil)

func (a textArray) Dimensions() []pgtype.ArrayDimension {
	if a == nil {
		return nil
	}
	return []pgtype.ArrayDimension{{Length: int32(len(a)), LowerBound: 1}}
}

func (a textArray) Index(i int) any { return (*textElem)(&a[i]) }

func (a textArray) IndexType() any { return new(textElem) }

// textElem is an element of a textArray.
type textElem string

func (e *textElem) TextValue() (pgtype.Text, error) {
	return pgtype.Text{String: string(*e), Valid: true}, nil
}
