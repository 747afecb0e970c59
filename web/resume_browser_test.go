package web_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/codemojex/feed/web"
)

// cutSocket kills the page's connection through px without a word to the
// browser and waits for the server to drop its socket.
func cutSocket(tb testing.TB, e *env, px *proxy) {
	tb.Helper()
	px.cut()
	waitFor(tb, 5*time.Second, "server to drop the socket", func() bool { return e.srv.Stats().Clients == 0 })
}

// A tab goes to the background, its connection dies without a word (the
// server's side is gone, the browser's still looks open), lines are
// written, and the tab comes back: the page notices at once, resumes from
// its cursor and shows every line once, without a reload.
func TestBrowserWakeResumes(t *testing.T) {
	e := MustOpenEnv(t, nil)
	g := e.gen("g1")
	evs := g.chats(t, 6)
	e.upsert(evs[:3]...)
	px := mustStartProxy(t, e.srv.Addr())
	b := mustOpenBrowser(t)
	b.openMarked(px.url("/games/g1"))

	closeTab := b.hide()
	if v := b.eval(`[document.visibilityState]`); v[0] != "hidden" {
		t.Fatalf("tab is %s, want hidden", v[0])
	}
	cutSocket(t, e, px)
	e.upsert(evs[3:]...)
	// The page cannot know: its socket still reads as open.
	if v := b.eval(`[document.querySelector('#conn').dataset.state, String(document.querySelectorAll('#timeline > li').length)]`); v[0] != "live" || v[1] != "3" {
		t.Fatalf("before the wake: state %s, %s lines", v[0], v[1])
	}

	b.show(closeTab)
	b.showsOnce(evs)
	b.noProblems()
}

// A visible tab's connection dies without a word (a NAT forgot it, the
// server's host was cut off): nothing hides or shows the tab and the
// network stays up, yet the page finds out within QuietProbe and 3 s, and
// resumes from its cursor, every line once, without a reload. Before, it
// said "live" and showed nothing new until the tab was hidden and shown.
func TestBrowserQuietSocketProbed(t *testing.T) {
	e := MustOpenEnv(t, func(c *web.Config) { c.QuietProbe = 500 * time.Millisecond })
	g := e.gen("g1")
	evs := g.chats(t, 6)
	e.upsert(evs[:3]...)
	px := mustStartProxy(t, e.srv.Addr())
	b := mustOpenBrowser(t)
	b.openMarked(px.url("/games/g1"))
	if v := b.eval(`[document.visibilityState]`); v[0] != "visible" {
		t.Fatalf("tab is %s, want visible", v[0])
	}
	cutSocket(t, e, px)
	e.upsert(evs[3:]...)
	b.showsOnce(evs)
	b.noProblems()
}

// watchStates keeps, in window.__states, every state the page's
// connection shows from now on.
func (b *browser) watchStates() {
	b.tb.Helper()
	b.do(chromedp.Evaluate[chromedp.Void](`window.__states = [];
		if (!window.__statesWatched) {
			window.__statesWatched = true;
			new MutationObserver(() => window.__states.push(document.querySelector('#conn').dataset.state))
				.observe(document.querySelector('#conn'), {attributeFilter: ['data-state']});
		}`))
}

// offline emulates the browser's network going away (off) or coming back:
// requests fail and navigator.onLine follows, with its offline and online
// events. Connections already open are left as they are, as on a phone
// whose network drops without a word to either end.
func (b *browser) offline(off bool) {
	b.tb.Helper()
	if _, err := chromedp.Call(b.ctx, network.Enable, network.EnableParams{}); err != nil {
		b.tb.Fatal(err)
	}
	all := []*network.Conditions{{Offline: off, DownloadThroughput: -1, UploadThroughput: -1}}
	if _, err := chromedp.Call(b.ctx, network.EmulateNetworkConditionsByRule, network.EmulateNetworkConditionsByRuleParams{MatchedNetworkConditions: all}); err != nil {
		b.tb.Fatal(err)
	}
	if _, err := chromedp.Call(b.ctx, network.OverrideNetworkState, network.OverrideNetworkStateParams{Offline: off, DownloadThroughput: -1, UploadThroughput: -1}); err != nil {
		b.tb.Fatal(err)
	}
}

// The browser's network drops while the page is in sight (a train's
// tunnel), its connection dies without a word, lines are written, and the
// network comes back: the page checks its socket as on a wake, resumes
// from its cursor and shows every line once, without a reload.
func TestBrowserOnlineResumes(t *testing.T) {
	e := MustOpenEnv(t, nil)
	g := e.gen("g1")
	evs := g.chats(t, 6)
	e.upsert(evs[:2]...)
	px := mustStartProxy(t, e.srv.Addr())
	b := mustOpenBrowser(t)
	b.openMarked(px.url("/games/g1"))

	b.offline(true)
	b.until("offline", `navigator.onLine === false`)
	cutSocket(t, e, px)
	e.upsert(evs[2:4]...)
	b.offline(false)
	e.upsert(evs[4:]...)
	b.showsOnce(evs)
	b.noProblems()
}

