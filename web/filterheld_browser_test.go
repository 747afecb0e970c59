package web_test

import (
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/store"
	"github.com/codemojex/feed/web"
)

// Lines held while the reader was away from the newest that the filter
// hides bring no pill, and so must not hold back the lines that come once
// the reader is back at the top: those go straight in and are announced.
// Until 7 Dec 2026 one hidden held line (a chat, under "guesses and wins")
// held every later line: back at the top, the reader saw no live line go
// in, only a pill, and a screen reader heard "1 new line" and then nothing
// of the lines that followed.
func TestBrowserFilterHiddenHeldLines(t *testing.T) {
	e := MustOpenEnv(t, func(c *web.Config) { c.PageLines = 60 })
	g := e.gen("g1")
	guess := func() store.Event {
		return g.ev(t, event.KindGuess, "player", "ada", "round", "1", "guess", "🍍🍌", "exact", "1", "near", "0")
	}
	var evs []store.Event
	for i := 0; i < 60; i++ {
		evs = append(evs, guess())
	}
	e.upsert(evs...)
	b := mustOpenBrowser(t)
	b.do(chromedp.EmulateViewport(800, 600), chromedp.Navigate(e.url("/games/g1")))
	b.until("live", `document.querySelector('#conn').dataset.state === 'live'`)
	b.choose("#filter", "plays")
	b.until("filter set", `document.querySelector('#game').dataset.filter === 'plays'`)

	b.do(chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, 1500)`))
	b.until("scrolled", `window.scrollY === 1500`)
	chat := g.ev(t, event.KindChat, "player", "bob", "text", "psst")
	e.upsert(chat)
	b.until("the chat held", `document.querySelector('#game').dataset.held === '1'`)
	if v := b.eval(`[String(document.querySelector('#newer').hidden)]`); v[0] != "true" {
		t.Fatalf("a pill for a line the filter hides")
	}

	b.do(chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, 0)`))
	b.until("back at the top", `window.scrollY === 0`)
	b.do(chromedp.Evaluate[chromedp.Void](announcedLines))
	next := guess()
	e.upsert(next)
	in := fmt.Sprintf(`!!document.getElementById(%q)`, next.EvtID)
	b.until("the guess shown or held", in+` || !document.querySelector('#newer').hidden`)
	if v := b.eval(`[String(` + in + `), String(document.querySelector('#newer').hidden), document.querySelector('#newer').textContent]`); v[0] != "true" || v[1] != "true" {
		t.Fatalf("at the top, a live guess in the list %s, the pill hidden %s (%q): want it in, no pill", v[0], v[1], v[2])
	}
	if got := b.eval(`[document.querySelector('#timeline > li').id]`); got[0] != next.EvtID {
		t.Fatalf("the newest line is %s, want the live guess %s", got[0], next.EvtID)
	}
	b.until("the guess announced", `window.__announced.some(s => s.includes('guessed'))`)
	if n := b.num(`window.__announced.filter(s => s.includes('psst') || /new line/.test(s)).length`); n != 0 {
		t.Fatalf("announced %q: the hidden chat or a pill too", b.eval(`window.__announced`))
	}
	// The hidden line is in the list, at its place, and the filter's
	// "everything" shows it.
	b.choose("#filter", "all")
	b.until("everything", `document.querySelector('#game').dataset.filter === 'all'`)
	if got := b.eval(`Array.from(document.querySelectorAll('#timeline > li')).slice(0, 2).map(l => l.id)`); !eq(got, []string{next.EvtID, chat.EvtID}) {
		t.Fatalf("the newest lines %v, want the guess and the chat %v", got, []string{next.EvtID, chat.EvtID})
	}
	if v := b.eval(`[document.querySelector('#game').dataset.held, String(document.querySelector('#newer').hidden)]`); !eq(v, []string{"0", "true"}) {
		t.Fatalf("held %s, pill hidden %s: want none held, no pill", v[0], v[1])
	}
}
