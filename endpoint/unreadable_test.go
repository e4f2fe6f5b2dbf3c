package endpoint_test

import (
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/flowsnap/flowsnap/endpoint"
	"github.com/flowsnap/flowsnap/live"
	"github.com/flowsnap/flowsnap/store"
)

func TestSubscribersHearOnceTheStoreBecomesUnreadableAndTheWarningIsRateLimited(t *testing.T) {
	watcherLogs := &syncBuffer{}
	e := liveFixture(t, store.SQLite, live.Options{Logger: slog.New(slog.NewTextHandler(watcherLogs, nil))}, endpoint.Options{}, "r1")
	s := subscribeSSE(t, e.url, `subscription { position { revision } }`, nil)
	first := next(t, s.events)
	if first.code() != "" {
		t.Fatalf("the first event: %+v", first)
	}
	// The store's file goes away: every read fails.
	if err := os.Rename(e.dsn, e.dsn+".gone"); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(10 * time.Second)
	for {
		var ev event
		select {
		case ev = <-s.events:
		case <-deadline:
			t.Fatal("no error event within 10s of the store becoming unreadable")
		}
		if ev.code() == "PERSISTENCE_FAILED" {
			break
		}
	}
	// The watcher goes on failing every 20ms; it says so once.
	time.Sleep(time.Second)
	if n := strings.Count(watcherLogs.String(), "reading the store's revision failed"); n != 1 {
		t.Fatalf("the watcher warned %d times in a second of failures:\n%s", n, watcherLogs.String())
	}
	// Back again: the subscription carries on, and the watcher says so.
	if err := os.Rename(e.dsn+".gone", e.dsn); err != nil {
		t.Fatal(err)
	}
	must(t, e.w.Start(t.Context(), "r1", liveOwner))
	deadline = time.After(10 * time.Second)
	for {
		var ev event
		select {
		case ev = <-s.events:
		case <-deadline:
			t.Fatal("no event after the store became readable again")
		}
		if ev.code() == "" && ev.Extensions.Position != nil && ev.Extensions.Position.Revision > first.Extensions.Position.Revision {
			break
		}
	}
	if !strings.Contains(watcherLogs.String(), "the store can be read again") {
		t.Errorf("the watcher did not say the store can be read again:\n%s", watcherLogs.String())
	}
}

func TestASubscriptionCostsWhatItsEventsRead(t *testing.T) {
	e := liveFixture(t, store.SQLite, live.Options{}, endpoint.Options{}, "r1")
	selection := `{ changes { run { ... on Run { children(first: 100) { nodes { ... on Run { id rounds(first: 100) { nodes { __typename } } } } } } } } }`
	queryCost, code := costOf(t, e.url+"/graphql", `{ changes(since: 0, first: 1000) `+selection+` }`)
	if code != "COMPLEXITY_LIMIT" {
		t.Fatalf("the query: %q, want COMPLEXITY_LIMIT", code)
	}
	s := subscribeSSE(t, e.url, `subscription { changes(since: 0) `+selection+` }`, nil)
	ev := next(t, s.events)
	if ev.code() != "COMPLEXITY_LIMIT" {
		t.Fatalf("the subscription of events of 1,000 changes with that selection: %+v, want COMPLEXITY_LIMIT", ev)
	}
	cost, _ := ev.Errors[0].Extensions["cost"].(map[string]any)
	if got, _ := cost["requested"].(float64); int(got) != queryCost {
		t.Errorf("the subscription costs %v, the query of the same page %d", cost["requested"], queryCost)
	}
}
