package web_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/codemojex/feed/web"
)

// A replay has a line that lands late (a re-claimed older event: an old
// EVT id, a new seq) without a reload, at its place by EVT id: one
// committed below the cursor while the replay pages through the timeline,
// and one committed after it loaded, while its lines are on screen.
func TestBrowserReplayLateLine(t *testing.T) {
	e := MustOpenEnv(t, func(c *web.Config) { c.TimelineLines = 1 }) // a page per line
	evs := e.gen("g1").chats(t, 6)
	e.upsert(evs[0], evs[2], evs[4], evs[5])
	b := mustOpenBrowser(t)
	// The page after evs[2] is asked for only when the test lets it: a late
	// line committed meanwhile sits below the cursor of every page left.
	holdFetch(t, b, "after="+evs[2].EvtID)
	b.do(chromedp.Navigate(e.url("/games/g1/replay")))
	b.until("the page after evs[2] asked for", `!!window.__release`)
	e.upsert(evs[1])
	b.do(chromedp.Evaluate[chromedp.Void](`window.__release()`))
	b.until("loaded with the line committed while paging", `document.querySelector('#replay').dataset.state === 'ready' && document.querySelector('#pos').max === '5'`)

	// Every line on screen, then one more lands late among them.
	b.do(chromedp.Evaluate[chromedp.Void](`(() => { const p = document.getElementById('pos'); p.value = p.max; p.dispatchEvent(new Event('input')); })()`))
	b.until("every line shown", `document.querySelectorAll('#timeline > li').length === 5`)
	e.upsert(evs[3])
	b.until("the late line", fmt.Sprintf(`!!document.getElementById(%q)`, evs[3].EvtID))
	if got, want := b.eval(`Array.from(document.querySelectorAll('#timeline > li')).map(l => l.id)`), reverse(evtIDs(evs)); !eq(got, want) {
		t.Fatalf("replay shows %v, want %v", got, want)
	}
	if got := b.eval(`[document.getElementById('postext').textContent, document.getElementById('pos').max]`); got[0] != "6 / 6" || got[1] != "6" {
		t.Fatalf("position %q, max %q, want 6 / 6", got[0], got[1])
	}
	b.noProblems()
}

// holdFetch makes the next documents' first fetch whose URL contains part
// wait, before it is sent, until the page calls window.__release(): the
// request then goes to the server as it would have.
func holdFetch(tb testing.TB, b *browser, part string) {
	tb.Helper()
	js := `(() => {
		const real = window.fetch, part = ` + strconv.Quote(part) + `;
		window.fetch = function (url, opts) {
			if (String(url).indexOf(part) < 0 || window.__release) return real(url, opts);
			return new Promise(res => { window.__release = res; }).then(() => real(url, opts));
		};
	})()`
	if _, err := chromedp.Call(b.ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: js}); err != nil {
		tb.Fatal(err)
	}
}

// A replay's lines are said to a screen reader as they are played, in
// order, and the lines a seek puts in are not (the slider says where it
// is). Playing put lines on screen without a word to a screen reader.
func TestBrowserReplayPlayAnnounced(t *testing.T) {
	e := MustOpenEnv(t, nil)
	evs := e.gen("g1").chats(t, 4)
	e.upsert(evs...)
	b := mustOpenBrowser(t)
	b.do(chromedp.Navigate(e.url("/games/g1/replay")))
	b.until("loaded", `document.querySelector('#replay').dataset.state === 'ready' && document.querySelector('#pos').max === '4'`)
	b.do(chromedp.Evaluate[chromedp.Void](announcedLines))

	b.do(chromedp.Evaluate[chromedp.Void](`(() => { const p = document.getElementById('pos'); p.value = '2'; p.dispatchEvent(new Event('input')); })()`))
	b.until("sought to 2", `document.querySelectorAll('#timeline > li').length === 2`)
	b.do(chromedp.SetValue(chromedp.CSS("#speed"), "50"))
	b.do(chromedp.Click(chromedp.CSS("#play")))
	b.until("played to the end", `document.querySelectorAll('#timeline > li').length === 4 && document.querySelector('#play').dataset.state === 'paused'`)
	b.until("both played lines announced", `window.__announced.length >= 2`)
	got := b.eval(`window.__announced`)
	if len(got) != 2 || !strings.HasSuffix(got[0], "message 2") || !strings.HasSuffix(got[1], "message 3") {
		t.Fatalf("announced %q, want the two lines played (message 2, message 3), not the two a seek showed", got)
	}
	if live := b.liveIn(`document.querySelector('#announce > :last-child')`); live != "polite" {
		t.Fatalf("a played line's announcement is in a live region %q of Chromium's accessibility tree, want polite", live)
	}
	b.noProblems()
}

