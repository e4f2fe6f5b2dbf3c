package cursor_test

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/flowsnap/flowsnap/cursor"
	"github.com/flowsnap/flowsnap/fault"
	"github.com/flowsnap/flowsnap/store/vocab"
)

const source = "0123456789abcdef0123456789abcdef"

// raw encodes a hand-built payload, so tests can say exactly which bytes a
// malformed cursor holds.
func raw(b ...byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// payload builds a version 1 payload field by field.
func payload(kind byte, ordinal uint64, fields ...string) []byte {
	b := []byte{1, kind}
	b = binary.AppendUvarint(b, ordinal)
	for _, f := range fields {
		b = binary.AppendUvarint(b, uint64(len(f)))
		b = append(b, f...)
	}
	return b
}

func concat(parts ...[]byte) []byte {
	var b []byte
	for _, p := range parts {
		b = append(b, p...)
	}
	return b
}

// wantBadCursor fails unless err is a BAD_CURSOR error whose message contains
// want.
func wantBadCursor(t *testing.T, err error, want string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want BAD_CURSOR containing %q", want)
	}
	var fe *fault.Error
	if !errors.As(err, &fe) || fe.Code != fault.BadCursor {
		t.Fatalf("got %v (code %s), want BAD_CURSOR", err, fault.CodeOf(err))
	}
	if !strings.Contains(fe.Message, want) {
		t.Fatalf("got message %q, want it to contain %q", fe.Message, want)
	}
}

func TestEncodeThenDecodeGivesTheSameCursor(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		c    cursor.Cursor
	}{
		{"a children cursor at the first edge", cursor.Cursor{Source: source, Anchor: "run-1", Kind: cursor.Children, Ordinal: 0, Last: "child-1"}},
		{"a rounds cursor deep in a lineage", cursor.Cursor{Source: source, Anchor: "run-1", Kind: cursor.Rounds, Ordinal: 1_000_000, Last: "run-1-r1000000"}},
		{"a steps cursor at the largest ordinal", cursor.Cursor{Source: source, Anchor: "run-1", Kind: cursor.Steps, Ordinal: vocab.MaxSafe, Last: "step"}},
		{"an inbound events cursor", cursor.Cursor{Source: source, Anchor: "run-1", Kind: cursor.InboundEvents, Ordinal: 1_767_225_600_000, Last: "evt-9"}},
		{"an events cursor without a tie-breaker", cursor.Cursor{Source: source, Anchor: "run-1", Kind: cursor.Events, Ordinal: 42}},
		{"a list cursor bound to a filter's digest", cursor.Cursor{Source: source, Anchor: "3f0c2a9d41b7e6058c1d2e3f4a5b6c7d", Kind: cursor.List, Ordinal: 1_764_470_802_123, Last: "run-42"}},
		{"a flows cursor after a long name", cursor.Cursor{Source: source, Anchor: "3f0c2a9d41b7e6058c1d2e3f4a5b6c7d", Kind: cursor.Flows, Last: strings.Repeat("billing ", 500) + "\U0010FFFF"}},
		{"ids with non-ASCII characters", cursor.Cursor{Source: "s", Anchor: "ラン/1 ✓", Kind: cursor.Children, Ordinal: 127, Last: "\U0001F600 child"}},
		{"ids of 1024 UTF-16 code units", cursor.Cursor{Source: source, Anchor: strings.Repeat("a", 1024), Kind: cursor.Rounds, Ordinal: 128, Last: strings.Repeat("𝄞", 512)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := cursor.Encode(tc.c)
			got, err := cursor.Decode(s)
			if err != nil {
				t.Fatalf("Decode(Encode(%+v)) failed: %v", tc.c, err)
			}
			if got != tc.c {
				t.Fatalf("Decode(Encode(c)) = %+v, want %+v", got, tc.c)
			}
			if again := cursor.Encode(got); again != s {
				t.Fatalf("re-encoding gave %q, want %q", again, s)
			}
		})
	}
}

