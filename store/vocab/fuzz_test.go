package vocab

import (
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/flowsnap/flowsnap/fault"
)

// FuzzCheckID holds CheckID to the identifier rule of ARCHITECTURE.md, "The contract": non-empty, valid UTF-8
// (so no lone surrogate), no NUL, at most 1024 UTF-16 code units. Quote must
// take any id and stay short.
func FuzzCheckID(f *testing.F) {
	for _, s := range []string{"", "a", "run-1", "a\x00", "\xff", "\xed\xa0\x80", strings.Repeat("a", 1024),
		strings.Repeat("a", 1025), strings.Repeat("😀", 512), strings.Repeat("😀", 513), strings.Repeat("é", 1024)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		want := id != "" && utf8.ValidString(id) && !strings.ContainsRune(id, 0) &&
			len(utf16.Encode([]rune(id))) <= MaxIDUnits
		err := CheckID("an id", id)
		if (err == nil) != want {
			t.Fatalf("CheckID(%q) = %v, want valid %v", id, err, want)
		}
		if err != nil && fault.CodeOf(err) != fault.BadUserInput {
			t.Fatalf("CheckID(%q) = %v, want BAD_USER_INPUT", id, err)
		}
		// 64 characters quote to at most 10 bytes each (\U0010fffd), plus
		// the quotes and the ellipsis.
		if q := Quote(id); len(q) > 10*64+2+len("…") {
			t.Fatalf("Quote of %d bytes is %d bytes", len(id), len(q))
		}
	})
}
