package web_test

import (
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// A keyboard player on a game's link in the index keeps their place while
// the rows are refreshed (every 3 s): the focus moves to the same game's
// link in the new rows, not to the page's start, and Enter opens it.
func TestBrowserIndexKeepsFocus(t *testing.T) {
	e := MustOpenEnv(t, nil)
	for _, game := range []string{"g1", "g2"} {
		e.upsert(e.gen(game).chats(t, 1)...)
	}
	b := mustOpenBrowser(t)
	b.do(chromedp.Navigate(e.url("/")))
	b.until("index", `document.querySelector('#index').dataset.state === 'live'`)
	b.do(chromedp.Focus(chromedp.CSS(`#games a[href="/games/g2"]`)))
	const onLink = `document.activeElement.getAttribute('href') === '/games/g2'`
	b.until("focus on g2's link", onLink)

	// Wait for the rows to be swapped for the next fragment.
	b.do(chromedp.Evaluate[chromedp.Void](`document.querySelector('#games tr').dataset.old = '1'`))
	b.until("the rows refreshed", `document.querySelector('#games tr').dataset.old === undefined`)
	if v := b.eval(`[String(` + onLink + `), document.activeElement.tagName]`); v[0] != "true" {
		t.Fatalf("after a refresh the focus is on %s, not g2's link", v[1])
	}
	b.do(chromedp.KeyEvent(kb.Enter))
	b.until("g2's page", `document.body.dataset.page === 'game' && document.querySelector('#game').dataset.game === 'g2'`)
	b.noProblems()
}
