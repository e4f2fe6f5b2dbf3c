package endpoint_test

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"

	"github.com/flowsnap/flowsnap/auth"
	"github.com/flowsnap/flowsnap/endpoint"
	"github.com/flowsnap/flowsnap/live"
	"github.com/flowsnap/flowsnap/store"
)

// TestAStreamEndsWhenItsTokenIsWithdrawn opens subscriptions over SSE and
// WebSocket with a token, withdraws the token from the tokens file, and
// sees both streams end at the next check, rather than outlive it.
func TestAStreamEndsWhenItsTokenIsWithdrawn(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "tokens.json")
	write := func(token string) {
		sum := sha256.Sum256([]byte(token))
		must(t, os.WriteFile(path, []byte(`[{"name":"viewer","sha256":"`+hex.EncodeToString(sum[:])+`","flows":["*"],"payloads":true}]`), 0o600))
	}
	write("first-token")
	tokens, err := auth.OpenTokens(path, nil)
	must(t, err)
	e := liveFixture(t, store.SQLite, live.Options{}, endpoint.Options{Authenticator: tokens, RecheckInterval: 50 * time.Millisecond}, "r1")
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()

	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url+"/graphql", strings.NewReader(`{"query":"subscription { position { revision } }"}`))
	must(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Authorization", "Bearer first-token")
	res, err := http.DefaultClient.Do(req)
	must(t, err)
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("SSE: %d", res.StatusCode)
	}
	sseEnded := make(chan struct{})
	sseFirst := make(chan struct{}, 1)
	go func() {
		defer close(sseEnded)
		sc := bufio.NewScanner(res.Body)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "data:") {
				select {
				case sseFirst <- struct{}{}:
				default:
				}
			}
		}
	}()

	conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(e.url, "http")+"/graphql", &websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}})
	must(t, err)
	defer conn.CloseNow()
	type message struct {
		ID      string         `json:"id,omitempty"`
		Type    string         `json:"type"`
		Payload map[string]any `json:"payload,omitempty"`
	}
	must(t, wsjson.Write(ctx, conn, message{Type: "connection_init", Payload: map[string]any{"authorization": "Bearer first-token"}}))
	must(t, wsjson.Write(ctx, conn, message{ID: "1", Type: "subscribe", Payload: map[string]any{"query": "subscription { position { revision } }"}}))
	wsEnded := make(chan struct{})
	wsFirst := make(chan struct{}, 1)
	go func() {
		defer close(wsEnded)
		for {
			var m message
			if err := wsjson.Read(ctx, conn, &m); err != nil {
				return
			}
			if m.Type == "next" {
				select {
				case wsFirst <- struct{}{}:
				default:
				}
			}
		}
	}()
	for name, first := range map[string]chan struct{}{"SSE": sseFirst, "WebSocket": wsFirst} {
		select {
		case <-first:
		case <-ctx.Done():
			t.Fatalf("no first event over %s", name)
		}
	}
	// Past a few checks, both still stream.
	time.Sleep(300 * time.Millisecond)
	select {
	case <-sseEnded:
		t.Fatal("the SSE stream ended while its token was valid")
	case <-wsEnded:
		t.Fatal("the WebSocket ended while its token was valid")
	default:
	}
	write("second-token")
	must(t, tokens.Reload())
	waitClosed(t, sseEnded, "the end of the SSE stream")
	waitClosed(t, wsEnded, "the end of the WebSocket")
	deadline := time.Now().Add(5 * time.Second)
	for strings.Count(e.logs.String(), "stream ended: its credential no longer authenticates") < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("the ends are not logged:\n%s", e.logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if strings.Contains(e.logs.String(), "first-token") {
		t.Error("a token is in the log")
	}
}
