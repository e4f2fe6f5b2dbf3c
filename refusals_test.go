package main

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"

	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/storetest"
)

// TestEveryRefusalIsCountedAndLoggedWhenItHappens refuses operations that
// are answered before they run (a malformed minimum revision, in the header
// or the extensions; a subscription over the limit) and operations sent on
// an open WebSocket connection: each is counted under its reason and logged
// as it is answered, one by one, not once for the connection when it ends.
func TestEveryRefusalIsCountedAndLoggedWhenItHappens(t *testing.T) {
	t.Parallel()
	dsn := storetest.DSN(t, store.SQLite)
	storetest.OpenDSN(t, dsn, true)
	addr, out, _ := startServeOutput(t, noEnv, "--db", dsn, "--log-format", "json", "--max-subscriptions", "1")
	base := "http://" + addr
	refused := func(t *testing.T) map[string]string {
		t.Helper()
		_, metrics := httpGet(t, base+"/metrics")
		got := map[string]string{}
		for _, m := range regexp.MustCompile(`flowsnap_graphql_refused_requests_total\{reason="(\w+)"\} (\d+)`).FindAllStringSubmatch(metrics, -1) {
			got[m[1]] = m[2]
		}
		return got
	}
	want := func(t *testing.T, reasons ...string) {
		t.Helper()
		w := map[string]string{}
		for i := 0; i+1 < len(reasons); i += 2 {
			w[reasons[i]] = reasons[i+1]
		}
		if got := refused(t); !maps.Equal(got, w) {
			t.Fatalf("refusals counted %v, want %v", got, w)
		}
	}

	for _, req := range []struct{ header, body string }{
		{"abc", `{"query":"{ position { revision } }"}`},
		{"", `{"query":"{ position { revision } }","extensions":{"minRevision":"x"}}`},
	} {
		r, _ := http.NewRequest(http.MethodPost, base+"/graphql", bytes.NewReader([]byte(req.body)))
		r.Header.Set("Content-Type", "application/json")
		if req.header != "" {
			r.Header.Set("Flowsnap-Min-Revision", req.header)
		}
		res, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		var body struct {
			Errors []struct{ Extensions map[string]any }
		}
		err = json.NewDecoder(res.Body).Decode(&body)
		res.Body.Close()
		if err != nil || len(body.Errors) != 1 || body.Errors[0].Extensions["code"] != "BAD_USER_INPUT" {
			t.Fatalf("%s: %v %+v", req.body, err, body)
		}
	}
	want(t, "input", "2")

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, "ws://"+addr+"/graphql", &websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	type message struct {
		ID      string `json:"id,omitempty"`
		Type    string `json:"type"`
		Payload struct {
			Query  string `json:"query,omitempty"`
			Errors []struct {
				Extensions map[string]any `json:"extensions"`
			} `json:"errors,omitempty"`
		} `json:"payload"`
	}
	send := func(id, query string) {
		t.Helper()
		m := message{ID: id, Type: "subscribe"}
		m.Payload.Query = query
		if err := wsjson.Write(ctx, c, m); err != nil {
			t.Fatal(err)
		}
	}
	// answer reads up to the first payload for id and returns its error
	// code, "" for data.
	answer := func(id string) string {
		t.Helper()
		for {
			var m message
			if err := wsjson.Read(ctx, c, &m); err != nil {
				t.Fatal(err)
			}
			if m.ID != id || m.Type != "next" && m.Type != "error" {
				continue
			}
			if len(m.Payload.Errors) == 0 {
				return ""
			}
			code, _ := m.Payload.Errors[0].Extensions["code"].(string)
			return code
		}
	}
	if err := wsjson.Write(ctx, c, message{Type: "connection_init"}); err != nil {
		t.Fatal(err)
	}
	var ack message
	if err := wsjson.Read(ctx, c, &ack); err != nil || ack.Type != "connection_ack" {
		t.Fatalf("%v %+v", err, ack)
	}
	send("1", "subscription { position { revision ")
	if code := answer("1"); code != "BAD_USER_INPUT" {
		t.Fatalf("a broken subscription answered %q", code)
	}
	want(t, "input", "2", "parse", "1")
	send("2", "subscription { position { revision } }")
	if code := answer("2"); code != "" {
		t.Fatalf("the first subscription answered %q", code)
	}
	send("3", "subscription { position { revision } }")
	if code := answer("3"); code != "SUBSCRIPTION_LIMIT" {
		t.Fatalf("a subscription over the limit answered %q", code)
	}
	send("4", "subscription { nope }")
	if code := answer("4"); code != "BAD_USER_INPUT" {
		t.Fatalf("an invalid subscription answered %q", code)
	}
	want(t, "input", "2", "parse", "1", "subscriptions", "1", "validation", "1")
	_ = c.Close(websocket.StatusNormalClosure, "")

	var reasons []string
	deadline := time.Now().Add(10 * time.Second)
	for {
		reasons = reasons[:0]
		for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
			var entry map[string]any
			if err := json.Unmarshal([]byte(line), &entry); err != nil {
				t.Fatalf("a log line is not JSON: %q", line)
			}
			if entry["msg"] == "graphql refused" {
				reasons = append(reasons, entry["reason"].(string))
			}
		}
		// The connection's end adds nothing: its refusals were reported.
		if strings.Contains(out.String(), `"subscription end"`) || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if w := []string{"input", "input", "parse", "subscriptions", "validation"}; !slices.Equal(reasons, w) {
		t.Fatalf("refusals logged %v, want %v:\n%s", reasons, w, out.String())
	}
	want(t, "input", "2", "parse", "1", "subscriptions", "1", "validation", "1")
}
