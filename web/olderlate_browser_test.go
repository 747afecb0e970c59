package web_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/codemojex/feed/web"
)

// A live line that comes late (a new seq, an EVT id older than every line
// of a full list) while a page of "older lines" is on its way is left to
// "older lines", below the link; the page, read before the line was
// stored, lacks it. The page is dropped and asked for again, and the line
// is shown in its place. Until 7 Dec 2026 the page went in, the link moved
// past the line, and it was never shown: a gap in the middle of the
// timeline, with nothing to say so, until a reload.
func TestBrowserLateLineDuringOlderPage(t *testing.T) {
	const cap = 6
	e := MustOpenEnv(t, func(c *web.Config) { c.PageLines = 3; c.DOMLines = cap })
	g := e.gen("g1")
	evs := g.chats(t, 12)
	late := evs[4]
	// Every line but the late one, the last three live: the list shows
	// the newest six, and "older lines" pages from the oldest of them.
	e.upsert(slices.Concat(evs[:4], evs[5:9])...)
	b := mustOpenBrowser(t)
	b.openTall(e.url("/games/g1"))
	for _, ev := range evs[9:] {
		e.upsert(ev)
		b.until("live line", fmt.Sprintf(`!!document.getElementById(%q)`, ev.EvtID))
	}
	if got, want := b.eval(domIDs), reverse(evtIDs(evs[6:12])); !eq(got, want) {
		t.Fatalf("timeline %v, want the list full %v", got, want)
	}
	b.holdOlderPage() // read by the server: the three lines below, not the late one
	seq := e.upsert(late)[0]
	b.until("the late line come", fmt.Sprintf(`document.querySelector('#game').dataset.cursor === '%d'`, seq))
	if b.num(fmt.Sprintf(`document.getElementById(%q) ? 1 : 0`, late.EvtID)) != 0 {
		t.Fatalf("the late line went into a full list it is older than")
	}
	b.releaseOlderPage()
	b.untilOlderLines(late.EvtID)

	pageAllOlder(t, b)
	got := b.eval(domIDs)
	all := reverse(evtIDs(evs))
	if !eq(got, all[len(all)-len(got):]) || !slices.Contains(got, late.EvtID) {
		t.Fatalf("timeline %v: want the oldest lines of %v in a row, the late one %s among them", got, all, late.EvtID)
	}
	b.noProblems()
}
