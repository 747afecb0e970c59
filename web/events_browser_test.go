package web_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/codemojex/feed/internal/testkit/wallproxy"
	"github.com/codemojex/feed/web"
)

// Behind a proxy that refuses websockets the page falls back to the event
// stream: it goes live, shows live lines in order, counts as a viewer, and
// after the stream is cut resumes from its cursor with every line once and
// no reload.
func TestBrowserEventStreamFallback(t *testing.T) {
	e := MustOpenEnv(t, nil)
	g := e.gen("g1")
	evs := g.chats(t, 9)
	e.upsert(evs[:3]...)
	px := wallproxy.Start(t, e.srv.URL())
	b := mustOpenBrowser(t)
	b.do(chromedp.Navigate(px.URL("/games/g1")))
	b.until("live over the event stream", `document.querySelector('#conn').dataset.state === 'live' && document.getElementById('game').dataset.transport === 'sse'`)
	b.do(chromedp.Evaluate[chromedp.Void](`window.__mark = 1`))
	if n := px.Refused(); n < 2 {
		t.Fatalf("%d websockets tried, want the page to try twice before it falls back", n)
	}
	if st := e.srv.Stats(); st.EventStreams != 1 || st.Clients != 0 {
		t.Fatalf("server sees %d streams and %d websockets, want 1 and 0", st.EventStreams, st.Clients)
	}
	b.until("one watching", `document.getElementById('watching').dataset.n === '1'`)

	e.upsert(evs[3:6]...)
	b.until("live lines", `document.querySelectorAll('#timeline > li').length === 6`)

	px.Kill()
	waitFor(t, 5*time.Second, "the server to see the stream end", func() bool { return e.srv.Stats().EventStreams == 0 })
	e.upsert(evs[6:]...)
	waitFor(t, 10*time.Second, "the page to open a new stream", func() bool { return e.srv.Stats().EventStreams == 1 })
	b.until("every line", `document.querySelectorAll('#timeline > li').length === 9`)
	if got, want := b.eval(domIDs), reverse(evtIDs(evs)); !eq(got, want) {
		t.Fatalf("timeline %v, want %v", got, want)
	}
	b.until("live again", `document.querySelector('#conn').dataset.state === 'live' && document.getElementById('game').dataset.transport === 'sse'`)
	if n := b.num(`window.__mark || 0`); n != 1 {
		t.Fatalf("the page reloaded")
	}
	b.noProblems()
}

// A page on the event stream tries a websocket again: once websockets pass
// (here the wall opens; in life, a replica that was down is back), it
// moves to one, without a gap, a duplicate or a reload.
func TestBrowserEventStreamUpgrades(t *testing.T) {
	e := MustOpenEnv(t, func(c *web.Config) { c.UpgradeRetry = 200 * time.Millisecond })
	g := e.gen("g1")
	evs := g.chats(t, 6)
	e.upsert(evs[:2]...)
	px := wallproxy.Start(t, e.srv.URL())
	b := mustOpenBrowser(t)
	b.do(chromedp.Navigate(px.URL("/games/g1")))
	b.until("live over the event stream", `document.querySelector('#conn').dataset.state === 'live' && document.getElementById('game').dataset.transport === 'sse'`)
	b.do(chromedp.Evaluate[chromedp.Void](`window.__mark = 1`))
	refused := px.Refused()
	waitFor(t, 10*time.Second, "the page to try a websocket again", func() bool { return px.Refused() > refused })
	e.upsert(evs[2:4]...)
	b.until("lines over the stream", `document.querySelectorAll('#timeline > li').length === 4`)

	px.LetThrough()
	b.until("moved to a websocket", `document.querySelector('#conn').dataset.state === 'live' && document.getElementById('game').dataset.transport === 'ws'`)
	waitFor(t, 5*time.Second, "the stream let go", func() bool {
		st := e.srv.Stats()
		return st.EventStreams == 0 && st.Clients == 1
	})
	e.upsert(evs[4:]...)
	b.until("every line", `document.querySelectorAll('#timeline > li').length === 6`)
	if got, want := b.eval(domIDs), reverse(evtIDs(evs)); !eq(got, want) {
		t.Fatalf("timeline %v, want %v", got, want)
	}
	if n := b.num(`window.__mark || 0`); n != 1 {
		t.Fatalf("the page reloaded")
	}
	b.noProblems()
}

