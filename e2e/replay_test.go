package e2e_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/codemojex/feed/internal/testkit/browsertest"
	"github.com/codemojex/feed/internal/testkit/proctest"
)

// TestBrowserReplayPage: the replay page plays a stored game to the end,
// every line in order, and its slider moves the position (issue 4, proof 6).
func TestBrowserReplayPage(t *testing.T) {
	c := newCluster(t)
	r := c.start("r1")
	w := c.writer("replay")
	w.add(w.mint(), "game_started", "title", "Replay", "rounds", "1", "code_length", "4", "palette", "🍎🍌🍇🍒🥝🍑🍍🥥")
	w.add(w.mint(), "player_joined", "player", "ada", "avatar", "🦊")
	for i := 0; i < 10; i++ {
		w.add(w.mint(), "guess", "player", "ada", "round", "1", "guess", "🍎🍌🍇🍒", "exact", fmt.Sprint(i%4), "near", "1")
	}
	w.add(w.mint(), "round_won", "player", "ada", "round", "1", "code", "🍎🍌🍇🍒", "guesses", "10", "points", "100")
	w.add(w.mint(), "game_over", "winner", "ada")
	c.waitStored("replay", w.ids, 10*time.Second)

	ctx := browsertest.MustStart(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(r.url("/games/replay/replay")),
		chromedp.WaitReady(chromedp.CSS(`#replay[data-state="ready"]`))); err != nil {
		t.Fatal(err)
	}
	if got := timelineIDs(t, ctx); len(got) != 0 {
		t.Fatalf("replay starts with %d lines shown", len(got))
	}
	if err := chromedp.Do(ctx,
		chromedp.SetValue(chromedp.CSS("#speed"), "50"),
		chromedp.Evaluate[chromedp.Void](`document.getElementById('speed').dispatchEvent(new Event('change'))`),
		chromedp.Click(chromedp.CSS("#play")),
	); err != nil {
		t.Fatal(err)
	}
	waitTimeline(t, ctx, reversed(w.ids), 20*time.Second)
	proctest.WaitFor(t, 5*time.Second, func() bool {
		s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById('play').dataset.state`))
		return err == nil && s == "paused"
	}, "play button back to paused at the end")

	// The slider goes back to any position.
	if err := chromedp.Do(ctx,
		chromedp.SetValue(chromedp.CSS("#pos"), "3"),
		chromedp.Evaluate[chromedp.Void](`document.getElementById('pos').dispatchEvent(new Event('input'))`),
	); err != nil {
		t.Fatal(err)
	}
	waitTimeline(t, ctx, reversed(w.ids[:3]), 5*time.Second)
}

// TestScreenshots saves screenshots of a game page and of /status to the
// directory named by $CODEMOJEX_SCREENSHOTS (docs/ in the repository), so
// README shows what the product looks like. Without the variable it still
// renders both pages in the browser and checks they are not empty.
func TestScreenshots(t *testing.T) {
	c := newCluster(t)
	r := c.start("r1")
	run(t, "gamesim", "-redis", c.redis.URL(), "-games", "2", "-events", "60", "-rate", "0", "-seed", "42", "-prefix", "demo")
	good, _ := classify(t, c.rdb, "demo-1")
	c.waitStored("demo-1", good, 20*time.Second)

	ctx := browsertest.MustStart(t)
	open(t, ctx, r.url("/games/demo-1"))
	waitConn(t, ctx, "live", 5*time.Second)
	shoot(t, ctx, "screenshot-game.png")
	if err := chromedp.Do(ctx, chromedp.Navigate(r.url("/status")), chromedp.WaitReady(chromedp.CSS("body"))); err != nil {
		t.Fatal(err)
	}
	proctest.WaitFor(t, 5*time.Second, func() bool {
		n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('[data-game="demo-1"], td').length`))
		return err == nil && n > 0
	}, "status page rows")
	shoot(t, ctx, "screenshot-status.png")
}

func shoot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot()) // the viewport, as PNG
	if err != nil {
		t.Fatal(err)
	}
	if len(png) < 1000 {
		t.Fatalf("%s: screenshot of %d bytes", name, len(png))
	}
	if dir := os.Getenv("CODEMOJEX_SCREENSHOTS"); dir != "" {
		if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
