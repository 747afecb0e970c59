package web_test

import (
	"context"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/codemojex/feed/feed"
	"github.com/codemojex/feed/web"
)

// TestBrowserEdges: the replay page follows the timeline's pages to the
// end, and the status page drops ?token= from the address bar and the
// history while it keeps polling with the token (issue 12, items 1, 4).
func TestBrowserEdges(t *testing.T) {
	st := feed.Status{Group: "feed"}
	e := MustOpenEnv(t, func(c *web.Config) {
		c.AdminToken = "tok-123"
		c.TimelineLines = 2 // five pages for nine lines
		c.Status = func(context.Context) (feed.Status, error) { return st, nil }
	})
	e.upsert(e.gen("g1").chats(t, 9)...)
	b := mustOpenBrowser(t)
	b.do(chromedp.Navigate(e.url("/games/g1/replay")))
	b.until("every page loaded", `document.querySelector('#replay').dataset.state === 'ready' && document.querySelector('#pos').max === '9'`)

	b.do(chromedp.Navigate(e.url("/status?x=1&token=tok-123#top")))
	b.until("status polled with the token", `document.querySelector('#status').dataset.state === 'live'`)
	if got := b.eval(`[location.search + location.hash]`); got[0] != "?x=1#top" {
		t.Fatalf("address after load %q, want the token gone", got[0])
	}
	b.noProblems()
}