// The browser says its network went away while the socket still reads
// as open (nothing has told either end): the page says so at once rather
// than "live" until the socket notices, which may take minutes. When the
// network is back and the socket survived the blip, its answer to the
// page's probe makes the page "live" again; when it did not, the page
// resumes from its cursor, every line once.
func TestBrowserOfflineShown(t *testing.T) {
	e := MustOpenEnv(t, nil)
	g := e.gen("g1")
	evs := g.chats(t, 6)
	e.upsert(evs[:2]...)
	px := mustStartProxy(t, e.srv.Addr())
	b := mustOpenBrowser(t)
	b.openMarked(px.url("/games/g1"))

	// A blip: the socket lives through it. A frame it brings meanwhile (the
	// "watching" count a new socket is sent again, up to 250 ms after it
	// joined) shows the page live again at once, so "offline" may show for
	// less than a poll of until: every state shown is kept.
	sockets := px.requests("/live?")
	if sockets == 0 {
		t.Fatal("the page's socket did not come through the proxy")
	}
	b.watchStates()
	b.offline(true)
	b.until("offline shown", `navigator.onLine === false && window.__states.includes('offline')`)
	b.offline(false)
	b.until("live again", `navigator.onLine === true && document.querySelector('#conn').dataset.state === 'live'`)
	e.upsert(evs[2])
	b.until("a line on the same socket", fmt.Sprintf(`!!document.getElementById(%q)`, evs[2].EvtID))
	// The page may not open another socket meanwhile: counted at the
	// proxy, a socket that replaced the first would show here even once
	// the server let go of the old one.
	if n := px.requests("/live?") - sockets; n != 0 || e.srv.Stats().Clients != 1 {
		t.Fatalf("%d sockets opened through the blip, %d open; want the one that lived through it", n, e.srv.Stats().Clients)
	}

	// A longer loss: the socket dies without a word meanwhile.
	b.watchStates()
	b.offline(true)
	b.until("offline shown again", `navigator.onLine === false && window.__states.includes('offline')`)
	cutSocket(t, e, px)
	e.upsert(evs[3:5]...)
	b.offline(false)
	e.upsert(evs[5:]...)
	b.showsOnce(evs)
	// This time it came on a new socket, and the proxy saw it.
	if n := px.requests("/live?") - sockets; n < 1 {
		t.Fatalf("the lines came after the loss with no new socket seen at the proxy (%d)", n)
	}
	b.noProblems()
}

// A page put in the back/forward cache lets go of its socket (it is not
// watching), and when it comes back it resumes from its cursor at once,
// with the lines written meanwhile, without a reload.
func TestBrowserBackForwardCache(t *testing.T) {
	e := MustOpenEnv(t, nil)
	g := e.gen("g1")
	evs := g.chats(t, 4)
	e.upsert(evs[:2]...)
	b := mustOpenBrowser(t)
	b.do(chromedp.Navigate(e.url("/games/g1")))
	b.until("live", `document.querySelector('#conn').dataset.state === 'live'`)
	b.do(chromedp.Evaluate[chromedp.Void](`window.__mark = 1`))

	b.do(chromedp.Navigate(e.url("/")))
	b.until("index", `document.querySelector('#index').dataset.state === 'live'`)
	waitFor(t, 5*time.Second, "the cached page to close its socket", func() bool { return e.srv.Stats().Clients == 0 })
	e.upsert(evs[2:]...)

	b.do(chromedp.Evaluate[chromedp.Void](`history.back()`))
	// chromedp's polling does not follow a page restored from the cache;
	// plain evaluations do.
	waitFor(t, 20*time.Second, "every line", func() bool {
		v, err := chromedp.Run(b.ctx, chromedp.Evaluate[float64](`document.body.dataset.page === 'game' ? document.querySelectorAll('#timeline > li').length : 0`))
		return err == nil && v == 4
	})
	if got, want := b.eval(domIDs), reverse(evtIDs(evs)); !eq(got, want) {
		t.Fatalf("timeline %v, want %v", got, want)
	}
	if n := b.num(`window.__mark || 0`); n != 1 {
		t.Fatalf("the page was loaded again, not restored from the back/forward cache")
	}
	b.noProblems()
}

