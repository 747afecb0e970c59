package web_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/accessibility"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/codemojex/feed/web"
)

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

// element returns the remote object and the DOM node of the element js
// evaluates to, for the accessibility tree's questions about it.
func (b *browser) element(js string) (runtime.RemoteObjectID, cdp.BackendNodeID) {
	b.tb.Helper()
	ev, err := chromedp.Call(b.ctx, runtime.Evaluate, runtime.EvaluateParams{Expression: js})
	if err != nil || ev.Result == nil || ev.Result.ObjectID == "" {
		b.tb.Fatalf("%s: no element (%v)", js, err)
	}
	el, err := chromedp.Call(b.ctx, dom.DescribeNode, dom.DescribeNodeParams{ObjectID: ev.Result.ObjectID})
	if err != nil {
		b.tb.Fatalf("%s: %v", js, err)
	}
	return ev.Result.ObjectID, el.Node.BackendNodeID
}

// liveIn returns the live region Chromium's accessibility tree puts the
// element js evaluates to in, as a screen reader is told of it: the
// politeness ("polite", "assertive") of the nearest of it and its
// ancestors that is a live region, or "" for none.
func (b *browser) liveIn(js string) string {
	b.tb.Helper()
	obj, node := b.element(js)
	yes := true // its ancestors too
	tree, err := chromedp.Call(b.ctx, accessibility.GetPartialAXTree, accessibility.GetPartialAXTreeParams{ObjectID: obj, FetchRelatives: &yes})
	if err != nil {
		b.tb.Fatalf("%s: %v", js, err)
	}
	nodes := map[accessibility.NodeID]*accessibility.Node{}
	var n *accessibility.Node
	for _, x := range tree.Nodes {
		nodes[x.NodeID] = x
		if x.BackendDOMNodeID == node {
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
	// The copies go once a screen reader has been told of them (7 s each),
	// so that a reader browsing the page meets a line once, in the
	// timeline: the last ten copies stayed for as long as the page was
	// open. The second, said later, is due after the first: the log's one
	// timer has to be set again for it.
	e.upsert(evs[7])
	b.until("the second live line announced", `window.__announced.length === 2`)
	b.until("the announcements' copies removed", fmt.Sprintf(`document.querySelector('#announce').children.length === 0 && !!document.getElementById(%q) && !!document.getElementById(%q)`, evs[6].EvtID, evs[7].EvtID))
	b.noProblems()
}

// A burst of live lines (here twenty in one commit, as a resume's backfill
// brings them) is said as one, its count and its newest line: said each,
// it was twenty announcements in a screen reader's queue.
func TestBrowserBurstAnnouncedOnce(t *testing.T) {
	e := MustOpenEnv(t, nil)
	g := e.gen("g1")
	evs := g.chats(t, 21)
	e.upsert(evs[0])
	b := mustOpenBrowser(t)
	b.openTall(e.url("/games/g1"))
	b.do(chromedp.Evaluate[chromedp.Void](announcedLines))

	e.upsert(evs[1:]...)
	b.until("the burst shown", fmt.Sprintf(`document.querySelectorAll('#timeline > li').length === 21 && document.querySelector('#timeline > li').id === %q`, evs[20].EvtID))
	b.until("the burst announced", `window.__announced.some(a => a.endsWith('message 20'))`)
	got := b.eval(`window.__announced`)
	// The frames may come on both sides of the burst's window on a busy
	// machine: a few announcements, never one a line.
	if len(got) > 4 {
		t.Fatalf("a burst of 20 lines made %d announcements, want its count and newest line: %q", len(got), got)
	}
	if !slices.ContainsFunc(got, func(a string) bool { return strings.HasSuffix(a, "new lines, the newest:") }) {
		t.Fatalf("announced %q, want the burst's count (N new lines, the newest:)", got)
	}
	b.noProblems()
}

// A reconnect's backfill says only the lines the page had not shown: the
// server goes (three tries refused), two lines are written meanwhile, and
// when it is back the page says those two, each once, and none of the
// lines it showed before, which the backfill brings again.
func TestBrowserResumeAnnouncesOnlyNew(t *testing.T) {
	e := MustOpenEnv(t, nil)
	g := e.gen("g1")
	evs := g.chats(t, 5)
	e.upsert(evs[:3]...)
	px := mustStartProxy(t, e.srv.Addr())
	b := mustOpenBrowser(t)
	b.openTall(px.url("/games/g1"))
	b.do(chromedp.Evaluate[chromedp.Void](announcedLines))

	px.down.Store(true)
	px.closeAll()
	b.until("reconnecting", `document.querySelector('#conn').dataset.state !== 'live'`)
	e.upsert(evs[3:]...)
	px.down.Store(false)
	b.until("every line", `document.querySelectorAll('#timeline > li').length === 5`)
	b.until("live again", `document.querySelector('#conn').dataset.state === 'live'`)
	b.until("the new lines announced", `window.__announced.length >= 2`)
	got := b.eval(`window.__announced`)
	if len(got) != 2 || !strings.HasSuffix(got[0], "message 3") || !strings.HasSuffix(got[1], "message 4") {
		t.Fatalf("announced %q, want the two lines written while the page was away, once each", got)
	}
	b.noProblems()
}
