package web_test

import (
	"context"
	"database/sql"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/accessibility"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	_ "modernc.org/sqlite"

	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/templates"
	"github.com/codemojex/feed/web"
)

// hide sends the tab to the background the way a browser does: another tab
// comes to the front and the page is frozen (no script runs, no socket
// event is handled).
func (b *browser) hide() func() {
	b.tb.Helper()
	tab, closeTab := chromedp.NewContext(b.ctx)
	if err := chromedp.Do(tab, chromedp.Navigate("about:blank")); err != nil {
		b.tb.Fatal(err)
	}
	if _, err := chromedp.Call(b.ctx, page.SetWebLifecycleState, page.SetWebLifecycleStateParams{State: page.SetWebLifecycleStateStateFrozen}); err != nil {
		b.tb.Fatal(err)
	}
	return closeTab
}

// choose picks value in a <select> by keyboard, as a player without a
// mouse does: focus, then arrow keys until it is selected.
func (b *browser) choose(sel, value string) {
	b.tb.Helper()
	b.do(chromedp.Focus(chromedp.CSS(sel)))
	q := `document.querySelector(` + strconv.Quote(sel) + `)`
	for i := 0; i < 5; i++ {
		// [current value, "down" or "up" towards value]
		v := b.eval(`[` + q + `.value, Array.from(` + q + `.options).findIndex(o => o.value === ` + strconv.Quote(value) + `) > ` + q + `.selectedIndex ? 'down' : 'up']`)
		if v[0] == value {
			return
		}
		key := kb.ArrowUp
		if v[1] == "down" {
			key = kb.ArrowDown
		}
		b.do(chromedp.KeyEvent(key))
	}
	b.tb.Fatalf("%s: could not choose %s by keyboard", sel, value)
}

// show brings the tab back: it resumes and becomes visible.
func (b *browser) show(closeTab func()) {
	b.tb.Helper()
	closeTab()
	if _, err := chromedp.Call(b.ctx, page.SetWebLifecycleState, page.SetWebLifecycleStateParams{State: page.SetWebLifecycleStateStateActive}); err != nil {
		b.tb.Fatal(err)
	}
	if _, err := chromedp.Call(b.ctx, emulation.SetFocusEmulationEnabled, emulation.SetFocusEmulationEnabledParams{Enabled: true}); err != nil {
		b.tb.Fatal(err)
	}
}

func (b *browser) num(js string) float64 {
	b.tb.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[float64](js))
	if err != nil {
		b.tb.Fatalf("%s: %v", js, err)
	}
	return v
}

// openMarked opens url, waits for the page to be live and marks it
// (window.__mark), so that showsOnce can tell it was never reloaded.
func (b *browser) openMarked(url string) {
	b.tb.Helper()
	b.do(chromedp.Navigate(url))
	b.until("live", `document.querySelector('#conn').dataset.state === 'live'`)
	b.do(chromedp.Evaluate[chromedp.Void](`window.__mark = 1`))
}

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

	// A blip: the socket lives through it.
	b.offline(true)
	b.until("offline shown", `navigator.onLine === false && document.querySelector('#conn').dataset.state === 'offline'`)
	b.offline(false)
	b.until("live again", `navigator.onLine === true && document.querySelector('#conn').dataset.state === 'live'`)
	e.upsert(evs[2])
	b.until("a line on the same socket", fmt.Sprintf(`!!document.getElementById(%q)`, evs[2].EvtID))
	if e.srv.Stats().Clients != 1 {
		t.Fatalf("%d sockets, want the one that lived through the blip", e.srv.Stats().Clients)
	}

	// A longer loss: the socket dies without a word meanwhile.
	b.offline(true)
	b.until("offline shown again", `navigator.onLine === false && document.querySelector('#conn').dataset.state === 'offline'`)
	cutSocket(t, e, px)
	e.upsert(evs[3:5]...)
	b.offline(false)
	e.upsert(evs[5:]...)
	b.showsOnce(evs)
	b.noProblems()
}

