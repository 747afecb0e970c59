package web_test

import (
	"testing"

	"github.com/chromedp/chromedp"
)

// The status page's refresh failing (the server gone) is said to a screen
// reader once, in words, however many refreshes fail, and its return
// once: the page showed "status unavailable" in a paragraph no screen
// reader is told of, and said nothing when it came back.
func TestBrowserStatusOutageSaidOnce(t *testing.T) {
	e := MustOpenEnv(t, nil)
	px := mustStartProxy(t, e.srv.Addr())
	b := mustOpenBrowser(t)
	b.allowFailing("/fragments/status")
	b.do(chromedp.Navigate(px.url("/status")))
	b.until("status", `document.querySelector('#status').dataset.state === 'live'`)
	b.do(chromedp.Evaluate[chromedp.Void](announcedLines))
	b.do(chromedp.Evaluate[chromedp.Void](`window.__fails = 0;
		new MutationObserver(() => { if (document.querySelector('#status').dataset.state === 'offline') window.__fails++; })
			.observe(document.querySelector('#status'), { attributeFilter: ['data-state'] })`))

	px.down.Store(true)
	px.closeAll()
	b.until("three refreshes failed", `window.__fails >= 3`)
	px.down.Store(false)
	b.until("live again", `document.querySelector('#status').dataset.state === 'live'`)
	b.until("the return said", `window.__announced.length >= 2`)

	got := b.eval(`window.__announced`)
	if len(got) != 2 || got[0] != "status unavailable: Failed to fetch" || got[1] != "status live again" {
		t.Fatalf("said %q, want the outage and the return, once each", got)
	}
	if live := b.liveIn(`document.querySelector('#status-said > :last-child')`); live != "polite" {
		t.Fatalf("the status page's announcements are in a live region %q, want polite", live)
	}
	b.noProblems()
}
