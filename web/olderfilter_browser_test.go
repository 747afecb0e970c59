package web_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/store"
	"github.com/codemojex/feed/web"
)

// Under a filter, a press of "older lines" brings a line the filter shows,
// paging on past pages it hides all of, or says that it found none: the
// press paged by raw lines, so under "guesses and wins" a page of chat
// added nothing the reader saw, and a screen reader on the link was told
// nothing. Paging on stops at half the cap (the lines paged in take places
// in the list, hidden or not), then at the game's beginning, each said on
// the page and politely to a screen reader. The list keeps its cap, its
// order and each line once.
func TestBrowserOlderUnderFilter(t *testing.T) {
	const cap = 12 // half the cap, 6 lines, is two pages a press
	e := MustOpenEnv(t, func(c *web.Config) { c.PageLines = 3; c.DOMLines = cap })
	g := e.gen("g1")
	chat := func() store.Event { return g.ev(t, event.KindChat, "player", "bob", "text", "psst") }
	guess := func() store.Event {
		return g.ev(t, event.KindGuess, "player", "ada", "round", "1", "guess", "🍍🍌", "exact", "1", "near", "0")
	}
	// Oldest first; pages of 3 from the newest: the served page (three
	// guesses), a page of chat, then the guess with two chats, then two
	// pages of chat and the oldest chat alone.
	var evs []store.Event
	for i := 0; i < 9; i++ {
		evs = append(evs, chat())
	}
	evs = append(evs, guess())
	for i := 0; i < 3; i++ {
		evs = append(evs, chat())
	}
	for i := 0; i < 3; i++ {
		evs = append(evs, guess())
	}
	e.upsert(evs...)
	b := mustOpenBrowser(t)
	b.do(chromedp.Navigate(e.url("/games/g1")))
	b.until("live", `document.querySelector('#conn').dataset.state === 'live'`)
	b.choose("#filter", "plays")
	b.until("filter set", `document.querySelector('#game').dataset.filter === 'plays'`)
	b.do(chromedp.Evaluate[chromedp.Void](announcedLines))
	const idle = `!(document.querySelector('#older') || {dataset: {}}).dataset.busy`

	// The first page is all chat: the press goes on to the guess.
	b.do(chromedp.Click(chromedp.CSS("#older")))
	b.until("the first page of chat in", fmt.Sprintf(`!!document.getElementById(%q) && %s`, evs[10].EvtID, idle))
	if v := b.eval(fmt.Sprintf(`[String(!!document.getElementById(%q)), String(!!document.querySelector('#older')), document.querySelector('#older') ? document.querySelector('#older').textContent : '']`, evs[9].EvtID)); !eq(v, []string{"true", "true", "older lines"}) {
		t.Fatalf("after a press under the filter: the older guess in %s, the link %s (%q); want the guess in, the link as it was", v[0], v[1], v[2])
	}
	if got := b.eval(`Array.from(document.querySelectorAll('#timeline > li')).filter(l => getComputedStyle(l).display !== 'none').map(l => l.id)`); !eq(got, reverse(evtIDs([]store.Event{evs[9], evs[13], evs[14], evs[15]}))) {
		t.Fatalf("shown %v, want the four guesses", got)
	}

	// Two pages of chat, half the cap: the press stops and says so.
	b.do(chromedp.Click(chromedp.CSS("#older")))
	b.until("two pages of chat in", fmt.Sprintf(`!!document.getElementById(%q) && %s`, evs[1].EvtID, idle))
	if v := b.eval(`[document.querySelector('#older').textContent]`); v[0] != "older lines (6 older lines, all hidden by the filter)" {
		t.Fatalf("the link reads %q after a press that found only hidden lines", v[0])
	}
	b.until("said", `window.__announced.some(s => s === '6 older lines, all hidden by the filter; older lines go on')`)

	// The last page is one chat: the beginning, said.
	b.do(chromedp.Click(chromedp.CSS("#older")))
	b.until("the beginning", fmt.Sprintf(`!!document.getElementById(%q) && !document.querySelector('#older')`, evs[0].EvtID))
	const end = "the beginning of the game: 1 older line, all hidden by the filter"
	if v := b.eval(`[(document.querySelector('#older-none') || {}).textContent || '']`); v[0] != end {
		t.Fatalf("where the link was: %q, want %q", v[0], end)
	}
	b.until("said", fmt.Sprintf(`window.__announced.some(s => s === %q)`, end))
	for _, s := range b.eval(`window.__announced`) {
		if strings.Contains(s, "psst") {
			t.Fatalf("a paged-in line announced: %q", s)
		}
	}

	// The list kept its cap, its order and each line once: the cap's
	// newest lines went behind the pill.
	b.choose("#filter", "all")
	b.until("everything", `document.querySelector('#game').dataset.filter === 'all' && !document.querySelector('#older-none')`)
	if got, want := b.eval(domIDs), reverse(evtIDs(evs[:cap])); !eq(got, want) {
		t.Fatalf("timeline %v, want %v", got, want)
	}
	if v := b.eval(`[document.querySelector('#game').dataset.held]`); v[0] != "4" {
		t.Fatalf("%s lines held, want the 4 pushed out", v[0])
	}
	b.noProblems()
}
