package cursor_test

import (
	"encoding/base64"
	"encoding/binary"
	"testing"

	"github.com/flowsnap/flowsnap/cursor"
	"github.com/flowsnap/flowsnap/store/vocab"
)

func TestACursorWithARevisionIsVersion2AndDecodesToItself(t *testing.T) {
	t.Parallel()
	for _, k := range cursor.Kinds() {
		t.Run(string(k), func(t *testing.T) {
			t.Parallel()
			c := cursor.Cursor{Source: source, Anchor: "run-1", Kind: k, Ordinal: 9, Last: "x", Revision: 5_000}
			if c.Validate() != nil {
				c.Last = "" // a kind whose ordinals are unique
			}
			s := cursor.Encode(c)
			p, err := base64.RawURLEncoding.DecodeString(s)
			if err != nil {
				t.Fatal(err)
			}
			if p[0] != 2 {
				t.Fatalf("a cursor with a revision starts with version %d, want 2", p[0])
			}
			got, err := cursor.Decode(s)
			if err != nil || got != c {
				t.Fatalf("Decode(Encode(%+v)) = %+v, %v", c, got, err)
			}
		})
	}
}

func TestACursorWithoutARevisionStaysVersion1(t *testing.T) {
	t.Parallel()
	c := cursor.Cursor{Source: source, Anchor: "run-1", Kind: cursor.Children, Ordinal: 17, Last: "child-3"}
	v1 := raw(payload(1, 17, source, "run-1", "child-3")...)
	if got := cursor.Encode(c); got != v1 {
		t.Fatalf("Encode without a revision = %q, want the version 1 spelling %q", got, v1)
	}
	got, err := cursor.Decode(v1)
	if err != nil || got != c || got.Revision != 0 {
		t.Fatalf("a version 1 cursor decodes to %+v, %v; want %+v with no revision", got, err, c)
	}
}

func TestVersion2EncodingIsStable(t *testing.T) {
	t.Parallel()
	// The wire format is an interface: version 1's fields, then the
	// revision as a uvarint.
	c := cursor.Cursor{Source: source, Anchor: "run-1", Kind: cursor.Rounds, Ordinal: 3, Last: "run-1-r3", Revision: 300}
	p := payload(2, 3, source, "run-1", "run-1-r3")
	p[0] = 2
	p = binary.AppendUvarint(p, 300)
	if got, want := cursor.Encode(c), raw(p...); got != want {
		t.Fatalf("Encode(%+v) = %q, want %q", c, got, want)
	}
}

func TestValidateRefusesARevisionOutOfRange(t *testing.T) {
	t.Parallel()
	for _, rev := range []int64{-1, vocab.MaxSafe + 1} {
		c := cursor.Cursor{Source: source, Anchor: "run-1", Kind: cursor.Children, Ordinal: 1, Last: "a", Revision: rev}
		wantBadCursor(t, c.Validate(), "field revision is not a natural number")
		_, err := cursor.Decode(cursor.Encode(c))
		wantBadCursor(t, err, "field revision is not a natural number")
	}
}

// FuzzRoundTripRevision is FuzzRoundTrip with a revision, over every kind
// this build knows (and unknown ones).
func FuzzRoundTripRevision(f *testing.F) {
	f.Add(source, "run-1", uint8(0), int64(17), "child-3", int64(5000))
	f.Add(source, "run-1", uint8(4), int64(0), "", int64(1))
	f.Add("s", "a", uint8(1), int64(3), "x", int64(-1))
	f.Fuzz(func(t *testing.T, src, anchor string, kind uint8, ordinal int64, last string, revision int64) {
		kinds := append(cursor.Kinds(), "", "runs")
		c := cursor.Cursor{Source: src, Anchor: anchor, Kind: kinds[int(kind)%len(kinds)], Ordinal: ordinal, Last: last, Revision: revision}
		roundTrip(t, c)
	})
}
