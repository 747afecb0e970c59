package web_test

import (
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/codemojex/feed/web"
)

// A keyboard reader pages "older lines" with Enter until the last page: the
// link goes with it, and the focus must not go with the link to the
// document's body, where a screen reader loses its place and a browser
// without a focus navigation starting point tabs from the page's top. It
// lands on the timeline (the view does not move), the lines just paged in,
// and Tab goes on to the scoreboard, the control after the link.
func TestBrowserOlderEndKeepsFocus(t *testing.T) {
	e := MustOpenEnv(t, func(c *web.Config) { c.PageLines = 3 })
	g := e.gen("g1")
	evs := g.chats(t, 9)
	e.upsert(evs...)
	b := mustOpenBrowser(t)
	b.openTall(e.url("/games/g1"))
	b.do(chromedp.Focus(chromedp.CSS("#older")))
	b.until("focus on the link", `document.activeElement === document.querySelector('#older')`)
	for _, want := range []int{3, 0} {
		b.do(chromedp.KeyEvent(kb.Enter))
		b.untilOlderLines(evs[want].EvtID)
		if want > 0 {
			if v := b.eval(`[document.activeElement.id || document.activeElement.tagName]`); v[0] != "older" {
				t.Fatalf("after a page of older lines the focus is on %s, not the link", v[0])
			}
		}
	}
	b.until("the link gone", `document.querySelector('#older') === null`)
	if v := b.eval(`[document.activeElement.id || document.activeElement.tagName]`); v[0] != "log" {
		t.Fatalf("after the last page of older lines the focus is on %s, not the timeline", v[0])
	}
	b.do(chromedp.KeyEvent(kb.Tab))
	b.until("Tab on to the scoreboard", `document.activeElement === document.querySelector('#scoreboard .board-toggle')`)
	b.noProblems()
}
