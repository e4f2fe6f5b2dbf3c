package record

import "testing"

func TestClipKeepsMessagesShortAndValidUTF8(t *testing.T) {
	t.Parallel()
	long := ""
	for range 200 {
		long += "é"
	}
	got := Clip(long)
	if len(got) > maxMessage+len("…") {
		t.Fatalf("clipped to %d bytes", len(got))
	}
	for i, r := range got {
		if r == '\uFFFD' {
			t.Fatalf("broken UTF-8 at %d: %q", i, got)
		}
	}
}

// FuzzRequestMembers holds requestMembers to what encoding/json makes of a
// body unmarshalled into the four members' RawMessages: the same members,
// byte for byte, and the same refusal of what is not an object.
