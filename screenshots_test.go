package main

import (
	"bytes"
	"flag"
	"fmt"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

var updateScreenshots = flag.Bool("update", false, "rewrite the screenshots in docs/ (TestScreenshots)")

// shotTolerance is the share of pixels that may differ from docs/ before a
// screenshot counts as stale: the views are drawn from a seeded store with
// the browser's clock frozen, so what differs between two runs on one
// machine is the store's random source id and antialiasing, far below it;
// a changed style or layout is far above it.
const shotTolerance = 0.01

// shotDiff returns the share of pixels of a and b that differ by more than
// a small amount in some channel, or 1 when their sizes differ.
func shotDiff(a, b image.Image) float64 {
	if a.Bounds() != b.Bounds() {
		return 1
	}
	r := a.Bounds()
	differ := 0
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			r1, g1, b1, _ := a.At(x, y).RGBA()
			r2, g2, b2, _ := b.At(x, y).RGBA()
			if max(absDiff(r1, r2), absDiff(g1, g2), absDiff(b1, b2)) > 40<<8 {
				differ++
			}
		}
	}
	return float64(differ) / float64(r.Dx()*r.Dy())
}

func absDiff(a, b uint32) uint32 {
	if a > b {
		return a - b
	}
	return b - a
}

// TestScreenshots draws the views the README shows, from the seeded store
// of the triage tests with the browser's clock frozen, and compares each
// with its file in docs/ (within shotTolerance): a change to the pages
// that changes how they look fails here until the screenshots are made
// again with `go test . -run TestScreenshots -update`.
func TestScreenshots(t *testing.T) {
	ctx, problems := browser(t)
	base := triageServer(t)
	// No caret, no transitions: nothing that depends on the instant of
	// the capture.
	const still = `(() => { const s = document.createElement('style'); s.textContent = '*, *::before, *::after { caret-color: transparent !important; transition: none !important; animation: none !important; }'; document.head.append(s); document.activeElement?.blur?.(); })(); true`
	step(t, ctx, frozenClock(frozenNow))
	for _, v := range []struct {
		name, path, ready, scheme string
		w, h                      int64
	}{
		{"dashboard-list", "/", "a.run-link", "light", 1280, 800},
		{"dashboard-run", "/#/run/" + triageRun, "#timeline rect.bar", "light", 1280, 800},
		{"dashboard-run-dark", "/#/run/" + triageRun, "#timeline rect.bar", "dark", 1280, 800},
		{"dashboard-overview", "/#/overview", "#chart-failed rect.bar", "light", 1280, 800},
		{"dashboard-list-420", "/", "a.run-link", "light", 420, 900},
		{"dashboard-run-420", "/#/run/" + triageRun, "#timeline rect.bar", "light", 420, 900},
		{"explorer", "/explorer", "button.example", "light", 1280, 800},
	} {
		t.Run(v.name, func(t *testing.T) {
			var shot []byte
			step(t, ctx, colorScheme(v.scheme), chromedp.EmulateViewport(v.w, v.h), chromedp.Navigate(base+v.path), chromedp.WaitVisible(v.ready))
			if v.name != "explorer" {
				settle(t, ctx)
			}
			step(t, ctx, chromedp.Evaluate(still, nil), chromedp.Sleep(500*time.Millisecond), chromedp.CaptureScreenshot(&shot))
			file := filepath.Join("docs", v.name+".png")
			if *updateScreenshots {
				if err := os.WriteFile(file, shot, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			got, err := png.Decode(bytes.NewReader(shot))
			if err != nil {
				t.Fatal(err)
			}
			old, err := os.ReadFile(file)
			if err != nil {
				t.Fatalf("%v: make the screenshots with `go test . -run TestScreenshots -update`", err)
			}
			want, err := png.Decode(bytes.NewReader(old))
			if err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			if d := shotDiff(got, want); d > shotTolerance {
				fresh := filepath.Join(t.TempDir(), v.name+".png")
				_ = os.WriteFile(fresh, shot, 0o644)
				t.Errorf("%s is stale: %.1f%% of its pixels differ from the page as drawn now (%s, kept until the test ends); run `go test . -run TestScreenshots -update`",
					file, 100*d, fresh)
			}
		})
	}
	if p := problems(); len(p) > 0 {
		t.Errorf("the pages logged errors:\n%s", fmt.Sprint(p))
	}
}
