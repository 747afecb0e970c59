package web_test

import (
	"testing"

	"github.com/chromedp/chromedp"
)

// The replay's play button is named by its word alone, "play" or "pause":
// its drawn symbol (▶, ❚❚) was part of its name, read out as "black
// right-pointing triangle play" by a screen reader.
func TestBrowserReplayPlayNamed(t *testing.T) {
	e := MustOpenEnv(t, nil)
	e.upsert(e.gen("g1").chats(t, 40)...)
	b := mustOpenBrowser(t)
	b.do(chromedp.Navigate(e.url("/games/g1/replay")))
	b.until("loaded", `document.querySelector('#replay').dataset.state === 'ready'`)
	if got := b.axName(`document.querySelector('#play')`); got != "play" {
		t.Fatalf("the play button is named %q, want \"play\"", got)
	}
	b.do(chromedp.SetValue(chromedp.CSS("#speed"), "1"), chromedp.Click(chromedp.CSS("#play")))
	b.until("playing", `document.querySelector('#play').dataset.state === 'playing'`)
	if got := b.axName(`document.querySelector('#play')`); got != "pause" {
		t.Fatalf("the playing button is named %q, want \"pause\"", got)
	}
	b.noProblems()
}