// While the reader is scrolled down into older lines, new lines do not
// move the view: a pill counts them, and clicking it shows them at the top.
// A screen reader is told when the pill appears: it was told nothing, and
// its reader, away from the newest, never learnt that lines had come.
func TestBrowserPillKeepsView(t *testing.T) {
	e := MustOpenEnv(t, func(c *web.Config) { c.PageLines = 60 })
	g := e.gen("g1")
	evs := g.chats(t, 63)
	e.upsert(evs[:60]...)
	b := mustOpenBrowser(t)
	b.do(chromedp.EmulateViewport(800, 600), chromedp.Navigate(e.url("/games/g1")))
	b.until("live", `document.querySelector('#conn').dataset.state === 'live'`)
	b.do(chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, 1500)`))
	b.until("scrolled", `window.scrollY === 1500`)
	const probe = `(() => { const hb = document.querySelector('header.top').getBoundingClientRect().bottom;
		const li = Array.from(document.querySelectorAll('#timeline > li')).find(l => l.getBoundingClientRect().bottom > hb);
		return [li.id, String(li.getBoundingClientRect().top), String(window.scrollY)]; })()`
	before := b.eval(probe)
	b.do(chromedp.Evaluate[chromedp.Void](announcedLines))

	e.upsert(evs[60:]...)
	b.until("pill", `!document.querySelector('#newer').hidden && document.querySelector('#newer').textContent.includes('3 new lines')`)
	if after := b.eval(probe); !eq(after, before) {
		t.Fatalf("the view moved: first line on screen, its top, scrollY were %v, now %v", before, after)
	}
	// A screen reader is told of the pill once, in its words (the lines
	// came in one frame or several), and of none of the lines it holds.
	if got := b.eval(`window.__announced`); len(got) != 1 || !regexp.MustCompile(`^[123] new lines?$`).MatchString(got[0]) {
		t.Fatalf("announced %q, want the pill's appearance alone (N new lines)", got)
	}
	if live := b.liveIn(`document.querySelector('#announce > :last-child')`); live != "polite" {
		t.Fatalf("the pill's announcement is in a live region %q of Chromium's accessibility tree, want polite", live)
	}
	if n := b.num(`document.querySelectorAll('#timeline > li').length`); n != 60 {
		t.Fatalf("%v lines in the DOM while held, want 60", n)
	}

	b.do(chromedp.Click(chromedp.CSS("#newer")))
	b.until("newest shown", `document.querySelectorAll('#timeline > li').length === 63 && document.querySelector('#newer').hidden`)
	b.until("at the top", `window.scrollY === 0`)
	if got, want := b.eval(domIDs)[:3], reverse(evtIDs(evs[60:])); !eq(got, want) {
		t.Fatalf("top lines %v, want %v", got, want)
	}
	// At the newest, live lines go straight in.
	more := g.chats(t, 1)
	e.upsert(more...)
	b.until("live line at the top", fmt.Sprintf(`document.querySelector('#timeline > li').id === %q`, more[0].EvtID))
	b.noProblems()
}

// The page never keeps more than the cap of lines in its DOM: live lines
// push the oldest out (they come back through "older lines"), and paging
// in older lines pushes the newest out (they come back through the pill).
func TestBrowserDOMCap(t *testing.T) {
	const cap = 10
	e := MustOpenEnv(t, func(c *web.Config) { c.PageLines = 6; c.DOMLines = cap })
	g := e.gen("g1")
	evs := g.chats(t, 40)
	e.upsert(evs[:6]...)
	b := mustOpenBrowser(t)
	b.do(chromedp.EmulateViewport(800, 600), chromedp.Navigate(e.url("/games/g1")))
	b.until("live", `document.querySelector('#conn').dataset.state === 'live'`)
	b.do(chromedp.Evaluate[chromedp.Void](`window.__max = 0; new MutationObserver(() => {
		window.__max = Math.max(window.__max, document.querySelectorAll('#timeline > li').length);
	}).observe(document.getElementById('timeline'), {childList: true})`))

	for i := 6; i < 40; i += 5 {
		e.upsert(evs[i:min(i+5, 40)]...)
	}
	b.until("newest line", fmt.Sprintf(`document.querySelector('#timeline > li').id === %q`, evs[39].EvtID))
	if got, want := b.eval(domIDs), reverse(evtIDs(evs[30:])); !eq(got, want) {
		t.Fatalf("timeline %v, want the newest %d %v", got, cap, want)
	}
	if got := b.eval(`[document.querySelector('#older').dataset.before]`); got[0] != evs[30].EvtID {
		t.Fatalf("older lines before %s, want %s", got[0], evs[30].EvtID)
	}

	// Page older lines in, twice: the list stays at the cap, the oldest
	// lines are the ones asked for, and the newest wait behind the pill.
	for round := 1; round <= 2; round++ {
		b.do(chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, document.body.scrollHeight)`))
		b.do(chromedp.Click(chromedp.CSS("#older")))
		want := evs[30-6*round].EvtID
		b.until("older lines", fmt.Sprintf(`Array.from(document.querySelectorAll('#timeline > li')).some(l => l.id === %q)`, want))
	}
	b.until("pill", `!document.querySelector('#newer').hidden`)
	if n := b.num(`document.querySelectorAll('#timeline > li').length`); n != cap {
		t.Fatalf("%v lines after paging, want %d", n, cap)
	}
	b.do(chromedp.Click(chromedp.CSS("#newer")))
	b.until("newest again", fmt.Sprintf(`document.querySelector('#timeline > li').id === %q`, evs[39].EvtID))
	if max := b.num(`window.__max`); max > cap {
		t.Fatalf("the DOM held %v lines, cap %d", max, cap)
	}
	b.noProblems()
}

