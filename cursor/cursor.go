// Package cursor is the codec of flowsnap's page cursors: the opaque strings a
// client hands back to continue a list where the previous page ended.
//
// A cursor is bound to the store it came from (the source), to what the list
// hangs off (the anchor: the run whose children or rounds are listed) and to
// the kind of list, and it carries the keyset position of the last item of the
// page: an ordinal and, to break ties between equal ordinals, the id of that
// item. Positions are keys, not offsets, so a cursor never expires and stays
// valid while the engine writes. [Decode] refuses anything malformed and
// [Cursor.Check] refuses a cursor used on another store, anchor or kind, both
// with a BAD_CURSOR error whose message says which problem it found.
//
// # Wire format
//
// A cursor is the base64url encoding without padding (RFC 4648 §5: the
// alphabet A–Z a–z 0–9 "-" "_", no "=") of a binary payload, and is at most
// [MaxLength] characters long. The payload of version 1 is
//
//	field    encoding
//	version  1 byte, 0x01
//	kind     1 byte: 1 children, 2 rounds, 3 steps, 4 inboundEvents, 5 events, 6 list, 7 flows
//	ordinal  uvarint (encoding/binary), 0..2^53-1
//	source   uvarint byte length, then that many bytes of UTF-8
//	anchor   uvarint byte length, then that many bytes of UTF-8
//	last     uvarint byte length, then that many bytes of UTF-8
//
// and nothing after it; code 0 is never a kind. The payload of version 2 is
// that of version 1 with the version byte 0x02 and one more field after last:
//
//	revision uvarint, 1..2^53-1: the store revision the page was read at
//
// A cursor carries the revision it was issued at so that a page after it is
// never read at an older position (docs/contract.md#replicas): a cursor without a revision
// (Revision 0) is written as version 1, and a version 2 cursor with revision 0
// is refused, so each cursor still has one spelling. Version 1 cursors stay
// valid; they carry no minimum. A children cursor of a 32-character source with
// 36-character run ids is 110 bytes, 147 characters (the same fields as a
// JSON array would be 174). Binary rather than JSON mostly because a
// length-prefixed layout leaves nothing to be lenient about: no whitespace,
// escapes, number spellings or floats, and no second spelling of a value.
//
// Every cursor has exactly one encoding: uvarints must be minimal, the last
// base64 character may not carry stray bits, and line breaks are refused
// (the standard library's decoder would skip them). So Decode(Encode(c)) is c
// and Encode(Decode(s)) is s, which the fuzz tests hold the codec to, and a
// client cannot mint two spellings of one position.
//
// # Evolving the format
//
// Kind codes are append-only: once released, a code keeps its meaning and is
// never reused, so a new kind gets the next code and older builds refuse it as
// an unknown kind instead of misreading it. A change of layout (a list cursor
// bound to a filter, say) is a new version byte: Decode dispatches on it and
// keeps reading version 1 forever, and Encode writes the newest version.
package cursor

import (
	"encoding/base64"
	"encoding/binary"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/flowsnap/flowsnap/fault"
	"github.com/flowsnap/flowsnap/store/vocab"
)

// MaxLength is the longest cursor, in characters, that Decode accepts. It
// bounds the work and memory one argument can cost before anything is
// decoded.
const MaxLength = 32768

// version1 and version2 are the first bytes of version 1 and 2 payloads.
const (
	version1 = 0x01
	version2 = 0x02
)

// encoding is the one encoding cursors are written and read with. Strict
// refuses stray bits in the last character, which would otherwise give one
// payload several spellings.
var encoding = base64.RawURLEncoding.Strict()

// Kind is the kind of list a cursor pages through. Its values are the names
// used in error messages; on the wire each kind is a one-byte code.
type Kind string