// Lines played in a burst (written within the same second, played at 50×)
// are said as one, their count and the newest: said each, they were twelve
// announcements in a screen reader's queue.
func TestBrowserReplayBurstAnnouncedOnce(t *testing.T) {
	e := MustOpenEnv(t, nil)
	evs := e.gen("g1").chats(t, 12)
	e.upsert(evs...)
	b := mustOpenBrowser(t)
	b.do(chromedp.Navigate(e.url("/games/g1/replay")))
	b.until("loaded", `document.querySelector('#replay').dataset.state === 'ready' && document.querySelector('#pos').max === '12'`)
	b.do(chromedp.Evaluate[chromedp.Void](announcedLines))
	b.do(chromedp.SetValue(chromedp.CSS("#speed"), "50"))
	b.do(chromedp.Click(chromedp.CSS("#play")))
	b.until("played to the end", `document.querySelectorAll('#timeline > li').length === 12 && document.querySelector('#play').dataset.state === 'paused'`)
	b.until("the newest played line announced", `window.__announced.some(a => a.endsWith('message 11'))`)
	got := b.eval(`window.__announced`)
	// A line written in the next second is played 20 ms later: the burst
	// may be cut in two, never into a line each.
	if len(got) > 4 || !slices.ContainsFunc(got, func(a string) bool { return strings.HasSuffix(a, "lines played, the newest:") }) {
		t.Fatalf("announced %q, want the burst as one (N lines played, the newest: …)", got)
	}
	b.noProblems()
}

// A replay whose timeline cannot be loaded says so, on screen and to a
// screen reader: the position's text said it to sighted readers alone.
func TestBrowserReplayLoadFailsSaid(t *testing.T) {
	e := MustOpenEnv(t, nil)
	e.upsert(e.gen("g1").chats(t, 2)...)
	px := mustStartProxy(t, e.srv.Addr())
	b := mustOpenBrowser(t)
	b.allowFailing("timeline.json")
	holdFetch(t, b, "timeline.json")
	b.do(chromedp.Navigate(px.url("/games/g1/replay")))
	b.until("the timeline asked for", `!!window.__release`)
	b.do(chromedp.Evaluate[chromedp.Void](announcedLines))
	px.down.Store(true)
	px.closeAll()
	b.do(chromedp.Evaluate[chromedp.Void](`window.__release()`))
	b.until("the failure shown", `document.querySelector('#replay').dataset.state === 'error'`)
	if got := b.eval(`[document.getElementById('postext').textContent]`); !strings.HasPrefix(got[0], "could not load the timeline") {
		t.Fatalf("position text %q, want the failure", got[0])
	}
	b.until("the failure announced", `window.__announced.length > 0`)
	if got := b.eval(`window.__announced`); len(got) != 1 || !strings.HasPrefix(got[0], "could not load the timeline") {
		t.Fatalf("announced %q, want the failure alone", got)
	}
	b.noProblems()
}

// A replay moved to another host (a balancer) whose store holds another
// timeline says that the timeline changed, on screen and to a screen
// reader, rather than merge the other store's lines by their seqs.
func TestBrowserReplayChangedSaid(t *testing.T) {
	a := MustOpenEnv(t, func(c *web.Config) { c.StoreID = "store-a" })
	other := MustOpenEnv(t, func(c *web.Config) { c.StoreID = "store-b" })
	a.upsert(a.gen("g1").chats(t, 2)...)
	other.upsert(other.gen("g1").chats(t, 3)...)
	px := mustStartProxy(t, a.srv.Addr())
	b := mustOpenBrowser(t)
	b.do(chromedp.Navigate(px.url("/games/g1/replay")))
	b.until("loaded", `document.querySelector('#replay').dataset.state === 'ready' && document.querySelector('#pos').max === '2'`)
	b.do(chromedp.Evaluate[chromedp.Void](announcedLines))
	px.retarget(other.srv.Addr())
	px.closeAll()
	b.until("the change shown", `document.querySelector('#replay').dataset.state === 'changed'`)
	if got := b.eval(`[document.getElementById('postext').textContent, document.getElementById('pos').max]`); got[0] != "the timeline changed: reload to see it" || got[1] != "2" {
		t.Fatalf("position text %q, max %q; want the change said, the timeline left as loaded", got[0], got[1])
	}
	b.until("the change announced", `window.__announced.length > 0`)
	if got := b.eval(`window.__announced`); len(got) != 1 || got[0] != "the timeline changed: reload to see it" {
		t.Fatalf("announced %q, want the change alone", got)
	}
	b.noProblems()
}