// A line that comes late (a re-claim after a crash: a new seq, an EVT id
// older than every line shown) while older lines are still to be paged in
// ends up at its place once they are: "older lines" puts each line it
// brings at its place by EVT id too, not after whatever the list ends
// with.
func TestBrowserLateLineKeepsOrder(t *testing.T) {
	e := MustOpenEnv(t, func(c *web.Config) { c.PageLines = 3 })
	g := e.gen("g1")
	evs := g.chats(t, 10)
	e.upsert(append(evs[:1:1], evs[2:]...)...)
	b := mustOpenBrowser(t)
	b.do(chromedp.Navigate(e.url("/games/g1")))
	b.until("live", `document.querySelector('#conn').dataset.state === 'live'`)

	late := e.upsert(evs[1])[0]
	b.until("the late line", fmt.Sprintf(`document.querySelector('#game').dataset.cursor === '%d'`, late))
	pageAllOlder(t, b)
	if got, want := b.eval(domIDs), reverse(evtIDs(evs)); !eq(got, want) {
		t.Fatalf("timeline %v, want %v", got, want)
	}
	b.noProblems()
}

// A page of "older lines" may bring only lines already shown: late lines
// whose EVT ids sit just below the line the link pages from. The link
// then pages on from that page's last line instead of going away, which
// would leave every older line out of reach.
func TestBrowserOlderPageAllKnown(t *testing.T) {
	e := MustOpenEnv(t, func(c *web.Config) { c.PageLines = 3 })
	g := e.gen("g1")
	evs := g.chats(t, 10)
	e.upsert(append(evs[:4:4], evs[7:]...)...)
	b := mustOpenBrowser(t)
	b.do(chromedp.Navigate(e.url("/games/g1")))
	b.until("live", `document.querySelector('#conn').dataset.state === 'live'`)
	for _, late := range e.upsert(evs[4:7]...) {
		b.until("the late line", fmt.Sprintf(`Number(document.querySelector('#game').dataset.cursor) >= %d`, late))
	}
	pageAllOlder(t, b)
	if got, want := b.eval(domIDs), reverse(evtIDs(evs)); !eq(got, want) {
		t.Fatalf("timeline %v, want %v", got, want)
	}
	b.noProblems()
}