// The kinds of list. The comment of each says what its ordinal and Last are.
const (
	// Children of a run, ordered by (seq, child id): Ordinal is the spawn
	// edge's seq, Last the child's run id.
	Children Kind = "children"
	// Rounds of a run's lineage, ordered by (round ordinal, run id): Ordinal
	// is the round ordinal, Last the round's run id.
	Rounds Kind = "rounds"
	// Steps of a run's journal: Ordinal is the step's created_at_ms, Last its
	// step id.
	Steps Kind = "steps"
	// InboundEvents of a run: Ordinal is the event's created_at_ms, Last its
	// event id.
	InboundEvents Kind = "inboundEvents"
	// Events of a run's lifecycle log: Ordinal is the event's seq, which is
	// unique within the run, so Last is empty.
	Events Kind = "events"
	// List of runs by filter, ordered by (created_at_ms, run id) either way:
	// Ordinal is the run's created_at_ms, Last its run id, and Anchor the
	// digest of the list's canonical filter and order, so the cursor
	// continues only the list it came from.
	List Kind = "list"
	// Flows is the list of distinct flow names, in code-point order:
	// Ordinal is 0, Last the page's last flow name (any non-empty text,
	// not an id), and Anchor the digest of the list's prefix, so the
	// cursor continues only the list it came from.
	Flows Kind = "flows"
)

// lastRule says whether a kind's ordinal needs a tie-breaker.
type lastRule uint8

const (
	lastRequired lastRule = iota // ordinals repeat; Last orders equal ones
	lastEmpty                    // ordinals are unique; Last must be empty
	lastName                     // Last alone orders items: a non-empty name, not held to the id rule
)

// kindSpec is one row of the kind table.
type kindSpec struct {
	kind Kind
	code byte
	last lastRule
}

// kinds is the kind table. Codes are part of the wire format: append new
// kinds with the next code, and never change or reuse a released one.
var kinds = [...]kindSpec{
	{Children, 1, lastRequired},
	{Rounds, 2, lastRequired},
	{Steps, 3, lastRequired},
	{InboundEvents, 4, lastRequired},
	{Events, 5, lastEmpty},
	{List, 6, lastRequired},
	{Flows, 7, lastName},
}

func specOfKind(k Kind) (kindSpec, bool) {
	for _, s := range kinds {
		if s.kind == k {
			return s, true
		}
	}
	return kindSpec{}, false
}

func specOfCode(code byte) (kindSpec, bool) {
	for _, s := range kinds {
		if s.code == code {
			return s, true
		}
	}
	return kindSpec{}, false
}

// Cursor is a decoded cursor: where a page ended, and what list it belongs
// to.
type Cursor struct {
	// Source is the identity of the store the cursor was issued by.
	Source string
	// Anchor is what the list hangs off: the run whose children, rounds,
	// steps or events are listed.
	Anchor string
	// Kind is the kind of list.
	Kind Kind
	// Ordinal is the keyset position of the page's last item, 0..vocab.MaxSafe;
	// what it is depends on Kind.
	Ordinal int64
	// Last is the id of the page's last item, which orders items of equal
	// Ordinal; empty for kinds whose ordinals are unique.
	Last string
	// Revision is the store revision the page was read at, 0..vocab.MaxSafe; 0
	// for a version 1 cursor, which carries none. A read that continues
	// after the cursor must read at this revision or a later one.
	Revision int64
}

