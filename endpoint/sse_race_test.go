package endpoint_test

import (
	"testing"
	"time"

	"github.com/flowsnap/flowsnap/endpoint"
	"github.com/flowsnap/flowsnap/live"
	"github.com/flowsnap/flowsnap/store"
)

// TestKeepAlivesAfterAStreamEndsWriteNothing ends many event streams at
// once with keep-alives due every millisecond: a keep-alive that fires
// after the stream's handler returned must not write to its finished
// response (which panics the whole server).
func TestKeepAlivesAfterAStreamEndsWriteNothing(t *testing.T) {
	t.Parallel()
	e := liveFixture(t, store.SQLite, live.Options{}, endpoint.Options{KeepAlive: time.Millisecond}, "r1")
	const wrong = "00000000000000000000000000000000"
	for range 300 {
		s := subscribeSSE(t, e.url, `subscription($s: String) { changes(since: 0, source: $s) { nextRevision } }`, map[string]any{"s": wrong})
		if ev := next(t, s.events); ev.code() != "SOURCE_CHANGED" {
			t.Fatalf("got %+v, want SOURCE_CHANGED", ev)
		}
		waitClosed(t, s.done, "the stream's end")
		s.cancel()
	}
}