// TestVersion1EncodingIsStable pins the wire format: cursors already handed
// to clients must keep decoding, so these strings may never change.
func TestVersion1EncodingIsStable(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		c    cursor.Cursor
		want string
	}{
		{cursor.Cursor{Source: "src", Anchor: "run", Kind: cursor.Children, Ordinal: 17, Last: "kid"}, "AQERA3NyYwNydW4Da2lk"},
		{cursor.Cursor{Source: "src", Anchor: "run", Kind: cursor.Rounds, Ordinal: 300, Last: "r2"}, "AQKsAgNzcmMDcnVuAnIy"},
		{cursor.Cursor{Source: "src", Anchor: "run", Kind: cursor.Steps, Ordinal: 0, Last: "s"}, "AQMAA3NyYwNydW4Bcw"},
		{cursor.Cursor{Source: "src", Anchor: "run", Kind: cursor.InboundEvents, Ordinal: 1, Last: "e"}, "AQQBA3NyYwNydW4BZQ"},
		{cursor.Cursor{Source: "src", Anchor: "run", Kind: cursor.Events, Ordinal: 2}, "AQUCA3NyYwNydW4A"},
		{cursor.Cursor{Source: "src", Anchor: "digest", Kind: cursor.List, Ordinal: 5, Last: "r"}, "AQYFA3NyYwZkaWdlc3QBcg"},
		{cursor.Cursor{Source: "src", Anchor: "digest", Kind: cursor.Flows, Last: "billing"}, "AQcAA3NyYwZkaWdlc3QHYmlsbGluZw"},
	} {
		t.Run(string(tc.c.Kind)+" cursors keep their encoding", func(t *testing.T) {
			t.Parallel()
			if got := cursor.Encode(tc.c); got != tc.want {
				t.Fatalf("Encode(%+v) = %q, want %q", tc.c, got, tc.want)
			}
			got, err := cursor.Decode(tc.want)
			if err != nil || got != tc.c {
				t.Fatalf("Decode(%q) = %+v, %v; want %+v", tc.want, got, err, tc.c)
			}
		})
	}
}

var urlSafe = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

func TestEncodeUsesTheURLSafeAlphabetWithoutPadding(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	var sawDash, sawUnderscore bool
	for i := range 2000 {
		// Non-ASCII ids and large ordinals give payload bytes whose standard
		// encoding needs '+' and '/'.
		c := cursor.Cursor{
			Source: source,
			Anchor: randomID(rng),
			Kind:   cursor.Children,
			// Vary the length so every tail (none, 2 or 3 characters) occurs.
			Ordinal: rng.Int64N(vocab.MaxSafe + 1),
			Last:    strings.Repeat("x", i%3) + randomID(rng),
		}
		s := cursor.Encode(c)
		if !urlSafe.MatchString(s) {
			t.Fatalf("Encode(%+v) = %q, which is not base64url without padding", c, s)
		}
		sawDash = sawDash || strings.Contains(s, "-")
		sawUnderscore = sawUnderscore || strings.Contains(s, "_")
	}
	if !sawDash || !sawUnderscore {
		t.Fatalf("no cursor used '-' (%v) or '_' (%v): the test does not exercise the URL-safe characters", sawDash, sawUnderscore)
	}
}

func randomID(rng *rand.Rand) string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789-ÿ€\U0001F600"
	runes := []rune(alphabet)
	var b strings.Builder
	for range 1 + rng.IntN(40) {
		b.WriteRune(runes[rng.IntN(len(runes))])
	}
	return b.String()
}