// Encode returns c as a cursor string. It does not fail: a Cursor that
// Validate refuses still encodes, to a string that Decode refuses, so a bug
// upstream reaches the client as BAD_CURSOR and never as a page from the
// wrong place.
func Encode(c Cursor) string {
	code := byte(0) // an unknown kind gets the code no kind has
	if s, ok := specOfKind(c.Kind); ok {
		code = s.code
	}
	b := make([]byte, 0, payloadLen(c))
	version := byte(version1)
	if c.Revision != 0 {
		version = version2
	}
	b = append(b, version, code)
	// A negative ordinal wraps to above vocab.MaxSafe, which Decode refuses.
	b = binary.AppendUvarint(b, uint64(c.Ordinal))
	for _, s := range [...]string{c.Source, c.Anchor, c.Last} {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	if version == version2 {
		// A negative revision wraps to above vocab.MaxSafe, which Decode refuses.
		b = binary.AppendUvarint(b, uint64(c.Revision))
	}
	return encoding.EncodeToString(b)
}

// payloadLen is the length in bytes of c's payload.
func payloadLen(c Cursor) int {
	n := 2 + uvarintLen(uint64(c.Ordinal))
	for _, s := range [...]string{c.Source, c.Anchor, c.Last} {
		n += uvarintLen(uint64(len(s))) + len(s)
	}
	if c.Revision != 0 {
		n += uvarintLen(uint64(c.Revision))
	}
	return n
}

func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

// Validate reports whether c can make a cursor that Decode accepts: a known
// kind, an ordinal in 0..vocab.MaxSafe, non-empty Source and Anchor, fields of
// valid UTF-8, Last set exactly when the kind needs a tie-breaker, and an
// encoding of at most MaxLength characters. The error is BAD_CURSOR, because
// Decode returns it for a cursor that breaks these rules.
func (c Cursor) Validate() error {
	spec, ok := specOfKind(c.Kind)
	if !ok {
		return bad("cursor has an unknown kind %s", vocab.Quote(string(c.Kind)))
	}
	if c.Ordinal < 0 || c.Ordinal > vocab.MaxSafe {
		return bad("cursor field ordinal is not a natural number below 2^53")
	}
	if c.Revision < 0 || c.Revision > vocab.MaxSafe {
		return bad("cursor field revision is not a natural number below 2^53")
	}
	for _, f := range [...]struct{ name, value string }{
		{"source", c.Source}, {"anchor", c.Anchor}, {"last", c.Last},
	} {
		if !utf8.ValidString(f.value) {
			return bad("cursor field %s is not valid UTF-8", f.name)
		}
	}
	if c.Source == "" {
		return bad("cursor field source is empty")
	}
	if c.Anchor == "" {
		return bad("cursor field anchor is empty")
	}
	// Anchor and Last reach SQL as ids: they must keep the id rule
	// (vocab.IDProblem), so a forged cursor fails here and never in the
	// database. Last may be empty; the kind's rule below says when.
	// A name reaches SQL only as a bound value, compared as text: it keeps
	// no rule but being valid UTF-8, not empty and without NUL.
	for _, f := range [...]struct{ name, value string }{{"anchor", c.Anchor}, {"last", c.Last}} {
		if msg := vocab.IDProblem(f.value); msg != "" && f.value != "" && !(f.name == "last" && spec.last == lastName) {
			return bad("cursor field %s %s", f.name, msg)
		}
	}
	switch {
	case spec.last == lastName && c.Last == "":
		return bad("cursor field last is empty, but %s cursors need the page's last name", c.Kind)
	case spec.last == lastName && strings.IndexByte(c.Last, 0) >= 0:
		return bad("cursor field last must not contain NUL")
	case spec.last == lastRequired && c.Last == "":
		return bad("cursor field last is empty, but %s cursors need the id of the page's last item", c.Kind)
	case spec.last == lastEmpty && c.Last != "":
		return bad("cursor field last must be empty in %s cursors", c.Kind)
	}
	if n := encoding.EncodedLen(payloadLen(c)); n > MaxLength {
		return bad("cursor is too long (%d characters, at most %d)", n, MaxLength)
	}
	return nil
}

// Decode parses a cursor string. It refuses, with a BAD_CURSOR error that
// says why, a cursor that is empty or too long, not base64url without
// padding, of a version this build does not read, truncated, followed by
// trailing data, or whose fields break the rules of Validate. It never
// panics. A decoded cursor still has to be checked against the list it is
// used on: see Check, or DecodeFor, which does both.
func Decode(s string) (Cursor, error) {
	if s == "" {
		return Cursor{}, bad("cursor is empty")
	}
	if len(s) > MaxLength {
		// Bytes over the limit may still be few enough characters; such a
		// string has a non-ASCII character, which checkAlphabet reports.
		if n := utf8.RuneCountInString(s); n > MaxLength {
			return Cursor{}, bad("cursor is too long (%d characters, at most %d)", n, MaxLength)
		}
	}
	if err := checkAlphabet(s); err != nil {
		return Cursor{}, err
	}
	if len(s)%4 == 1 {
		// Six bits cannot make a byte: some characters have been lost.
		return Cursor{}, bad("cursor is not base64url: a length of %d characters is impossible (was it cut short?)", len(s))
	}
	payload, err := encoding.DecodeString(s)
	if err != nil {
		// With the alphabet and the length checked, only stray bits in the
		// last character remain.
		return Cursor{}, bad("cursor is not base64url: its last character has stray bits (was it altered?)")
	}
	// len(s) >= 2 here, so the payload has at least one byte.
	switch v := payload[0]; v {
	case version1:
		return decodeFields(payload[1:], false)
	case version2:
		return decodeFields(payload[1:], true)
	default:
		return Cursor{}, bad("cursor version %d is not supported", v)
	}
}

// checkAlphabet refuses any character outside the base64url alphabet before
// decoding, which names the culprit and also catches the line breaks
// encoding/base64 would silently skip.
func checkAlphabet(s string) error {
	for i := 0; i < len(s); i++ {
		b := s[i]
		if 'A' <= b && b <= 'Z' || 'a' <= b && b <= 'z' || '0' <= b && b <= '9' || b == '-' || b == '_' {
			continue
		}
		at := utf8.RuneCountInString(s[:i]) // in characters, as the client counts
		if b >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				return bad("cursor is not base64url: unexpected byte 0x%02x at position %d", b, at)
			}
			return bad("cursor is not base64url: unexpected %q at position %d", r, at)
		}
		if b == '+' || b == '/' || b == '=' {
			return bad("cursor is not base64url: unexpected %q at position %d (cursors use the URL-safe alphabet, without padding)", b, at)
		}
		return bad("cursor is not base64url: unexpected %q at position %d", b, at)
	}
	return nil
}