// A replay whose game the store no longer has (feedctl prune deleted it)
// says so, on screen and to a screen reader: one whose first page is
// answered 404 offers nothing to play, and one deleted while it is open
// stops asking for what was committed since and still plays the lines it
// loaded. Until timeline.json answered 404 for such a game (it was an
// empty 200) the first read "0 / 0" with play disabled, as for a game of
// no lines, and the second asked every 5 s for ever without a word.
func TestBrowserReplayGameDeleted(t *testing.T) {
	e := MustOpenEnv(t, nil)
	e.upsert(e.gen("g1").chats(t, 2)...)
	e.upsert(e.gen("g2").chats(t, 2)...)
	deleteGame := func(game string) {
		t.Helper()
		if _, err := e.db.DeleteGame(context.Background(), game); err != nil {
			t.Fatal(err)
		}
	}
	b := mustOpenBrowser(t)
	b.allowFailing("timeline.json") // the 404s are the answers the test wants

	// Deleted while open: the next ?since= poll (at most 5 s) is a 404.
	b.do(chromedp.Navigate(e.url("/games/g1/replay")))
	b.until("loaded", `document.querySelector('#replay').dataset.state === 'ready' && document.querySelector('#pos').max === '2'`)
	b.do(chromedp.Evaluate[chromedp.Void](announcedLines))
	deleteGame("g1")
	b.until("the deletion shown", `document.querySelector('#replay').dataset.state === 'gone'`)
	const goneOpen = "this game is no longer stored: the lines loaded still play"
	if got := b.eval(`[document.getElementById('postext').textContent, document.getElementById('pos').max]`); got[0] != goneOpen || got[1] != "2" {
		t.Fatalf("position text %q, max %q; want %q, the timeline left as loaded", got[0], got[1], goneOpen)
	}
	b.until("the deletion announced", `window.__announced.length > 0`)
	if got := b.eval(`window.__announced`); len(got) != 1 || got[0] != goneOpen {
		t.Fatalf("announced %q, want the deletion alone", got)
	}
	b.do(chromedp.SetValue(chromedp.CSS("#speed"), "50"))
	b.do(chromedp.Click(chromedp.CSS("#play")))
	b.until("the loaded lines played", `document.querySelectorAll('#timeline > li').length === 2 && document.querySelector('#play').dataset.state === 'paused'`)

	// Deleted between the page and its first timeline page.
	holdFetch(t, b, "/games/g2/timeline.json")
	b.do(chromedp.Navigate(e.url("/games/g2/replay")))
	b.until("the timeline asked for", `!!window.__release`)
	b.do(chromedp.Evaluate[chromedp.Void](announcedLines))
	deleteGame("g2")
	b.do(chromedp.Evaluate[chromedp.Void](`window.__release()`))
	b.until("the deletion shown", `document.querySelector('#replay').dataset.state === 'gone'`)
	const goneLoad = "this game is no longer stored: nothing to replay"
	if got := b.eval(`[document.getElementById('postext').textContent, String(document.getElementById('play').disabled)]`); got[0] != goneLoad || got[1] != "true" {
		t.Fatalf("position text %q, play disabled %s; want %q, play disabled", got[0], got[1], goneLoad)
	}
	b.until("the deletion announced", `window.__announced.length > 0`)
	if got := b.eval(`window.__announced`); len(got) != 1 || got[0] != goneLoad {
		t.Fatalf("announced %q, want the deletion alone", got)
	}
	b.noProblems()
}

// A game deleted between two pages of its timeline (feedctl prune while
// the replay pages through it) plays the pages loaded, saying it is no
// longer stored, as one deleted once loaded does. The later page's 404
// threw the pages loaded away: "nothing to replay", play disabled.
func TestBrowserReplayGameDeletedWhilePaging(t *testing.T) {
	e := MustOpenEnv(t, func(c *web.Config) { c.TimelineLines = 1 }) // a page per line
	evs := e.gen("g1").chats(t, 3)
	e.upsert(evs...)
	b := mustOpenBrowser(t)
	b.allowFailing("timeline.json") // the 404 is the answer the test wants
	holdFetch(t, b, "after="+evs[1].EvtID)
	b.do(chromedp.Navigate(e.url("/games/g1/replay")))
	b.until("the third page asked for", `!!window.__release`)
	b.do(chromedp.Evaluate[chromedp.Void](announcedLines))
	if _, err := e.db.DeleteGame(context.Background(), "g1"); err != nil {
		t.Fatal(err)
	}
	b.do(chromedp.Evaluate[chromedp.Void](`window.__release()`))
	b.until("the deletion shown", `document.querySelector('#replay').dataset.state === 'gone'`)
	const want = "this game is no longer stored: the lines loaded still play"
	if got := b.eval(`[document.getElementById('postext').textContent, document.getElementById('pos').max, String(document.getElementById('play').disabled)]`); got[0] != want || got[1] != "2" || got[2] != "false" {
		t.Fatalf("position text %q, max %q, play disabled %s; want %q, the 2 lines loaded, play enabled", got[0], got[1], got[2], want)
	}
	b.until("the deletion announced", `window.__announced.length > 0`)
	if got := b.eval(`window.__announced`); len(got) != 1 || got[0] != want {
		t.Fatalf("announced %q, want the deletion alone", got)
	}
	b.do(chromedp.SetValue(chromedp.CSS("#speed"), "50"))
	b.do(chromedp.Click(chromedp.CSS("#play")))
	b.until("the loaded lines played", `document.querySelectorAll('#timeline > li').length === 2 && document.querySelector('#play').dataset.state === 'paused'`)
	if got, want := b.eval(`Array.from(document.querySelectorAll('#timeline > li')).map(l => l.id)`), reverse(evtIDs(evs[:2])); !eq(got, want) {
		t.Fatalf("replay shows %v, want %v", got, want)
	}
	b.noProblems()
}