func TestDecodeRefusesStandardBase64(t *testing.T) {
	t.Parallel()
	// "~~~" encodes as "fn5-" and "???" as "Pz8_" when aligned; grow a real
	// cursor until its encoding holds both URL-safe characters and needs
	// padding, so each refusal below is of a cursor that is otherwise valid.
	c := cursor.Cursor{Source: source, Anchor: "run", Kind: cursor.Children, Ordinal: 1, Last: "kid"}
	s := cursor.Encode(c)
	for !strings.Contains(s, "-") || !strings.Contains(s, "_") || len(s)%4 == 0 {
		if len(c.Last) > 100 {
			t.Fatalf("found no cursor with both '-' and '_' (last: %q)", c.Last)
		}
		c.Last += "~~~???"[len(c.Last)%6:][:1]
		s = cursor.Encode(c)
	}
	if _, err := cursor.Decode(s); err != nil {
		t.Fatalf("the URL-safe cursor %q does not decode: %v", s, err)
	}
	payload := mustDecodeURL(t, s)
	std := base64.StdEncoding.EncodeToString(payload)
	for _, tc := range []struct{ name, input, want string }{
		{"the standard alphabet with padding is refused", std, "cursors use the URL-safe alphabet, without padding"},
		{"the standard alphabet without padding is refused", strings.TrimRight(std, "="), "cursors use the URL-safe alphabet, without padding"},
		{"a '+' is refused", strings.ReplaceAll(s, "-", "+"), `unexpected '+'`},
		{"a '/' is refused", strings.ReplaceAll(s, "_", "/"), `unexpected '/'`},
		{"the URL-safe alphabet with padding is refused", base64.URLEncoding.EncodeToString(payload), `unexpected '=' at position ` + strconv.Itoa(len(s))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := cursor.Decode(tc.input)
			wantBadCursor(t, err, tc.want)
		})
	}
}

