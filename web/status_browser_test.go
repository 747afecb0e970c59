package web_test

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/codemojex/feed/feed"
	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/web"
)

// On a phone the status page's streams table scrolls sideways, in a region
// the keyboard can reach (axe-core's scrollable-region-focusable). The
// page refreshes its tables every 2 s; a reader scrolled to the table's
// right, or on it with the keyboard, stays there. The refresh swapped the
// tables bare: the scroll went back to the first column and the focus to
// the page's start, every 2 s.
func TestBrowserStatusKeepsScroll(t *testing.T) {
	var consumers []feed.ConsumerStatus
	for _, name := range []string{"renderer-a.example", "renderer-b.example", "renderer-c.example"} {
		consumers = append(consumers, feed.ConsumerStatus{Name: name, Alive: true})
	}
	st := feed.Status{Group: "feed", Renderers: []string{"renderer-a.example"}, Streams: []feed.StreamStatus{
		{Stream: event.StreamKey("g1"), Game: "g1", Length: 3, Consumers: consumers}}}
	e := MustOpenEnv(t, func(c *web.Config) { c.Status = func(context.Context) (feed.Status, error) { return st, nil } })
	b := mustOpenBrowser(t)
	b.do(chromedp.EmulateViewport(375, 812), chromedp.Navigate(e.url("/status")))
	b.until("status refreshed", `document.querySelector('#status').dataset.state === 'live'`)
	if got := b.num(`document.querySelector('#status-body .scroll').scrollWidth - document.querySelector('#status-body .scroll').clientWidth`); got < 100 {
		t.Fatalf("the streams table overflows its region by %vpx on a phone; the test needs it to scroll", got)
	}
	b.do(chromedp.Evaluate[chromedp.Void](`(() => { const s = document.querySelector('#status-body .scroll'); s.scrollLeft = 80; s.focus(); })()`))
	b.until("scrolled and focused", `document.querySelector('#status-body .scroll').scrollLeft === 80 && document.activeElement === document.querySelector('#status-body .scroll')`)

	b.do(chromedp.Evaluate[chromedp.Void](`document.querySelector('#streams tr').dataset.old = '1'`))
	b.until("the tables refreshed", `document.querySelector('#streams tr').dataset.old === undefined`)
	got := b.eval(`[String(document.querySelector('#status-body .scroll').scrollLeft), String(document.activeElement === document.querySelector('#status-body .scroll')), document.activeElement.tagName]`)
	if got[0] != "80" || got[1] != "true" {
		t.Fatalf("after a refresh the table is scrolled to %spx (want 80) and the focus on it is %s (on %s)", got[0], got[1], strings.ToLower(got[2]))
	}
	b.noProblems()
}