// Late lines sit below the lines "older lines" pages from; when the list
// reaches its cap and pushes its oldest line out, the link must still page
// from where it did, not from the oldest late line, or the lines between
// are never shown.
func TestBrowserLateLinesAtTheCap(t *testing.T) {
	const cap = 6
	e := MustOpenEnv(t, func(c *web.Config) { c.PageLines = 3; c.DOMLines = cap })
	g := e.gen("g1")
	evs := g.chats(t, 14)
	e.upsert(append(evs[:1:1], evs[3:12]...)...)
	b := mustOpenBrowser(t)
	b.do(chromedp.EmulateViewport(800, 600), chromedp.Navigate(e.url("/games/g1")))
	b.until("live", `document.querySelector('#conn').dataset.state === 'live'`)
	b.do(chromedp.Evaluate[chromedp.Void](`window.__seen = new Set(); window.__sorted = true;
		new MutationObserver(() => {
			const ids = Array.from(document.querySelectorAll('#timeline > li')).map(l => l.id);
			ids.forEach(id => window.__seen.add(id));
			if (ids.some((id, i) => i > 0 && ids[i - 1] <= id)) window.__sorted = false;
		}).observe(document.getElementById('timeline'), {childList: true})`))

	// Two late lines, then two new ones: the second new line fills the list.
	for _, ev := range []int{2, 1, 12, 13} {
		seq := e.upsert(evs[ev])[0]
		b.until("the line", fmt.Sprintf(`document.querySelector('#game').dataset.cursor === '%d'`, seq))
	}
	pageAllOlder(t, b)
	var missed []string
	for _, id := range evtIDs(evs) {
		if b.num(fmt.Sprintf(`window.__seen.has(%q) ? 1 : 0`, id)) == 0 {
			missed = append(missed, id)
		}
	}
	if len(missed) > 0 {
		t.Fatalf("lines never shown: %v", missed)
	}
	if b.num(`window.__sorted ? 1 : 0`) == 0 {
		t.Fatalf("the timeline was out of EVT id order at some point")
	}
	b.noProblems()
}

// openTall opens url in a window tall enough that the reader stays at the
// newest lines, and waits for the page to be live.
func (b *browser) openTall(url string) {
	b.tb.Helper()
	b.do(chromedp.EmulateViewport(800, 1400), chromedp.Navigate(url))
	b.until("live", `document.querySelector('#conn').dataset.state === 'live'`)
}

// holdOlderPage clicks "older lines" and holds the page it asks for in
// the browser until releaseOlderPage: the answer is the server's, only
// later. Later pages go through at once.
func (b *browser) holdOlderPage() {
	b.tb.Helper()
	b.do(chromedp.Evaluate[chromedp.Void](`(() => {
		const real = window.fetch;
		window.fetch = function (url, opts) {
			const p = real(url, opts);
			if (String(url).indexOf('/older') < 0 || window.__release) return p;
			return p.then(r => new Promise(res => { window.__release = () => res(r); }));
		};
		document.querySelector('#older').click();
	})()`))
	b.until("the page of older lines on its way", `!!window.__release`)
}

// releaseOlderPage lets the page held by holdOlderPage reach the page.
func (b *browser) releaseOlderPage() {
	b.tb.Helper()
	b.do(chromedp.Evaluate[chromedp.Void](`window.__release()`))
}

// untilOlderLines waits for a page of older lines to be in, line evtID
// among them.
func (b *browser) untilOlderLines(evtID string) {
	b.tb.Helper()
	b.until("older lines", fmt.Sprintf(`!!document.getElementById(%q) && !document.querySelector('#older').dataset.busy`, evtID))
}