// A page whose server is down (a replica restarting) keeps to websockets:
// its tries fail, but so does plain HTTP, so they are no reason to fall
// back to the event stream, which costs the server more.
func TestBrowserServerDownKeepsWebsockets(t *testing.T) {
	e := MustOpenEnv(t, nil)
	g := e.gen("g1")
	evs := g.chats(t, 4)
	e.upsert(evs[:2]...)
	px := mustStartProxy(t, e.srv.Addr())
	b := mustOpenBrowser(t)
	b.do(chromedp.Navigate(px.url("/games/g1")))
	b.until("live on a websocket", `document.querySelector('#conn').dataset.state === 'live' && document.getElementById('game').dataset.transport === 'ws'`)

	px.down.Store(true)
	px.closeAll()
	// Five tries, more than twice SWITCH_AFTER.
	tries := func() int {
		n := 0
		for _, l := range px.refusedPaths() {
			if strings.Contains(l, "/live?") || strings.Contains(l, "/events?") {
				n++
			}
		}
		return n
	}
	waitFor(t, 30*time.Second, "the page to try five times while the server is down", func() bool { return tries() >= 5 })
	for _, l := range px.refusedPaths() {
		if strings.Contains(l, "/events?") {
			t.Fatalf("the page tried an event stream while the server was down: %q", l)
		}
	}
	e.upsert(evs[2:]...)
	px.down.Store(false)
	b.until("live again", `document.querySelector('#conn').dataset.state === 'live'`)
	if v := b.eval(`[document.getElementById('game').dataset.transport]`); v[0] != "ws" {
		t.Fatalf("back on %q, want ws: the outage made the page fall back", v[0])
	}
	if n := e.srv.Stats().EventStreams; n != 0 {
		t.Fatalf("%d event streams open", n)
	}
	b.until("every line", `document.querySelectorAll('#timeline > li').length === 4`)
	b.noProblems()
}

// A replica whose store fails (here: closed under it) closes each new
// websocket itself, with 1011, before its first frame. That close came
// through whatever is between the page and the server, so websockets work:
// the tries are no misses, and the page keeps to websockets rather than
// moving to the event stream, which costs the replica more, as every page
// of it would at once.
func TestBrowserStoreDownKeepsWebsockets(t *testing.T) {
	e := MustOpenEnv(t, nil)
	g := e.gen("g1")
	evs := g.chats(t, 4)
	e.upsert(evs[:2]...)
	px := mustStartProxy(t, e.srv.Addr())
	b := mustOpenBrowser(t)
	b.do(chromedp.Navigate(px.url("/games/g1")))
	b.until("live on a websocket", `document.querySelector('#conn').dataset.state === 'live' && document.getElementById('game').dataset.transport === 'ws'`)
	b.do(chromedp.Evaluate[chromedp.Void](`window.__ws = 0; window.__es = 0;
		const W = window.WebSocket, E = window.EventSource;
		window.WebSocket = class extends W { constructor(u, p) { super(u, p); window.__ws++; } };
		window.EventSource = class extends E { constructor(u, o) { super(u, o); window.__es++; } };`))

	if err := e.db.Close(); err != nil {
		t.Fatal(err)
	}
	px.closeAll()
	// Five tries, more than twice SWITCH_AFTER.
	waitFor(t, 40*time.Second, "the page to try five times while the store is down", func() bool {
		return b.num(`window.__ws + window.__es`) >= 5
	})
	if v := b.eval(`[String(window.__es), document.getElementById('game').dataset.closeCode]`); v[0] != "0" {
		t.Fatalf("the page tried %s event streams while the store was down (websockets closed with %s)", v[0], v[1])
	}

	// The replica comes back on its store: the page is live again, on a
	// websocket, with the lines written meanwhile.
	if err := e.srv.Close(); err != nil {
		t.Fatal(err)
	}
	e.db = mustOpenStoreAt(t, e.dbPath)
	e.cfg.Store = e.db
	e.cfg.Addr = e.srv.Addr()
	e.start()
	e.upsert(evs[2:]...)
	b.until("every line", `document.querySelectorAll('#timeline > li').length === 4`)
	b.until("live again", `document.querySelector('#conn').dataset.state === 'live'`)
	if v := b.eval(`[document.getElementById('game').dataset.transport]`); v[0] != "ws" {
		t.Fatalf("back on %q, want ws", v[0])
	}
	b.noProblems()
}

