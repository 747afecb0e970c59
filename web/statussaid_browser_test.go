package web_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/codemojex/feed/feed"
	"github.com/codemojex/feed/web"
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

// The status source failing while the page's refresh works (the fragment
// comes, with the source's error in #status-err) is said to a screen reader
// once when the error appears, whatever refreshes follow and whatever their
// error's words, and its clearing once; an error the page opened with is on
// the page already, and only its clearing is said. The error was shown and
// said to no one: #status-err is no live region, and the fragment swapped
// in every 2 s could not be one.
func TestBrowserStatusSourceErrorSaidOnce(t *testing.T) {
	var failing atomic.Bool
	var calls atomic.Int64
	e := MustOpenEnv(t, func(c *web.Config) {
		c.Status = func(context.Context) (feed.Status, error) {
			n := calls.Add(1)
			if failing.Load() {
				// A real source's error may change between refreshes
				// (a timeout's duration, an address).
				return feed.Status{Group: "feed", At: time.Now().UTC()}, fmt.Errorf("status: xinfo: try %d: connection refused", n)
			}
			return feed.Status{Group: "feed", At: time.Now().UTC()}, nil
		}
	})
	b := mustOpenBrowser(t)
	// refreshes counts the fragments swapped in.
	const refreshes = `window.__swaps = 0;
		new MutationObserver(() => window.__swaps++).observe(document.querySelector('#status-body'), { childList: true })`
	const errShown = `!document.querySelector('#status-err').hidden`

	b.do(chromedp.Navigate(e.url("/status")))
	b.until("status", `document.querySelector('#status').dataset.state === 'live'`)
	b.do(chromedp.Evaluate[chromedp.Void](announcedLines), chromedp.Evaluate[chromedp.Void](refreshes))

	failing.Store(true)
	b.until("the source's error shown", errShown)
	b.do(chromedp.Evaluate[chromedp.Void](`window.__swaps = 0`))
	b.until("three refreshes with the error", `window.__swaps >= 3 && `+errShown)
	failing.Store(false)
	b.until("the error cleared", `!`+errShown)
	b.do(chromedp.Evaluate[chromedp.Void](`window.__swaps = 0`))
	b.until("three refreshes without it", `window.__swaps >= 3 && !`+errShown)

	got := b.eval(`window.__announced`)
	if len(got) != 2 || !strings.HasPrefix(got[0], "status source failed: status: xinfo: try ") || got[1] != "status source back" {
		t.Fatalf("said %q, want the source's error and its clearing, once each", got)
	}
	if live := b.liveIn(`document.querySelector('#status-said > :last-child')`); live != "polite" {
		t.Fatalf("the status page's announcements are in a live region %q, want polite", live)
	}

	// Opened while the source fails: the error is in the page, not said
	// again; its clearing is.
	failing.Store(true)
	b.do(chromedp.Navigate(e.url("/status")))
	b.until("status, failing", `document.querySelector('#status').dataset.state === 'live' && `+errShown)
	b.do(chromedp.Evaluate[chromedp.Void](announcedLines), chromedp.Evaluate[chromedp.Void](refreshes))
	b.until("two refreshes with the error", `window.__swaps >= 2 && `+errShown)
	failing.Store(false)
	b.until("the error cleared", `!`+errShown)
	b.do(chromedp.Evaluate[chromedp.Void](`window.__swaps = 0`))
	b.until("two refreshes without it", `window.__swaps >= 2 && !`+errShown)
	if got := b.eval(`window.__announced`); len(got) != 1 || got[0] != "status source back" {
		t.Fatalf("opened with the source failing, said %q, want its clearing alone", got)
	}
	b.noProblems()
}
