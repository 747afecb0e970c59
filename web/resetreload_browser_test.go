package web_test

import (
	"encoding/json"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/codemojex/feed/web"
)

// connSaidKept records what connSaid does, in sessionStorage, so that it
// outlives the page's reload.
const connSaidKept = `(() => {
	sessionStorage.setItem('__connSaid', '[]');
	new MutationObserver((ms) => {
		const said = JSON.parse(sessionStorage.getItem('__connSaid'));
		for (const m of ms) {
			if (m.type === 'characterData') said.push(m.target.data);
			for (const n of m.addedNodes) said.push(n.textContent);
		}
		sessionStorage.setItem('__connSaid', JSON.stringify(said));
	}).observe(document.querySelector('#conn'), { childList: true, characterData: true, subtree: true });
})()`

// A page whose cursor the server does not know (here: from another store)
// is sent a reset and reloads, rather than hang: it comes back live, from
// the store's own cursor. Meanwhile its connection state says
// "reconnecting", then "reloading", never "live": the reset is the
// connection's first frame, and until 7 Dec 2026 that first frame made the
// page say "live" (to a screen reader too, #conn being a polite live
// region) before "reloading".
func TestBrowserResetReloads(t *testing.T) {
	e := MustOpenEnv(t, func(c *web.Config) { c.StoreID = "s1" })
	e.upsert(e.gen("g1").chats(t, 3)...)
	b := mustOpenBrowser(t)
	b.do(chromedp.Navigate(e.url("/games/g1")))
	b.until("live", `document.querySelector('#conn').dataset.state === 'live'`)
	b.do(chromedp.Evaluate[chromedp.Void](connSaidKept))
	b.do(chromedp.Evaluate[chromedp.Void](`window.__before = 1`))
	// The page leaves for the back/forward cache and comes back, its cursor
	// now from a store the server does not have.
	b.do(chromedp.Evaluate[chromedp.Void](`(() => {
		window.dispatchEvent(new PageTransitionEvent('pagehide', { persisted: true }));
		document.getElementById('game').dataset.store = 'another';
		window.dispatchEvent(new PageTransitionEvent('pageshow', { persisted: true }));
	})()`))
	b.until("reloaded and live", `window.__before === undefined && document.querySelector('#conn') !== null && document.querySelector('#conn').dataset.state === 'live' && document.getElementById('game').dataset.store === 's1'`)
	var said []string
	if err := json.Unmarshal([]byte(b.eval(`[sessionStorage.getItem('__connSaid')]`)[0]), &said); err != nil {
		t.Fatal(err)
	}
	if !eq(said, []string{"reconnecting", "reloading"}) {
		t.Fatalf("the connection's state said %q before the reload, want reconnecting, reloading", said)
	}
	if n := e.srv.Stats().Resets; n != 1 {
		t.Fatalf("Resets = %d, want 1", n)
	}
	if n := b.num(`document.querySelectorAll('#timeline > li').length`); n != 3 {
		t.Fatalf("%v lines after the reload, want 3", n)
	}
	b.noProblems()
}
