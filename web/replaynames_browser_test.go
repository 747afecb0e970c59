package web_test

import (
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
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

// The replay's position slider says where it is in words, "3 of 40 lines",
// as it moves by keyboard and as the replay plays: a screen reader read
// the bare number, with nothing to say of how many lines there are.
func TestBrowserReplayPositionSaid(t *testing.T) {
	e := MustOpenEnv(t, nil)
	e.upsert(e.gen("g1").chats(t, 40)...)
	b := mustOpenBrowser(t)
	b.do(chromedp.Navigate(e.url("/games/g1/replay")))
	b.until("loaded", `document.querySelector('#replay').dataset.state === 'ready'`)
	if v := b.eval(`[String(document.querySelector('#pos').getAttribute('aria-valuetext'))]`); v[0] != "0 of 40 lines" {
		t.Fatalf("the slider at the start says %q, want \"0 of 40 lines\"", v[0])
	}
	b.do(chromedp.Focus(chromedp.CSS("#pos")), chromedp.KeyEvent(kb.ArrowRight), chromedp.KeyEvent(kb.ArrowRight), chromedp.KeyEvent(kb.ArrowRight))
	b.until("three lines on", `document.querySelector('#replay').dataset.pos === '3'`)
	if v := b.eval(`[String(document.querySelector('#pos').getAttribute('aria-valuetext'))]`); v[0] != "3 of 40 lines" {
		t.Fatalf("the slider moved by keyboard says %q, want \"3 of 40 lines\"", v[0])
	}
	b.noProblems()
}