// A live line that reaches a full list while a page of "older lines" is
// on its way pushes the oldest line out, and the link moves up to the
// oldest line still shown: the page, asked for below the line pushed out,
// no longer joins the list. Put in, it would leave that line out for good
// (a gap no paging fills); the page is dropped and asked for again from
// where the link now pages, so the list stays whole, in EVT id order,
// without a line twice.
func TestBrowserLiveLineDuringOlder(t *testing.T) {
	const cap = 6
	e := MustOpenEnv(t, func(c *web.Config) { c.PageLines = 3; c.DOMLines = cap })
	g := e.gen("g1")
	evs := g.chats(t, 13)
	e.upsert(evs[:9]...)
	b := mustOpenBrowser(t)
	// Tall enough that the reader stays at the newest: live lines go in.
	b.openTall(e.url("/games/g1"))
	for _, ev := range evs[9:12] {
		e.upsert(ev)
		b.until("live line", fmt.Sprintf(`!!document.getElementById(%q)`, ev.EvtID))
	}
	if got, want := b.eval(domIDs), reverse(evtIDs(evs[6:12])); !eq(got, want) {
		t.Fatalf("timeline %v, want the list full %v", got, want)
	}
	// The first page of older lines is held until the test lets it go.
	b.holdOlderPage()
	e.upsert(evs[12])
	b.until("the live line in, the oldest out", fmt.Sprintf(`!!document.getElementById(%q) && !document.getElementById(%q)`, evs[12].EvtID, evs[6].EvtID))
	b.releaseOlderPage()
	b.untilOlderLines(evs[4].EvtID)

	got := b.eval(domIDs)
	all := reverse(evtIDs(evs))
	at := -1
	for i, id := range all {
		if len(got) > 0 && id == got[0] {
			at = i
		}
	}
	if at < 0 || len(got) != cap || at+len(got) > len(all) || !eq(got, all[at:at+len(got)]) {
		t.Fatalf("timeline %v: want %d lines in a row of %v, no gap, none twice", got, cap, all)
	}
	if before := b.eval(`[document.querySelector('#older').dataset.before]`)[0]; before != got[len(got)-1] {
		t.Fatalf("older lines page before %s, want the oldest shown %s", before, got[len(got)-1])
	}
	// Everything pushed out comes back: older lines below, the pill above.
	pageAllOlder(t, b)
	b.until("pill", `!document.querySelector('#newer').hidden`)
	b.noProblems()
}

// The pill clicked while a page of "older lines" is on its way puts the
// held newest lines back, pushing the oldest out: the page no longer joins
// the list and is dropped, and not asked for again, since the reader went
// to the newest lines; the list stays whole and the link pages from its
// oldest line.
func TestBrowserPillDuringOlder(t *testing.T) {
	const cap = 6
	e := MustOpenEnv(t, func(c *web.Config) { c.PageLines = 3; c.DOMLines = cap })
	g := e.gen("g1")
	evs := g.chats(t, 12)
	e.upsert(evs...)
	b := mustOpenBrowser(t)
	b.openTall(e.url("/games/g1"))
	// Two pages of older lines: the second pushes the newest three out,
	// behind the pill.
	for _, want := range []int{6, 3} {
		b.do(chromedp.Evaluate[chromedp.Void](`document.querySelector('#older').click()`))
		b.untilOlderLines(evs[want].EvtID)
	}
	b.until("pill", `!document.querySelector('#newer').hidden`)
	if got, want := b.eval(domIDs), reverse(evtIDs(evs[3:9])); !eq(got, want) {
		t.Fatalf("timeline %v, want %v", got, want)
	}
	b.holdOlderPage()
	b.do(chromedp.Evaluate[chromedp.Void](`document.querySelector('#newer').click()`))
	b.until("the newest lines back", fmt.Sprintf(`!!document.getElementById(%q)`, evs[11].EvtID))
	b.releaseOlderPage()
	b.until("the page handled", `!document.querySelector('#older').dataset.busy`)
	if got, want := b.eval(domIDs), reverse(evtIDs(evs[6:])); !eq(got, want) {
		t.Fatalf("timeline %v, want the newest %d in a row %v", got, cap, want)
	}
	if before := b.eval(`[document.querySelector('#older').dataset.before]`)[0]; before != evs[6].EvtID {
		t.Fatalf("older lines page before %s, want the oldest shown %s", before, evs[6].EvtID)
	}
	b.noProblems()
}

