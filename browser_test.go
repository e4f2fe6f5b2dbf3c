package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/flowsnap/flowsnap/engine"
	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/storetest"
	"github.com/flowsnap/flowsnap/store/vocab"
)

const chromium = "/usr/bin/chromium"

// browser starts headless Chromium on a fresh profile and returns a tab's
// context and the list of console errors and exceptions seen so far.
func browser(t *testing.T) (context.Context, func() []string) {
	t.Helper()
	path := chromium
	if _, err := os.Stat(path); err != nil {
		if p, err := exec.LookPath("chromium"); err == nil {
			path = p
		} else if os.Getenv("CI") == "true" {
			t.Fatal("chromium is missing (apt-get install -y chromium)")
		} else {
			t.Skip("chromium is missing")
		}
	}
	// Chromium may still write to its profile while it exits, so the folder
	// is removed after it, ignoring what it left.
	profile, err := os.MkdirTemp("", "flowsnap-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(profile) })
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(profile),
		chromedp.WindowSize(1280, 900),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelTab(); cancelAlloc(); time.Sleep(200 * time.Millisecond) })
	var mu sync.Mutex
	var problems []string
	chromedp.ListenTarget(ctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch ev := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.APITypeError || ev.Type == runtime.APITypeWarning {
				var args []string
				for _, a := range ev.Args {
					args = append(args, string(a.Value)+a.Description)
				}
				problems = append(problems, fmt.Sprintf("console.%s: %s", ev.Type, strings.Join(args, " ")))
			}
		case *runtime.EventExceptionThrown:
			problems = append(problems, fmt.Sprintf("exception: %s %+v", ev.ExceptionDetails.Text, ev.ExceptionDetails.Exception))
		}
	})
	if err := chromedp.Run(ctx); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	return ctx, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(problems)
	}
}

