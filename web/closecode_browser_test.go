package web_test

import (
	"testing"

	"github.com/chromedp/chromedp"
)

// A close the server begins reaches the browser with its code and reason,
// on either engine. The nbio engine answered the browser's reply to its
// close frame with a second close frame, which Chromium takes for a
// protocol error ("Close received after close"): the page saw 1006, no
// reason, for a shutdown, a reset, a slow client or a message that is not
// a probe.
func TestBrowserServerCloseCode(t *testing.T) {
	e := MustOpenEnv(t, nil)
	e.upsert(e.gen("g1").chats(t, 2)...)
	b := mustOpenBrowser(t)
	b.do(chromedp.Navigate(e.url("/games/g1")))
	b.until("live", `document.querySelector('#conn').dataset.state === 'live'`)

	// A socket beside the page's that sends what a page may not: its close
	// says so (docs/live-page.md).
	b.do(chromedp.Evaluate[chromedp.Void](`window.__closed = '';
		const s = new WebSocket('ws://' + location.host + '/games/g1/live?after=0');
		s.onmessage = () => { s.onmessage = null; s.send('hello'); };
		s.onclose = ev => { window.__closed = ev.code + ' ' + ev.reason + ' clean=' + ev.wasClean; };`))
	b.until("the other socket closed", `window.__closed !== ''`)
	if got, want := b.eval(`[window.__closed]`)[0], "1008 unexpected data message clean=true"; got != want {
		t.Errorf("a message that is not a probe: closed %q, want %q", got, want)
	}

	// The replica shuts down: the page's socket closes GoingAway. The page
	// then reconnects within 500 ms, and that try, refused, closes 1006:
	// each close code the page notes is kept, for the first is the one
	// asked about (read after the retry, the last one made this test
	// flaky on a loaded host).
	b.do(chromedp.Evaluate[chromedp.Void](`window.__codes = [];
		new MutationObserver(() => window.__codes.push(document.querySelector('#game').dataset.closeCode))
			.observe(document.querySelector('#game'), {attributeFilter: ['data-close-code']});`))
	if err := e.srv.Close(); err != nil {
		t.Fatal(err)
	}
	b.until("the page's socket closed", `window.__codes.length > 0`)
	if got := b.eval(`[window.__codes[0], window.__codes.join(' ')]`); got[0] != "1001" {
		t.Errorf("shutdown: the page's socket closed with %s (codes noted: %s), want 1001 (going away)", got[0], got[1])
	}
	b.noProblems()
}