// A page of "older lines" that could not be fetched turns the link into
// "older lines (retry)"; once a page comes, it reads "older lines" again.
func TestBrowserOlderRetry(t *testing.T) {
	e := MustOpenEnv(t, func(c *web.Config) { c.PageLines = 3 })
	g := e.gen("g1")
	evs := g.chats(t, 9)
	e.upsert(evs...)
	b := mustOpenBrowser(t)
	b.openTall(e.url("/games/g1"))
	// The first request for older lines fails as a lost network does; the
	// next go through.
	b.do(chromedp.Evaluate[chromedp.Void](`(() => {
		const real = window.fetch;
		let failed = false;
		window.fetch = function (url, opts) {
			if (String(url).indexOf('/older') >= 0 && !failed) {
				failed = true;
				return Promise.reject(new TypeError('Failed to fetch'));
			}
			return real(url, opts);
		};
		document.querySelector('#older').click();
	})()`))
	b.until("the retry offered", `document.querySelector('#older').textContent === 'older lines (retry)' && !document.querySelector('#older').dataset.busy`)
	b.do(chromedp.Evaluate[chromedp.Void](`document.querySelector('#older').click()`))
	b.untilOlderLines(evs[3].EvtID)
	if got := b.eval(`[document.querySelector('#older').textContent]`)[0]; got != "older lines" {
		t.Fatalf("after a page came the link reads %q, want %q", got, "older lines")
	}
	b.noProblems()
}

// The filter hides chat, or all but guesses and wins, for lines that
// arrive live too, and the browser remembers it.
func TestBrowserFilterLive(t *testing.T) {
	e := MustOpenEnv(t, nil)
	g := e.gen("g1")
	e.upsert(g.chats(t, 1)...)
	b := mustOpenBrowser(t)
	b.do(chromedp.Navigate(e.url("/games/g1")))
	b.until("live", `document.querySelector('#conn').dataset.state === 'live'`)
	b.choose("#filter", "plays")
	b.until("filter set", `document.querySelector('#game').dataset.filter === 'plays'`)

	chat := g.ev(t, event.KindChat, "player", "ada", "text", "hello")
	guess := g.ev(t, event.KindGuess, "player", "ada", "round", "1", "guess", "🍍🍌", "exact", "1", "near", "0")
	join := g.ev(t, event.KindPlayerJoined, "player", "bob", "avatar", "🦊")
	e.upsert(chat, guess, join)
	b.until("live lines", `document.querySelectorAll('#timeline > li').length === 4`)
	shown := func() []string {
		return b.eval(`Array.from(document.querySelectorAll('#timeline > li')).filter(l => getComputedStyle(l).display !== 'none').map(l => l.id)`)
	}
	if got, want := shown(), []string{guess.EvtID}; !eq(got, want) {
		t.Fatalf("shown %v, want only the guess %v", got, want)
	}

	b.do(chromedp.Reload())
	b.until("live after reload", `document.querySelector('#conn').dataset.state === 'live'`)
	if v := b.eval(`[document.querySelector('#game').dataset.filter, document.querySelector('#filter').value]`); v[0] != "plays" || v[1] != "plays" {
		t.Fatalf("after a reload the filter is %v", v)
	}
	b.choose("#filter", "nochat")
	b.until("no chat", `document.querySelector('#game').dataset.filter === 'nochat'`)
	more := g.ev(t, event.KindChat, "player", "bob", "text", "still hidden")
	e.upsert(more)
	b.until("the chat line arrived", fmt.Sprintf(`!!document.getElementById(%q)`, more.EvtID))
	if got, want := shown(), []string{join.EvtID, guess.EvtID}; !eq(got, want) {
		t.Fatalf("shown %v, want %v", got, want)
	}
	b.noProblems()
}