// decodeFields decodes the payload of a version 1 cursor, or of a version 2
// one when withRevision is set, after its version byte.
func decodeFields(p []byte, withRevision bool) (Cursor, error) {
	r := reader{p: p}
	code, err := r.byte("kind")
	if err != nil {
		return Cursor{}, err
	}
	spec, ok := specOfCode(code)
	if !ok {
		return Cursor{}, bad("cursor has an unknown kind (code %d)", code)
	}
	ordinal, err := r.uvarint("ordinal")
	if err != nil {
		return Cursor{}, err
	}
	if ordinal > vocab.MaxSafe {
		return Cursor{}, bad("cursor field ordinal is not a natural number below 2^53")
	}
	c := Cursor{Kind: spec.kind, Ordinal: int64(ordinal)}
	for _, f := range [...]struct {
		name string
		dst  *string
	}{{"source", &c.Source}, {"anchor", &c.Anchor}, {"last", &c.Last}} {
		if *f.dst, err = r.string(f.name); err != nil {
			return Cursor{}, err
		}
	}
	lastField := "last"
	if withRevision {
		lastField = "revision"
		rev, err := r.uvarint("revision")
		if err != nil {
			return Cursor{}, err
		}
		switch {
		case rev > vocab.MaxSafe:
			return Cursor{}, bad("cursor field revision is not a natural number below 2^53")
		case rev == 0:
			return Cursor{}, bad("cursor version 2 with revision 0 is not minimally encoded (it is written as version 1)")
		}
		c.Revision = int64(rev)
	}
	if rest := len(r.p) - r.at; rest > 0 {
		return Cursor{}, bad("cursor has trailing data (%s after field %s)", countBytes(rest), lastField)
	}
	if err := c.Validate(); err != nil {
		return Cursor{}, err
	}
	return c, nil
}

