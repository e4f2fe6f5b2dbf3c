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
	target *any
	n      int64
}

// IntDests returns scan destinations for the integer columns targets.
func IntDests(targets ...*any) []any {
	cells := make([]IntDest, len(targets))
	out := make([]any, len(targets))
	for i, t := range targets {
		cells[i].target = t
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
func (d *IntDest) Scan(src any) error {
	if b, ok := src.([]byte); ok {
		src = bytes.Clone(b)
	}
	*d.target = src
	return nil
}