// Times follow one rule on both sides: the server's UTC rendering is what
// the script shows in UTC, and a player elsewhere sees the same format in
// their own zone, which the page names.
func TestBrowserTimesAgree(t *testing.T) {
	e := MustOpenEnv(t, nil)
	g := e.gen("g1")
	at := time.Now().UTC().Add(-3*time.Hour - 30*time.Second).Truncate(time.Second)
	old := g.ev(t, event.KindChat, "player", "ada", "text", "long ago")
	old.At = at
	old.Payload["at"] = at.Format(time.RFC3339)
	var err error
	if old.HTML, err = templates.RenderLine(old.Kind, old.Payload, at); err != nil {
		t.Fatal(err)
	}
	e.upsert(old)
	// The index shows the store's time of a game's last line: make it old.
	sdb, err := sql.Open("sqlite", e.dbPath)
	if err != nil {
		t.Fatal(err)
	}
	defer sdb.Close()
	if _, err := sdb.Exec(`UPDATE games SET last_at = ? WHERE name = 'g1'`, at.UnixNano()); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct{ zone, clock string }{
		{"UTC", at.Format("15:04:05")},
		{"Asia/Tokyo", at.In(time.FixedZone("JST", 9*3600)).Format("15:04:05")},
	} {
		b := mustOpenBrowser(t)
		if _, err := chromedp.Call(b.ctx, emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: tc.zone}); err != nil {
			t.Fatal(err)
		}
		b.do(chromedp.Navigate(e.url("/games/g1")))
		b.until("live", `document.querySelector('#conn').dataset.state === 'live'`)
		got := b.eval(`[document.querySelector('#timeline time').textContent, document.querySelector('#tz').textContent, document.querySelector('#timeline time').title]`)
		if want := []string{tc.clock, tc.zone, at.In(mustZone(t, tc.zone)).Format("2006-01-02 15:04:05") + " " + tc.zone}; !eq(got, want) {
			t.Errorf("%s: line time, zone, tooltip %q, want %q", tc.zone, got, want)
		}
		_, page := e.get("/")
		b.do(chromedp.Navigate(e.url("/")))
		b.until("index", `document.querySelector('#index').dataset.state === 'live'`)
		rel := b.eval(`[document.querySelector('#games time').textContent]`)
		if rel[0] != "3h ago" || !strings.Contains(page, ">3h ago</time>") {
			t.Errorf("%s: index shows %q; the server's page has 3h ago: %v", tc.zone, rel[0], strings.Contains(page, ">3h ago</time>"))
		}
	}
}

func mustZone(tb testing.TB, name string) *time.Location {
	tb.Helper()
	l, err := time.LoadLocation(name)
	if err != nil {
		tb.Fatal(err)
	}
	return l
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

// pageAllOlder clicks "older lines" until the link goes, each time waiting
// for the page to be in (the link pages from elsewhere, or is gone).
func pageAllOlder(tb testing.TB, b *browser) {
	tb.Helper()
	for i := 0; b.num(`document.querySelector('#older') ? 1 : 0`) == 1; i++ {
		if i == 10 {
			tb.Fatalf("still older lines after %d pages", i)
		}
		before := b.eval(`[document.querySelector('#older').dataset.before]`)[0]
		b.do(chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, document.body.scrollHeight)`))
		b.do(chromedp.Click(chromedp.CSS("#older")))
		b.until("a page of older lines", fmt.Sprintf(`!document.querySelector('#older') ||
			(!document.querySelector('#older').dataset.busy && document.querySelector('#older').dataset.before !== %q)`, before))
	}
}

// announcedLines records, in window.__announced, the text of every element
// added to the page inside a live region (aria-live other than off, or a
// role that is live by default), as a screen reader would be told of it,
// judged when the addition is seen.
const announcedLines = `(() => {
	window.__announced = [];
	const live = (n) => {
		for (let e = n.nodeType === 1 ? n : n.parentElement; e; e = e.parentElement) {
			const a = e.getAttribute('aria-live');
			if (a) return a !== 'off';
			if (/^(log|status|alert)$/.test(e.getAttribute('role') || '')) return true;
		}
		return false;
	};
	new MutationObserver((ms) => {
		for (const m of ms) for (const n of m.addedNodes) {
			if (n.nodeType === 1 && live(n)) window.__announced.push(n.textContent.replace(/\s+/g, ' ').trim());
		}
	}).observe(document.body, { childList: true, subtree: true });
})()`

// liveIn returns the live region Chromium's accessibility tree puts the
// element js evaluates to in, as a screen reader is told of it: the
// politeness ("polite", "assertive") of the nearest of it and its
// ancestors that is a live region, or "" for none.
func (b *browser) liveIn(js string) string {
	b.tb.Helper()
	ev, err := chromedp.Call(b.ctx, runtime.Evaluate, runtime.EvaluateParams{Expression: js})
	if err != nil || ev.Result == nil || ev.Result.ObjectID == "" {
		b.tb.Fatalf("%s: no element (%v)", js, err)
	}
	el, err := chromedp.Call(b.ctx, dom.DescribeNode, dom.DescribeNodeParams{ObjectID: ev.Result.ObjectID})
	if err != nil {
		b.tb.Fatalf("%s: %v", js, err)
	}
	yes := true // its ancestors too
	tree, err := chromedp.Call(b.ctx, accessibility.GetPartialAXTree, accessibility.GetPartialAXTreeParams{ObjectID: ev.Result.ObjectID, FetchRelatives: &yes})
	if err != nil {
		b.tb.Fatalf("%s: %v", js, err)
	}
	nodes := map[accessibility.NodeID]*accessibility.Node{}
	var n *accessibility.Node
	for _, x := range tree.Nodes {
		nodes[x.NodeID] = x
		if x.BackendDOMNodeID == el.Node.BackendNodeID {
			n = x
		}
	}
	if n == nil {
		b.tb.Fatalf("%s: no accessibility node", js)
	}
	for ; n != nil; n = nodes[n.ParentID] {
		for _, p := range n.Properties {
			if p.Name == accessibility.PropertyNameLive {
				if live := strings.Trim(string(p.Value.Value), `"`); live != "off" {
					return live
				}
				return ""
			}
		}
	}
	return ""
}

