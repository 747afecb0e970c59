package web_test

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/codemojex/feed/store"
	"github.com/codemojex/feed/templates"
)

// writtenApart has evs written gap apart by their writers' clocks, the
// last one now, as the lines of a real game are, rather than within the
// same second.
func writtenApart(tb testing.TB, evs []store.Event, gap time.Duration) {
	tb.Helper()
	last := time.Now().UTC().Truncate(time.Second)
	for i := range evs {
		at := last.Add(-time.Duration(len(evs)-1-i) * gap)
		evs[i].At = at
		evs[i].Payload["at"] = at.Format(time.RFC3339)
		html, err := templates.RenderLine(evs[i].Kind, evs[i].Payload, at)
		if err != nil {
			tb.Fatal(err)
		}
		evs[i].HTML = html
	}
}

// The replay's play button is named by its word alone, "play" or "pause":
// its drawn symbol (▶, ❚❚) was part of its name, read out as "black
// right-pointing triangle play" by a screen reader.
func TestBrowserReplayPlayNamed(t *testing.T) {
	e := MustOpenEnv(t, nil)
	// Lines a minute apart, played at 1× (each wait capped at 5 s): the
	// replay plays on while the test reads the button. Written within the
	// same second, the 40 lines were played in about 300 ms, and on a
	// loaded host the replay could end before the test read its button.
	evs := e.gen("g1").chats(t, 40)
	writtenApart(t, evs, time.Minute)
	e.upsert(evs...)
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