// A visible page's event stream dies without a word (a NAT forgot it, the
// server's host was cut off): nothing hides or shows the tab and the
// network stays up, yet the page finds out once the stream has brought no
// ping for two periods and the margin, and resumes from its cursor, every
// line once, in order, without a reload. Before, it said "live" and showed
// nothing new until a wake: a stream cannot be probed, and the server's
// keep-alive was a comment no script sees.
func TestBrowserSilentStreamDropped(t *testing.T) {
	e := MustOpenEnv(t, func(c *web.Config) { c.PingEvery = 200 * time.Millisecond })
	g := e.gen("g1")
	evs := g.chats(t, 6)
	e.upsert(evs[:3]...)
	// The page, a TCP relay that can go silent, then a proxy that refuses
	// websockets: the page is on the event stream, and its connection can
	// die without a word.
	wall := wallproxy.Start(t, e.srv.URL())
	px := mustStartProxy(t, strings.TrimPrefix(wall.URL(""), "http://"))
	b := mustOpenBrowser(t)
	b.openMarked(px.url("/games/g1"))
	b.until("on the event stream", `document.getElementById('game').dataset.transport === 'sse'`)
	if v := b.eval(`[document.visibilityState]`); v[0] != "visible" {
		t.Fatalf("tab is %s, want visible", v[0])
	}

	// Every state the page shows from here, with when (the page's clock)
	// and its lines then: whether the page knew of the cut before the
	// stream's silence told it is read from these, not from a look after
	// the upsert below, which a slow host can delay past the silence.
	cut := b.eval(`window.__left = [];
		new MutationObserver(() => window.__left.push([document.querySelector('#conn').dataset.state,
				String(Date.now()), String(document.querySelectorAll('#timeline > li').length)]))
			.observe(document.querySelector('#conn'), {attributeFilter: ['data-state']});
		[String(Date.now())]`)[0]
	px.cutAsked("/events?")
	waitFor(t, 5*time.Second, "the server to see the stream end", func() bool { return e.srv.Stats().EventStreams == 0 })
	e.upsert(evs[3:]...)
	b.showsOnce(evs)
	// The page could not know before the silence: its stream read as
	// open, with the three lines, until two pings' periods and the margin
	// had passed (5.4 s after the last byte it got, a ping 0.2 s or so
	// before the cut; 3 s leaves a late ping room). An error or end event
	// would have told it at once.
	left := b.eval(`window.__left.find(s => s[0] !== 'live') || []`)
	if len(left) != 3 {
		t.Fatalf("the page never left live, yet resumed: %q", left)
	}
	at, _ := strconv.ParseInt(left[1], 10, 64)
	from, _ := strconv.ParseInt(cut, 10, 64)
	if after := time.Duration(at-from) * time.Millisecond; after < 3*time.Second || left[2] != "3" {
		t.Fatalf("the page went %s %v after the cut with %s lines, want not before the stream's silence (about 5.2 s) and with 3", left[0], after, left[2])
	}
	if v := b.eval(`[document.getElementById('game').dataset.transport, document.getElementById('game').dataset.woke || '0']`); v[0] != "sse" || v[1] != "0" {
		t.Fatalf("resumed over %s after %s wakes, want the event stream and none", v[0], v[1])
	}
	b.noProblems()
}
