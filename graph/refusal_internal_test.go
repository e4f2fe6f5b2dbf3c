package graph

import (
	"testing"
	"time"
)

func TestTheLogLimiterLetsTenLinesASecondPerReasonAndCountsTheRest(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_000, 0)
	l := newLogLimiter(10)
	l.now = func() time.Time { return now }
	written := 0
	for range 30_000 {
		if ok, _ := l.allow("store"); ok {
			written++
		}
	}
	if written != 10 {
		t.Fatalf("%d lines written in one second, want 10", written)
	}
	if ok, _ := l.allow("parse"); !ok {
		t.Fatal("another reason was held back by the first one's limit")
	}
	now = now.Add(time.Second)
	ok, suppressed := l.allow("store")
	if !ok || suppressed != 30_000-10 {
		t.Fatalf("the next second's first line: written %v, suppressed %d, want %d", ok, suppressed, 30_000-10)
	}
}

func TestClipKeepsMessagesShortAndValidUTF8(t *testing.T) {
	t.Parallel()
	long := ""
	for range 200 {
		long += "é"
	}
	got := clip(long)
	if len(got) > maxMessage+len("…") {
		t.Fatalf("clipped to %d bytes", len(got))
	}
	for i, r := range got {
		if r == '\uFFFD' {
			t.Fatalf("broken UTF-8 at %d: %q", i, got)
		}
	}
}