// reader reads payload fields in order, naming the field in its errors.
type reader struct {
	p  []byte
	at int
}

func (r *reader) byte(field string) (byte, error) {
	if r.at >= len(r.p) {
		return 0, bad("cursor is truncated: field %s is missing", field)
	}
	b := r.p[r.at]
	r.at++
	return b, nil
}

func (r *reader) uvarint(field string) (uint64, error) {
	if r.at >= len(r.p) {
		return 0, bad("cursor is truncated: field %s is missing", field)
	}
	v, n := binary.Uvarint(r.p[r.at:])
	switch {
	case n == 0:
		return 0, bad("cursor is truncated: field %s is incomplete", field)
	case n < 0:
		return 0, bad("cursor field %s is not a natural number below 2^53", field)
	case n > 1 && r.p[r.at+n-1] == 0:
		// A minimal uvarint never ends in a zero byte, except 0 itself.
		return 0, bad("cursor field %s is not minimally encoded", field)
	}
	r.at += n
	return v, nil
}

func (r *reader) string(field string) (string, error) {
	n, err := r.uvarint(field + " length")
	if err != nil {
		return "", err
	}
	if rest := uint64(len(r.p) - r.at); n > rest {
		return "", bad("cursor is truncated: field %s has %d of its %s", field, rest, countBytes(n))
	}
	s := string(r.p[r.at : r.at+int(n)])
	r.at += int(n)
	return s, nil
}

// Check reports whether c may be used on the kind list of anchor in the
// store source. The error is BAD_CURSOR and says which binding failed; ids
// from the cursor are quoted and cut to 64 characters, so a crafted cursor
// cannot fill the response.
func (c Cursor) Check(source, anchor string, kind Kind) error {
	switch {
	case c.Source != source:
		return bad("cursor belongs to another store (source %s, this store is %s)", vocab.Quote(c.Source), vocab.Quote(source))
	case c.Kind != kind:
		return bad("cursor is for %s, not %s", kindName(c.Kind), kindName(kind))
	case c.Anchor != anchor && kind == List:
		return bad("cursor belongs to a list with another filter or order")
	case c.Anchor != anchor && kind == Flows:
		return bad("cursor belongs to a list of flows with another prefix")
	case c.Anchor != anchor:
		return bad("cursor belongs to the %s of run %s, not of run %s", kindName(kind), vocab.Quote(c.Anchor), vocab.Quote(anchor))
	}
	return nil
}

// DecodeFor decodes s and checks it belongs to the kind list of anchor in
// the store source: Decode and Check in one, so a caller cannot forget the
// check.
func DecodeFor(s, source, anchor string, kind Kind) (Cursor, error) {
	c, err := Decode(s)
	if err != nil {
		return Cursor{}, err
	}
	if err := c.Check(source, anchor, kind); err != nil {
		return Cursor{}, err
	}
	return c, nil
}

// countBytes says "1 byte" or "n bytes".
func countBytes[N int | uint64](n N) string {
	if n == 1 {
		return "1 byte"
	}
	return strconv.FormatUint(uint64(n), 10) + " bytes"
}

func bad(format string, args ...any) error {
	return fault.Errorf(fault.BadCursor, format, args...)
}

// kindName names k in a message: bare when it is a known kind, quoted and
// cut otherwise, since an unknown kind can only come from a caller's value.
func kindName(k Kind) string {
	if _, ok := specOfKind(k); ok {
		return string(k)
	}
	return vocab.Quote(string(k))
}

// Kinds returns every kind this build knows, in code order.
func Kinds() []Kind {
	out := make([]Kind, len(kinds))
	for i, s := range kinds {
		out[i] = s.kind
	}
	return out
}
