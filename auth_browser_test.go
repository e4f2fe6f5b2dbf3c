package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/flowsnap/flowsnap/engine"
	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/storetest"
	"github.com/flowsnap/flowsnap/store/vocab"
)

// TestDashboardBehindAuthInABrowser drives the dashboard and the explorer
// of a server with tokens in headless Chromium: the dashboard asks for a
// token, then shows the list, a run page and its live updates with it,
// keeps it in sessionStorage only (never the URL or localStorage), and asks
// again once the server refuses it; the explorer sends it too.
func TestDashboardBehindAuthInABrowser(t *testing.T) {
	ctx, problems := browser(t)
	dsn := storetest.DSN(t, store.SQLite)
	db := storetest.OpenDSN(t, dsn, true)
	if _, err := engine.Seed(context.Background(), db, engine.SeedOptions{Runs: 100, Seed: 1}); err != nil {
		t.Fatal(err)
	}
	const secret = "dash-token-7f3a91"
	path := tokenFile(t, map[string]string{"people": secret})
	addr, _ := startServe(t, noEnv, "--db", dsn, "--live-interval", "100ms", "--auth", "tokens", "--tokens-file", path)
	base := "http://" + addr
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()

	t.Run("the dashboard asks for a token", func(t *testing.T) {
		step(t, ctx, chromedp.Navigate(base+"/"), chromedp.WaitVisible(`#token-form`))
		var runs int
		step(t, ctx, chromedp.Evaluate(`document.querySelectorAll('a.run-link').length`, &runs))
		if runs != 0 {
			t.Errorf("%d runs shown before a token was given", runs)
		}
	})
	t.Run("with the token it lists the runs", func(t *testing.T) {
		step(t, ctx, chromedp.SendKeys(`#token`, secret), chromedp.Click(`#token-submit`), chromedp.WaitVisible(`a.run-link`))
		settle(t, ctx)
	})
	t.Run("the token is kept for the session only", func(t *testing.T) {
		var where struct {
			Session string `json:"session"`
			Local   int    `json:"local"`
			URL     string `json:"url"`
		}
		step(t, ctx, chromedp.Evaluate(`({ session: sessionStorage.getItem('flowsnap.token'), local: localStorage.length, url: location.href })`, &where))
		if where.Session != secret || where.Local != 0 || strings.Contains(where.URL, secret) {
			t.Errorf("sessionStorage %q, localStorage holds %d items, URL %q", where.Session, where.Local, where.URL)
		}
	})
	w := engine.NewWriter(db, nil)
	bg := context.Background()
	t.Run("a run page shows live updates", func(t *testing.T) {
		if err := w.CreateRun(bg, engine.NewRun{ID: "auth-live", FlowName: "live-flow"}); err != nil {
			t.Fatal(err)
		}
		step(t, ctx, chromedp.Navigate(base+"/#/run/auth-live"), chromedp.WaitVisible(`#run-title .status-pending`))
		if err := w.Start(bg, "auth-live", vocab.Owner{HostID: "host-a", PID: 42, Nonce: "n1"}); err != nil {
			t.Fatal(err)
		}
		// Updates come by the subscription, whose request carries the
		// token: polling would show "live (polling)".
		step(t, ctx, chromedp.WaitVisible(`#run-title .status-running`))
		var mode string
		step(t, ctx, chromedp.Text(`#live-state`, &mode))
		if mode != "live" {
			t.Errorf("live state %q, want live (by subscription)", mode)
		}
	})
	t.Run("the explorer sends the token", func(t *testing.T) {
		step(t, ctx, chromedp.Navigate(base+"/explorer"), chromedp.WaitVisible(`.graphiql-container`),
			chromedp.Click(`.graphiql-execute-button`),
			chromedp.Poll(`(document.querySelector('.graphiql-response')?.textContent ?? '').includes('"revision"')`, nil, chromedp.WithPollingTimeout(20*time.Second)))
	})
	t.Run("a refused token brings the prompt back", func(t *testing.T) {
		writeTokenFile(t, path, map[string]string{"people": "a-new-token-9c2d"})
		deadline := time.Now().Add(10 * time.Second)
		for {
			if status, _, _ := authPost(t, base+"/graphql", "Bearer "+secret, "{ position { revision } }"); status == 401 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the server did not take up the new tokens file")
			}
			time.Sleep(100 * time.Millisecond)
		}
		step(t, ctx, chromedp.Navigate(base+"/"))
		step(t, ctx, chromedp.WaitVisible(`#token-refused`), chromedp.WaitVisible(`#token-form`))
		var left string
		step(t, ctx, chromedp.Evaluate(`sessionStorage.getItem('flowsnap.token') ?? ''`, &left))
		if left != "" {
			t.Errorf("the refused token is still kept: %q", left)
		}
		step(t, ctx, chromedp.SendKeys(`#token`, "a-new-token-9c2d"), chromedp.Click(`#token-submit`), chromedp.WaitVisible(`a.run-link`))
	})
	// The 401s the prompts answered are the browser's own network errors,
	// not the pages'.
	var others []string
	for _, p := range problems() {
		if !strings.Contains(p, "401") {
			others = append(others, p)
		}
	}
	if len(others) > 0 {
		t.Errorf("console errors: %v", others)
	}
}
