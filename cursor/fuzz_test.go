package cursor_test

import (
	"encoding/base64"
	"errors"
	"testing"

	"github.com/flowsnap/flowsnap/cursor"
	"github.com/flowsnap/flowsnap/fault"
	"github.com/flowsnap/flowsnap/store/vocab"
)

// FuzzDecode feeds Decode arbitrary strings, as clients can. Decode must
// never panic, must refuse with BAD_CURSOR only, and must accept only the one
// spelling Encode writes: a decoded cursor re-encodes to the input and decodes
// to itself. The seed corpus is in testdata/fuzz/FuzzDecode.
func FuzzDecode(f *testing.F) {
	f.Add(cursor.Encode(cursor.Cursor{Source: source, Anchor: "run-1", Kind: cursor.Children, Ordinal: 17, Last: "child-3"}))
	f.Add(cursor.Encode(cursor.Cursor{Source: source, Anchor: "run-1", Kind: cursor.Events, Ordinal: vocab.MaxSafe}))
	f.Add("")
	f.Add("AQ")
	f.Add("AQERA3NyYwNydW4Da2lk==")
	f.Fuzz(func(t *testing.T, s string) {
		c, err := cursor.Decode(s)
		if err != nil {
			var fe *fault.Error
			if !errors.As(err, &fe) || fe.Code != fault.BadCursor {
				t.Fatalf("Decode(%q) failed with %v (code %s), want BAD_CURSOR", s, err, fault.CodeOf(err))
			}
			if c != (cursor.Cursor{}) {
				t.Fatalf("Decode(%q) failed but returned %+v", s, c)
			}
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("Decode(%q) = %+v, which Validate refuses: %v", s, c, err)
		}
		again := cursor.Encode(c)
		if again != s {
			t.Fatalf("Decode(%q) = %+v, which encodes as %q: two spellings of one cursor", s, c, again)
		}
		c2, err := cursor.Decode(again)
		if err != nil || c2 != c {
			t.Fatalf("Decode(Encode(%+v)) = %+v, %v", c, c2, err)
		}
	})
}

// FuzzDecodePayload is FuzzDecode one layer down: it fuzzes the bytes under
// the base64, which mutations of a base64 string rarely reach intact, so the
// payload parser gets the fuzzer's full attention. The properties are
// FuzzDecode's.
func FuzzDecodePayload(f *testing.F) {
	f.Add(payload(1, 17, source, "run-1", "child-3"))
	f.Add(payload(5, vocab.MaxSafe, source, "run-1", ""))
	f.Add(payload(2, 300, "s", "ラン", "\U0001F600"))
	f.Add([]byte{1, 1, 0x80, 0x00})
	f.Add([]byte{7})
	f.Fuzz(func(t *testing.T, p []byte) {
		s := base64.RawURLEncoding.EncodeToString(p)
		c, err := cursor.Decode(s)
		if err != nil {
			if fault.CodeOf(err) != fault.BadCursor {
				t.Fatalf("Decode(%q) failed with %v, want BAD_CURSOR", s, err)
			}
			return
		}
		if again := cursor.Encode(c); again != s {
			t.Fatalf("payload %x decodes to %+v, which encodes as %q, not %q", p, c, again, s)
		}
	})
}

// fuzzKinds maps a fuzzed byte to a kind, unknown ones included, so the
// fuzzer also checks that a cursor Validate refuses cannot be decoded.
var fuzzKinds = []cursor.Kind{cursor.Children, cursor.Rounds, cursor.Steps, cursor.InboundEvents, cursor.Events, "", "runs", cursor.List}

// FuzzRoundTrip encodes arbitrary cursors. One that Validate accepts must
// decode to itself; one that Validate refuses must be refused by Decode too,
// so Encode never silently changes what a cursor means.
func FuzzRoundTrip(f *testing.F) {
	f.Add(source, "run-1", uint8(0), int64(17), "child-3")
	f.Add(source, "run-1", uint8(4), int64(0), "")
	f.Add(source, "ラン", uint8(1), int64(vocab.MaxSafe), "\U0001F600")
	f.Add("s", "a", uint8(2), int64(-1), "x")
	f.Add("s", "a\xff", uint8(6), int64(1<<62), "")
	f.Fuzz(func(t *testing.T, src, anchor string, kind uint8, ordinal int64, last string) {
		c := cursor.Cursor{Source: src, Anchor: anchor, Kind: fuzzKinds[int(kind)%len(fuzzKinds)], Ordinal: ordinal, Last: last}
		roundTrip(t, c)
	})
}

// roundTrip holds Encode and Decode to FuzzRoundTrip's properties for c.
func roundTrip(t *testing.T, c cursor.Cursor) {
	t.Helper()
	s := cursor.Encode(c)
	got, err := cursor.Decode(s)
	if verr := c.Validate(); verr != nil {
		if err == nil {
			t.Fatalf("Validate refuses %+v (%v), but Decode(Encode(c)) accepted it as %+v", c, verr, got)
		}
		return
	}
	if err != nil {
		t.Fatalf("Decode(Encode(%+v)) failed: %v", c, err)
	}
	if got != c {
		t.Fatalf("Decode(Encode(c)) = %+v, want %+v", got, c)
	}
	if err := got.Check(c.Source, c.Anchor, c.Kind); err != nil {
		t.Fatalf("a decoded cursor does not belong to its own list: %v", err)
	}
}