// A page of "older lines" is old news: its lines go into the timeline
// without a word to a screen reader, while a live line is announced, its
// copy in the announcements' log removed after a while. The timeline was a
// live region (role=log, aria-live=polite), so a page of old lines was
// announced as if they had just happened.
func TestBrowserOlderLinesNotAnnounced(t *testing.T) {
	e := MustOpenEnv(t, func(c *web.Config) { c.PageLines = 3 })
	g := e.gen("g1")
	evs := g.chats(t, 8)
	e.upsert(evs[:6]...)
	b := mustOpenBrowser(t)
	b.openTall(e.url("/games/g1"))
	b.do(chromedp.Evaluate[chromedp.Void](announcedLines))

	b.do(chromedp.Click(chromedp.CSS("#older")))
	b.untilOlderLines(evs[0].EvtID)
	if got := b.eval(`window.__announced`); len(got) != 0 {
		t.Fatalf("a page of older lines announced: %q", got)
	}
	if live := b.liveIn(fmt.Sprintf(`document.getElementById(%q)`, evs[0].EvtID)); live != "" {
		t.Fatalf("an older line is in a %s live region of Chromium's accessibility tree", live)
	}

	e.upsert(evs[6])
	b.until("the live line shown", fmt.Sprintf(`!!document.getElementById(%q)`, evs[6].EvtID))
	b.until("the live line announced", `window.__announced.length > 0`)
	got := b.eval(`window.__announced`)
	if len(got) != 1 || !strings.Contains(got[0], "ada") || !strings.HasSuffix(got[0], "message 6") {
		t.Fatalf("announced %q, want the live line (ada: message 6) alone", got)
	}
	if live := b.liveIn(`document.querySelector('#announce > :last-child')`); live != "polite" {
		t.Fatalf("the live line's announcement is in a live region %q of Chromium's accessibility tree, want polite", live)
	}
	// The copy goes once a screen reader has been told of it (7 s), so that
	// a reader browsing the page meets the line once, in the timeline: the
	// last ten copies stayed for as long as the page was open.
	b.until("the announcement's copy removed", fmt.Sprintf(`document.querySelector('#announce').children.length === 0 && !!document.getElementById(%q)`, evs[6].EvtID))
	b.noProblems()
}