func mustDecodeURL(t *testing.T, s string) []byte {
	t.Helper()
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestDecodeRefusesMalformedCursors(t *testing.T) {
	t.Parallel()
	valid := payload(1, 7, source, "run", "kid")
	validString := raw(valid...)
	for _, tc := range []struct{ name, input, want string }{
		{"an empty cursor is refused", "", "cursor is empty"},
		{"a cursor over the length limit is refused before decoding", strings.Repeat("A", cursor.MaxLength+1), "too long (32769 characters, at most 32768)"},
		{"a long cursor is measured in characters, not bytes", strings.Repeat("é", cursor.MaxLength+1), "too long (32769 characters, at most 32768)"},
		{"a cursor under the limit in characters but over it in bytes names its first bad character", strings.Repeat("é", cursor.MaxLength/2+1), `unexpected 'é' at position 0`},
		{"a line break is refused, though the base64 decoder would skip it", validString[:4] + "\n" + validString[4:], `unexpected '\n' at position 4`},
		{"a space is refused", validString + " ", "unexpected ' '"},
		{"a byte that is not UTF-8 is refused", "AQ\xffA", "unexpected byte 0xff at position 2"},
		{"a length no base64 string can have is refused", "AQEHA", "a length of 5 characters is impossible"},
		{"stray bits in the last character are refused", "AR", "stray bits"},
		{"version 0 is refused", raw(0, 1, 7), "cursor version 0 is not supported"},
		{"an unknown version is refused", raw(concat([]byte{7}, valid[1:])...), "cursor version 7 is not supported"},
		{"version 3 is not read by this build", raw(3), "cursor version 3 is not supported"},
		{"a version 2 cursor without its revision is truncated", raw(concat([]byte{2}, valid[1:])...), "truncated: field revision is missing"},
		{"a version 2 cursor with revision 0 is not minimal", raw(concat([]byte{2}, valid[1:], []byte{0})...), "revision 0 is not minimally encoded"},
		{"a version 2 revision of 2^53 is refused", raw(concat([]byte{2}, valid[1:], binary.AppendUvarint(nil, vocab.MaxSafe+1))...), "field revision is not a natural number below 2^53"},
		{"a version 2 revision not minimally encoded is refused", raw(concat([]byte{2}, valid[1:], []byte{0x85, 0x00})...), "field revision is not minimally encoded"},
		{"bytes after a version 2 revision are trailing data", raw(concat([]byte{2}, valid[1:], []byte{5, 0})...), "trailing data (1 byte after field revision)"},
		{"a cursor that is only a version is truncated", raw(1), "truncated: field kind is missing"},
		{"kind code 0 is refused as unknown", raw(payload(0, 7, source, "run", "kid")...), "unknown kind (code 0)"},
		{"a kind code from a newer build is refused as unknown", raw(payload(200, 7, source, "run", "kid")...), "unknown kind (code 200)"},
		{"a missing ordinal is truncation", raw(1, 1), "truncated: field ordinal is missing"},
		{"an unfinished ordinal is truncation", raw(1, 1, 0x80), "truncated: field ordinal is incomplete"},
		{"an ordinal of 2^53 is refused", raw(payload(1, vocab.MaxSafe+1, source, "run", "kid")...), "field ordinal is not a natural number below 2^53"},
		{"an ordinal beyond 64 bits is refused", raw(1, 1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f), "field ordinal is not a natural number below 2^53"},
		{"an ordinal that is not minimally encoded is refused", raw(concat([]byte{1, 1, 0x87, 0x00}, valid[3:])...), "field ordinal is not minimally encoded"},
		{"a missing source is truncation", raw(1, 1, 7), "truncated: field source length is missing"},
		{"a source shorter than its length is truncation", raw(1, 1, 7, 5, 'a', 'b'), "truncated: field source has 2 of its 5 bytes"},
		{"a length far beyond the payload is truncation", raw(1, 1, 7, 0xff, 0xff, 0xff, 0xff, 0x0f, 'a'), "truncated: field source has 1 of its 4294967295 bytes"},
		{"a source length that is not minimally encoded is refused", raw(1, 1, 7, 0x83, 0x00, 'a', 'b', 'c'), "field source length is not minimally encoded"},
		{"a missing anchor is truncation", raw(payload(1, 7, source)...), "truncated: field anchor length is missing"},
		{"a missing last is truncation", raw(payload(1, 7, source, "run")...), "truncated: field last length is missing"},
		{"bytes after the last field are trailing data", raw(append(valid, 0, 0)...), "trailing data (2 bytes after field last)"},
		{"one byte after the last field is trailing data", raw(append(valid, 0)...), "trailing data (1 byte after field last)"},
		{"a fourth string is trailing data", raw(payload(1, 7, source, "run", "kid", "more")...), "trailing data (5 bytes after field last)"},
		{"a source that is not UTF-8 is refused", raw(payload(1, 7, "\xff\xfe", "run", "kid")...), "field source is not valid UTF-8"},
		{"an anchor that is not UTF-8 is refused", raw(payload(1, 7, source, "r\xc3", "kid")...), "field anchor is not valid UTF-8"},
		{"a last id with an encoded surrogate is refused", raw(payload(1, 7, source, "run", "\xed\xa0\x80")...), "field last is not valid UTF-8"},
		{"an empty source is refused", raw(payload(1, 7, "", "run", "kid")...), "field source is empty"},
		{"an empty anchor is refused", raw(payload(1, 7, source, "", "kid")...), "field anchor is empty"},
		{"a children cursor without its last run id is refused", raw(payload(1, 7, source, "run", "")...), "field last is empty, but children cursors need"},
		{"an events cursor with a last id is refused", raw(payload(5, 7, source, "run", "x")...), "field last must be empty in events cursors"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, err := cursor.Decode(tc.input)
			wantBadCursor(t, err, tc.want)
			if c != (cursor.Cursor{}) {
				t.Fatalf("a refused cursor came back as %+v, want the zero Cursor", c)
			}
		})
	}
}