// A page restored from the back/forward cache holds no connection until
// its new one brings a frame: it does not say "live" meanwhile (a connect
// that hangs takes up to 10 s to give up on), and says it again once
// the frame came.
func TestBrowserBackForwardCacheState(t *testing.T) {
	e := MustOpenEnv(t, nil)
	g := e.gen("g1")
	e.upsert(g.chats(t, 2)...)
	b := mustOpenBrowser(t)
	b.do(chromedp.Navigate(e.url("/games/g1")))
	b.until("live", `document.querySelector('#conn').dataset.state === 'live'`)
	// Heard after the page script's own pageshow listener, which starts
	// the new connection: the state the page shows as it comes back.
	b.do(chromedp.Evaluate[chromedp.Void](`window.__mark = 1;
		window.addEventListener('pageshow', e => {
			if (e.persisted) window.__shown = document.querySelector('#conn').dataset.state;
		});`))

	b.do(chromedp.Navigate(e.url("/")))
	b.until("index", `document.querySelector('#index').dataset.state === 'live'`)
	waitFor(t, 5*time.Second, "the cached page to close its socket", func() bool { return e.srv.Stats().Clients == 0 })
	b.do(chromedp.Evaluate[chromedp.Void](`history.back()`))
	// chromedp's polling does not follow a page restored from the cache;
	// plain evaluations do.
	var shown []string
	waitFor(t, 20*time.Second, "the page restored", func() bool {
		v, err := chromedp.Run(b.ctx, chromedp.Evaluate[[]string](`document.body.dataset.page === 'game' ? [String(window.__mark || 0), window.__shown || ''] : []`))
		shown = v
		return err == nil && len(v) == 2 && v[1] != ""
	})
	if shown[0] != "1" {
		t.Fatalf("the page was loaded again, not restored from the back/forward cache")
	}
	if shown[1] == "live" {
		t.Fatalf("restored without a connection, the page says %q", shown[1])
	}
	waitFor(t, 20*time.Second, "live again", func() bool {
		v, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.querySelector('#conn').dataset.state`))
		return err == nil && v == "live"
	})
	b.noProblems()
}

// saysOnline has the browser say its network went (on false) or came back,
// with navigator.onLine and its offline and online events, while requests
// still go out: with the test proxy's hang, as on a link that died, they
// go nowhere.
func (b *browser) saysOnline(on bool) {
	b.tb.Helper()
	if _, err := chromedp.Call(b.ctx, network.Enable, network.EnableParams{}); err != nil {
		b.tb.Fatal(err)
	}
	if _, err := chromedp.Call(b.ctx, network.OverrideNetworkState, network.OverrideNetworkStateParams{Offline: !on, DownloadThroughput: -1, UploadThroughput: -1}); err != nil {
		b.tb.Fatal(err)
	}
}

// The network comes back while the page's try, made while it was gone, is
// still opening (its handshake went out on a dead link and hangs): the page
// lets that try go and connects at once, and says "live" next, after
// "offline". It left the try to hang until OPEN_WITHIN (10 s), then said
// "reconnecting" and waited out a backoff, with the network back all along;
// under Chromium's offline emulation, where a try fails at once, the same
// happened whenever the 'online' event came while a try's failure was on
// its way (TestBrowserConnStateSaidOnce failed so, rarely).
func TestBrowserOnlineDropsOpeningTry(t *testing.T) {
	e := MustOpenEnv(t, nil)
	e.upsert(e.gen("g1").chats(t, 2)...)
	px := mustStartProxy(t, e.srv.Addr())
	b := mustOpenBrowser(t)
	b.do(chromedp.Navigate(px.url("/games/g1")))
	b.until("live", `document.querySelector('#conn').dataset.state === 'live'`)
	b.do(chromedp.Evaluate[chromedp.Void](connSaid))

	// The network goes, and the socket with it; the page's next try hangs.
	b.saysOnline(false)
	b.until("offline", `document.querySelector('#conn').dataset.state === 'offline'`)
	px.hang.Store(true)
	px.closeAll()
	waitFor(t, 10*time.Second, "the page's try to hang", func() bool { return px.hung.Load() >= 1 })
	if v := b.eval(`[document.querySelector('#conn').dataset.state]`); v[0] != "offline" {
		t.Fatalf("while the try hangs the page says %q, want offline", v[0])
	}

	// The network is back; the try made before stays lost.
	px.hang.Store(false)
	b.saysOnline(true)
	b.until("live", `document.querySelector('#conn').dataset.state === 'live'`)
	if got, want := b.eval(`window.__connSaid`), []string{"offline", "live"}; !eq(got, want) {
		t.Fatalf("said %q, want %q: the network came back, the page connected at once", got, want)
	}
	waitFor(t, 5*time.Second, "the hung try let go", func() bool { return px.hung.Load() == 0 })
	b.noProblems()
}
