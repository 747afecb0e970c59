package web_test

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/codemojex/feed/internal/testkit/wallproxy"
	"github.com/codemojex/feed/web"
)

// A page on the event stream tries a websocket beside it from time to
// time; behind a proxy that lets the upgrade hang, the try waits for its
// first frame. The page going into the back/forward cache closes that
// socket with its stream: left open, it held a socket for a page nobody
// watches (the proxy saw it hang on while the page was cached). Shown again, the page takes a new stream from its cursor, with
// the lines written meanwhile, and tries a websocket again.
func TestBrowserBackForwardCacheUpgradeTry(t *testing.T) {
	e := MustOpenEnv(t, func(c *web.Config) { c.UpgradeRetry = 200 * time.Millisecond })
	g := e.gen("g1")
	evs := g.chats(t, 4)
	e.upsert(evs[:2]...)
	px := wallproxy.Start(t, e.srv.URL())
	b := mustOpenBrowser(t)
	b.do(chromedp.Navigate(px.URL("/games/g1")))
	b.until("live over the event stream", `document.querySelector('#conn').dataset.state === 'live' && document.getElementById('game').dataset.transport === 'sse'`)
	b.do(chromedp.Evaluate[chromedp.Void](`window.__mark = 1`))
	px.Hold()
	waitFor(t, 10*time.Second, "the page's websocket try to hang", func() bool { return px.Held() == 1 })

	b.do(chromedp.Navigate(px.URL("/")))
	b.until("index", `document.querySelector('#index').dataset.state === 'live'`)
	waitFor(t, 5*time.Second, "the cached page to close its stream", func() bool { return e.srv.Stats().EventStreams == 0 })
	waitFor(t, 5*time.Second, "the cached page to close its websocket try", func() bool { return px.Held() == 0 })
	e.upsert(evs[2:]...)

	b.do(chromedp.Evaluate[chromedp.Void](`history.back()`))
	// chromedp's polling does not follow a page restored from the cache;
	// plain evaluations do.
	waitFor(t, 20*time.Second, "every line", func() bool {
		v, err := chromedp.Run(b.ctx, chromedp.Evaluate[float64](`document.body.dataset.page === 'game' ? document.querySelectorAll('#timeline > li').length : 0`))
		return err == nil && v == 4
	})
	if n := b.num(`window.__mark || 0`); n != 1 {
		t.Fatalf("the page was loaded again, not restored from the back/forward cache")
	}
	if got, want := b.eval(domIDs), reverse(evtIDs(evs)); !eq(got, want) {
		t.Fatalf("timeline %v, want %v", got, want)
	}
	waitFor(t, 20*time.Second, "live again over the event stream", func() bool {
		v, err := chromedp.Run(b.ctx, chromedp.Evaluate[bool](`document.querySelector('#conn').dataset.state === 'live' && document.getElementById('game').dataset.transport === 'sse'`))
		return err == nil && v
	})
	waitFor(t, 10*time.Second, "a websocket tried again", func() bool { return px.Held() == 1 })
	b.noProblems()
}