func TestCheckRefusesACursorUsedElsewhere(t *testing.T) {
	t.Parallel()
	c := cursor.Cursor{Source: source, Anchor: "run-a", Kind: cursor.Rounds, Ordinal: 3, Last: "run-a-3"}
	long := strings.Repeat("€", 5000)
	for _, tc := range []struct {
		name           string
		c              cursor.Cursor
		source, anchor string
		kind           cursor.Kind
		want           string
	}{
		{"a cursor from another store is refused", c, "ffffffffffffffffffffffffffffffff", "run-a", cursor.Rounds, `cursor belongs to another store (source "0123456789abcdef0123456789abcdef", this store is "ffffffffffffffffffffffffffffffff")`},
		{"the store is checked before anything else", c, "other", "run-b", cursor.Children, "cursor belongs to another store"},
		{"a rounds cursor is refused on children", c, source, "run-a", cursor.Children, "cursor is for rounds, not children"},
		{"the kind is checked before the anchor", c, source, "run-b", cursor.Steps, "cursor is for rounds, not steps"},
		{"a cursor of another run is refused", c, source, "run-b", cursor.Rounds, `cursor belongs to the rounds of run "run-a", not of run "run-b"`},
		{"a long anchor id is cut in the message", cursor.Cursor{Source: source, Anchor: long, Kind: cursor.Children, Last: "x"}, source, "run-b", cursor.Children, `of run "` + strings.Repeat("€", 64) + `"…, not of run "run-b"`},
		{"a long source is cut in the message", cursor.Cursor{Source: long, Anchor: "run-a", Kind: cursor.Children, Last: "x"}, source, "run-a", cursor.Children, `(source "` + strings.Repeat("€", 64) + `"…, this store`},
		{"a list cursor of another filter or order is refused", cursor.Cursor{Source: source, Anchor: "digest-a", Kind: cursor.List, Last: "x"}, source, "digest-b", cursor.List, "cursor belongs to a list with another filter or order"},
		{"a flows cursor of another prefix is refused", cursor.Cursor{Source: source, Anchor: "digest-a", Kind: cursor.Flows, Last: "x"}, source, "digest-b", cursor.Flows, "cursor belongs to a list of flows with another prefix"},
		{"a flows cursor is refused on a list of runs", cursor.Cursor{Source: source, Anchor: "digest-a", Kind: cursor.Flows, Last: "x"}, source, "digest-a", cursor.List, "cursor is for flows, not list"},
		{"a list cursor is refused on children", cursor.Cursor{Source: source, Anchor: "digest-a", Kind: cursor.List, Last: "x"}, source, "run-a", cursor.Children, "cursor is for list, not children"},
		{"an unknown kind in a hand-made cursor is quoted", cursor.Cursor{Source: source, Anchor: "run-a", Kind: "runz", Last: "x"}, source, "run-a", cursor.Children, `cursor is for "runz", not children`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := tc.c.Check(tc.source, tc.anchor, tc.kind)
			wantBadCursor(t, err, tc.want)
			if n := utf8.RuneCountInString(err.Error()); n > 300 {
				t.Fatalf("the message has %d characters; user data must be cut", n)
			}
		})
	}
	if err := c.Check(source, "run-a", cursor.Rounds); err != nil {
		t.Fatalf("a cursor used on its own list was refused: %v", err)
	}
}

func TestDecodeForDecodesAndChecks(t *testing.T) {
	t.Parallel()
	c := cursor.Cursor{Source: source, Anchor: "run-a", Kind: cursor.Children, Ordinal: 9, Last: "kid"}
	s := cursor.Encode(c)
	t.Run("a cursor on its own list decodes", func(t *testing.T) {
		t.Parallel()
		got, err := cursor.DecodeFor(s, source, "run-a", cursor.Children)
		if err != nil || got != c {
			t.Fatalf("DecodeFor = %+v, %v; want %+v", got, err, c)
		}
	})
	t.Run("a cursor on another list is refused", func(t *testing.T) {
		t.Parallel()
		got, err := cursor.DecodeFor(s, source, "run-a", cursor.Rounds)
		wantBadCursor(t, err, "cursor is for children, not rounds")
		if got != (cursor.Cursor{}) {
			t.Fatalf("a refused cursor came back as %+v", got)
		}
	})
	t.Run("a malformed cursor is refused", func(t *testing.T) {
		t.Parallel()
		_, err := cursor.DecodeFor(s[:len(s)-2], source, "run-a", cursor.Children)
		wantBadCursor(t, err, "truncated")
	})
}