// api runs a query against the server, as the dashboard does, and returns
// its data.
func api(t *testing.T, base, query string, vars map[string]any) map[string]any {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	res, err := http.Post(base+"/graphql", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out struct {
		Data   map[string]any
		Errors []any
	}
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil || len(out.Errors) > 0 {
		t.Fatalf("query %s: %v %v", query, err, out.Errors)
	}
	return out.Data
}

// ids reads the run ids a listRuns-shaped connection holds.
func ids(conn any) []string {
	var out []string
	for _, e := range conn.(map[string]any)["edges"].([]any) {
		out = append(out, e.(map[string]any)["node"].(map[string]any)["id"].(string))
	}
	return out
}

// TestDashboardInABrowser drives the dashboard and the explorer in headless
// Chromium against a served store that an engine writer changes: the list
// and its filters and pages match the API, a run page shows what the store
// holds, links between runs work, a write appears without a reload, the
// pause holds it back, the keyboard reaches everything, and nothing logs an
// error.
func TestDashboardInABrowser(t *testing.T) {
	ctx, problems := browser(t)

	dsn := storetest.DSN(t, store.SQLite)
	db := storetest.OpenDSN(t, dsn, true)
	if _, err := engine.Seed(context.Background(), db, engine.SeedOptions{Runs: 400, Seed: 1}); err != nil {
		t.Fatal(err)
	}
	addr, _ := startServe(t, noEnv, "--db", dsn, "--live-interval", "100ms")
	base := "http://" + addr
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()

	run := func(t *testing.T, actions ...chromedp.Action) {
		t.Helper()
		// Each step gets 30 s, so a missing element fails fast.
		sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if err := chromedp.Run(sctx, actions...); err != nil {
			t.Fatal(err)
		}
	}
	pageIDs := func(t *testing.T, sel string) []string {
		t.Helper()
		var got []string
		run(t, chromedp.Evaluate(`[...document.querySelectorAll(`+jsString(sel)+`)].map(a => a.textContent)`, &got))
		return got
	}
	waitIDs := func(t *testing.T, sel string, want []string) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			got := pageIDs(t, sel)
			if slices.Equal(got, want) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s shows %v, want %v", sel, got, want)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	const listQ = `query($f: RunFilter, $after: String) { listRuns(filter: $f, first: 25, after: $after) { edges { node { ... on Run { id } } } pageInfo { endCursor } } countRuns(filter: $f) { count } }`

	t.Run("the list shows the newest runs and the counts by status", func(t *testing.T) {
		run(t, chromedp.Navigate(base+"/"), chromedp.WaitVisible(`a.run-link`))
		waitIDs(t, `a.run-link`, ids(api(t, base, listQ, nil)["listRuns"]))
		failed := api(t, base, listQ, map[string]any{"f": map[string]any{"status": []string{"FAILED"}}})
		var count string
		run(t, chromedp.Text(`[data-status=FAILED] strong`, &count))
		if want := fmt.Sprint(failed["countRuns"].(map[string]any)["count"]); count != want {
			t.Fatalf("failed count = %q, want %s", count, want)
		}
	})

	t.Run("a status filter and the next page match the API", func(t *testing.T) {
		f := map[string]any{"status": []string{"COMPLETED"}}
		first := api(t, base, listQ, map[string]any{"f": f})
		run(t, chromedp.Click(`[data-status=COMPLETED]`))
		waitIDs(t, `a.run-link`, ids(first["listRuns"]))
		var statuses []string
		run(t, chromedp.Evaluate(`[...document.querySelectorAll('table.runs .status')].map(s => s.textContent)`, &statuses))
		for _, s := range statuses {
			if s != "completed" {
				t.Fatalf("statuses = %v", statuses)
			}
		}
		second := api(t, base, listQ, map[string]any{"f": f, "after": first["listRuns"].(map[string]any)["pageInfo"].(map[string]any)["endCursor"]})
		run(t, chromedp.Click(`#next-page`))
		waitIDs(t, `a.run-link`, ids(second["listRuns"]))
		var loc string
		run(t, chromedp.Location(&loc))
		if !strings.Contains(loc, "status=COMPLETED") || !strings.Contains(loc, "after=") {
			t.Fatalf("the page's URL %s does not carry its filter and cursor", loc)
		}
	})

	t.Run("the filter form filters by flow", func(t *testing.T) {
		flow := api(t, base, `{ listRuns(first: 1) { nodes { ... on Run { flowName } } } }`, nil)["listRuns"].(map[string]any)["nodes"].([]any)[0].(map[string]any)["flowName"].(string)
		want := ids(api(t, base, listQ, map[string]any{"f": map[string]any{"flowName": flow}})["listRuns"])
		run(t, chromedp.Navigate(base+"/#/"), chromedp.WaitVisible(`a.run-link`),
			chromedp.Click(`details summary`), chromedp.SendKeys(`#f-flowName`, flow), chromedp.Click(`#apply`))
		waitIDs(t, `a.run-link`, want)
	})

	// A parent whose children the page must list, and its first child.
	var parent, child string
	for _, n := range api(t, base, `{ listRuns(first: 200) { nodes { ... on Run { id children(first: 1) { edges { node { ... on Run { id } } } } } } } }`, nil)["listRuns"].(map[string]any)["nodes"].([]any) {
		if c := ids(n.(map[string]any)["children"]); len(c) > 0 {
			parent, child = n.(map[string]any)["id"].(string), c[0]
			break
		}
	}
	if parent == "" {
		t.Fatal("the seeded store has no run with children")
	}

	t.Run("a run page shows what the store holds", func(t *testing.T) {
		d := api(t, base, `query($id: ID!) { run(id: $id) { ... on Run { id flowName status
			children(first: 20) { edges { node { ... on Run { id } } } } events { nodes { type } } } } }`, map[string]any{"id": parent})["run"].(map[string]any)
		run(t, chromedp.Navigate(base+"/#/run/"+parent), chromedp.WaitVisible(`#facts`))
		var title, facts string
		run(t, chromedp.Text(`#run-title`, &title), chromedp.Text(`#facts`, &facts))
		if !strings.Contains(title, parent) || !strings.Contains(title, strings.ToLower(d["status"].(string))) || !strings.Contains(facts, d["flowName"].(string)) {
			t.Fatalf("title %q, facts %q, want %v", title, facts, d)
		}
		waitIDs(t, `#tree > li > .tree-row a code`, ids(d["children"]))
		var events []string
		run(t, chromedp.Evaluate(`[...document.querySelectorAll('#events strong')].map(s => s.textContent)`, &events))
		var want []string
		for _, e := range d["events"].(map[string]any)["nodes"].([]any) {
			want = append(want, strings.ToLower(e.(map[string]any)["type"].(string)))
		}
		if !slices.Equal(events, want) {
			t.Fatalf("event log %v, want %v", events, want)
		}
	})

	t.Run("links between runs work", func(t *testing.T) {
		run(t, chromedp.Click(`#tree a[href$="/run/`+child+`"]`), chromedp.WaitVisible(`#facts`))
		var title string
		run(t, chromedp.Text(`#run-title`, &title))
		if !strings.Contains(title, child) {
			t.Fatalf("after following the child, title = %q", title)
		}
		run(t, chromedp.Click(`#facts a[href$="/run/`+parent+`"]`))
		run(t, chromedp.WaitVisible(`#tree`))
		run(t, chromedp.Text(`#run-title`, &title))
		if !strings.Contains(title, parent) {
			t.Fatalf("after following the parent link, title = %q", title)
		}
	})

	w := engine.NewWriter(db, nil)
	bg := context.Background()
	status := func(t *testing.T, want string) {
		t.Helper()
		run(t, chromedp.WaitVisible(`#run-title .status-`+want))
	}

	t.Run("a live update appears after the engine writes", func(t *testing.T) {
		if err := w.CreateRun(bg, engine.NewRun{ID: "live-run", FlowName: "live-flow"}); err != nil {
			t.Fatal(err)
		}
		run(t, chromedp.Navigate(base+"/#/run/live-run"))
		status(t, "pending")
		if err := w.Start(bg, "live-run", vocab.Owner{HostID: "host-a", PID: 42, Nonce: "n1"}); err != nil {
			t.Fatal(err)
		}
		status(t, "running")
		var facts string
		run(t, chromedp.Text(`#facts`, &facts))
		if !strings.Contains(facts, "host-a pid 42") {
			t.Fatalf("facts = %q", facts)
		}
		// A write to another run moves the store, and the header's
		// revision follows it although this run did not change.
		if err := w.CreateRun(bg, engine.NewRun{ID: "other-run", FlowName: "live-flow"}); err != nil {
			t.Fatal(err)
		}
		rev := fmt.Sprint(api(t, base, `{ position { revision } }`, nil)["position"].(map[string]any)["revision"])
		run(t, chromedp.Poll(`document.querySelector('#position strong')?.textContent === `+jsString(rev), nil, chromedp.WithPollingTimeout(20*time.Second)))
	})

	t.Run("the pause holds updates back until resumed", func(t *testing.T) {
		run(t, chromedp.Click(`#pause`), chromedp.WaitVisible(`#live-state.paused`))
		if err := w.Complete(bg, "live-run", json.RawMessage(`{"ok":true}`)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(1500 * time.Millisecond)
		status(t, "running")
		run(t, chromedp.Click(`#pause`))
		status(t, "completed")
	})

	t.Run("the keyboard reaches a run and opens it", func(t *testing.T) {
		run(t, chromedp.Navigate(base+"/"), chromedp.WaitVisible(`a.run-link`))
		var active string
		for i := 0; i < 80 && !strings.Contains(active, "run-link"); i++ {
			run(t, chromedp.KeyEvent(kb.Tab), chromedp.Evaluate(`document.activeElement.className`, &active))
		}
		if !strings.Contains(active, "run-link") {
			t.Fatalf("Tab never reached a run link (last focus %q)", active)
		}
		var id string
		run(t, chromedp.Evaluate(`document.activeElement.textContent`, &id), chromedp.KeyEvent(kb.Enter), chromedp.WaitVisible(`#facts`))
		var title string
		run(t, chromedp.Text(`#run-title`, &title))
		if !strings.Contains(title, id) {
			t.Fatalf("Enter on %s opened %q", id, title)
		}
		// One tab stop per row: from one row's link, Tab reaches the next
		// row's.
		var next string
		run(t, chromedp.Navigate(base+"/"), chromedp.WaitVisible(`a.run-link`), chromedp.Focus(`a.run-link`), chromedp.KeyEvent(kb.Tab),
			chromedp.Evaluate(`document.activeElement.textContent`, &next))
		if rows := pageIDs(t, `a.run-link`); len(rows) < 2 || next != rows[1] {
			t.Fatalf("Tab from the first row's link went to %q, want the second row's", next)
		}
	})

	t.Run("the pages are usable 420 pixels wide", func(t *testing.T) {
		run(t, chromedp.EmulateViewport(420, 900), chromedp.Navigate(base+"/"), chromedp.WaitVisible(`a.run-link`))
		var scroll int
		run(t, chromedp.Evaluate(`document.documentElement.scrollWidth`, &scroll))
		if scroll > 420 {
			t.Errorf("the list is %d px wide at 420", scroll)
		}
		run(t, chromedp.Navigate(base+"/#/run/"+parent), chromedp.WaitVisible(`#facts`))
		run(t, chromedp.Evaluate(`document.documentElement.scrollWidth`, &scroll))
		if scroll > 420 {
			t.Errorf("the run page is %d px wide at 420", scroll)
		}
		run(t, chromedp.EmulateViewport(1280, 900))
	})

	t.Run("the explorer is GraphiQL with the examples", func(t *testing.T) {
		run(t, chromedp.Navigate(base+"/explorer"), chromedp.WaitVisible(`.graphiql-container`), chromedp.WaitVisible(`button.example`))
		var names []string
		run(t, chromedp.Evaluate(`[...document.querySelectorAll('button.example')].map(b => b.textContent)`, &names))
		if !slices.Contains(names, "Position") || !slices.Contains(names, "Run by id") {
			t.Fatalf("examples = %v", names)
		}
	})

	if p := problems(); len(p) > 0 {
		t.Errorf("the pages logged errors:\n%s", strings.Join(p, "\n"))
	}
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