func TestAnInvalidCursorEncodesToOneDecodeRefuses(t *testing.T) {
	t.Parallel()
	ok := cursor.Cursor{Source: source, Anchor: "run", Kind: cursor.Children, Ordinal: 1, Last: "kid"}
	with := func(f func(*cursor.Cursor)) cursor.Cursor { c := ok; f(&c); return c }
	for _, tc := range []struct {
		name string
		c    cursor.Cursor
		want string
	}{
		{"an unknown kind", with(func(c *cursor.Cursor) { c.Kind = "runs" }), "unknown kind"},
		{"an empty kind", with(func(c *cursor.Cursor) { c.Kind = "" }), "unknown kind"},
		{"a negative ordinal", with(func(c *cursor.Cursor) { c.Ordinal = -1 }), "field ordinal is not a natural number below 2^53"},
		{"an ordinal of 2^53", with(func(c *cursor.Cursor) { c.Ordinal = vocab.MaxSafe + 1 }), "field ordinal is not a natural number below 2^53"},
		{"an anchor that is not UTF-8", with(func(c *cursor.Cursor) { c.Anchor = "\x80" }), "field anchor is not valid UTF-8"},
		{"an empty source", with(func(c *cursor.Cursor) { c.Source = "" }), "field source is empty"},
		{"a missing tie-breaker", with(func(c *cursor.Cursor) { c.Last = "" }), "field last is empty"},
		{"ids too long for a cursor", with(func(c *cursor.Cursor) { c.Last = strings.Repeat("x", 25000) }), "too long"},
		{"a last id with a NUL", with(func(c *cursor.Cursor) { c.Last = "kid\x00" }), "field last must not contain NUL"},
		{"an anchor with a NUL", with(func(c *cursor.Cursor) { c.Anchor = "\x00run" }), "field anchor must not contain NUL"},
		{"a last id of 1025 UTF-16 code units", with(func(c *cursor.Cursor) { c.Last = strings.Repeat("\U0001F600", 512) + "x" }), "more than 1024 UTF-16 code units"},
		{"a flows cursor without a name", with(func(c *cursor.Cursor) { c.Kind, c.Last = cursor.Flows, "" }), "need the page's last name"},
		{"a flows cursor with a NUL in its name", with(func(c *cursor.Cursor) { c.Kind, c.Last = cursor.Flows, "a\x00b" }), "field last must not contain NUL"},
		{"a flows cursor whose name is not UTF-8", with(func(c *cursor.Cursor) { c.Kind, c.Last = cursor.Flows, "a\xffb" }), "field last is not valid UTF-8"},
	} {
		t.Run(tc.name+" is refused by Validate and by Decode", func(t *testing.T) {
			t.Parallel()
			wantBadCursor(t, tc.c.Validate(), tc.want)
			_, err := cursor.Decode(cursor.Encode(tc.c))
			wantBadCursor(t, err, tc.want)
		})
	}
	if err := ok.Validate(); err != nil {
		t.Fatalf("a valid cursor was refused: %v", err)
	}
}

func TestTheLongestValidCursorDecodes(t *testing.T) {
	t.Parallel()
	c := cursor.Cursor{Anchor: "run", Kind: cursor.Children, Ordinal: 1, Last: "kid"}
	// 32768 characters are 24576 bytes: version, kind and ordinal take 3,
	// anchor and last a length byte each, and Source a 3-byte length. Ids
	// are at most 1024 UTF-16 code units, so the source is what can be long
	// (a forged one, refused later by Check).
	c.Source = strings.Repeat("s", cursor.MaxLength*3/4-3-3-(1+len(c.Anchor))-(1+len(c.Last)))
	s := cursor.Encode(c)
	if len(s) != cursor.MaxLength {
		t.Fatalf("the test cursor has %d characters, want %d", len(s), cursor.MaxLength)
	}
	if got, err := cursor.Decode(s); err != nil || got != c {
		t.Fatalf("a cursor of exactly %d characters was refused: %v", cursor.MaxLength, err)
	}
	c.Source += "x"
	_, err := cursor.Decode(cursor.Encode(c))
	wantBadCursor(t, err, "too long (32770 characters, at most 32768)")
}
