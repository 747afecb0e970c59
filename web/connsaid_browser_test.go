package web_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/accessibility"
	"github.com/chromedp/chromedp"
)

// connSaid records, in window.__connSaid, the text added to the
// connection's state (#conn, a polite live region) from now on, each
// addition as a screen reader is told of it: a text node put in (the whole
// text replaced, even by the same words) or changed in place; and in
// window.__connSets how many times the page set the state (its data-state
// attribute), changed or not.
const connSaid = `(() => {
	window.__connSaid = [];
	window.__connSets = 0;
	new MutationObserver((ms) => {
		for (const m of ms) {
			if (m.type === 'attributes') window.__connSets++;
			if (m.type === 'characterData') window.__connSaid.push(m.target.data);
			for (const n of m.addedNodes) window.__connSaid.push(n.textContent);
		}
	}).observe(document.querySelector('#conn'), { childList: true, characterData: true, subtree: true, attributeFilter: ['data-state'] });
})()`

// axText returns the text Chromium's accessibility tree holds under the
// element js evaluates to (its static text, in order), as a screen reader
// reads it: CSS generated content included, aria-hidden content not.
func (b *browser) axText(js string) string {
	b.tb.Helper()
	_, node := b.element(js)
	tree, err := chromedp.Call(b.ctx, accessibility.GetFullAXTree, accessibility.GetFullAXTreeParams{})
	if err != nil {
		b.tb.Fatalf("%s: %v", js, err)
	}
	nodes := map[accessibility.NodeID]*accessibility.Node{}
	var root *accessibility.Node
	for _, n := range tree.Nodes {
		nodes[n.NodeID] = n
		if n.BackendDOMNodeID == node {
			root = n
		}
	}
	if root == nil {
		b.tb.Fatalf("%s: no accessibility node", js)
	}
	var text []string
	var walk func(n *accessibility.Node)
	walk = func(n *accessibility.Node) {
		if !n.Ignored && n.Role != nil && strings.Trim(string(n.Role.Value), `"`) == "StaticText" && n.Name != nil {
			var s string
			if err := json.Unmarshal([]byte(n.Name.Value), &s); err != nil {
				b.tb.Fatalf("%s: a name %s: %v", js, n.Name.Value, err)
			}
			text = append(text, s)
		}
		for _, c := range n.ChildIDs {
			if k := nodes[c]; k != nil {
				walk(k)
			}
		}
	}
	walk(root)
	return strings.Join(text, "")
}

// The connection's state is said once per change, in words alone: the
// server going away is "reconnecting" once, however many tries the page
// makes; the browser's network going is "offline" once; each return is
// "live" once. Every retry set the state's text again, the same words put
// back into the live region, and a screen reader could say "reconnecting"
// at every try; and the coloured dot before the words (CSS content) was
// read out with them ("black circle, live").
func TestBrowserConnStateSaidOnce(t *testing.T) {
	e := MustOpenEnv(t, nil)
	e.upsert(e.gen("g1").chats(t, 2)...)
	px := mustStartProxy(t, e.srv.Addr())
	b := mustOpenBrowser(t)
	b.do(chromedp.Navigate(px.url("/games/g1")))
	b.until("live", `document.querySelector('#conn').dataset.state === 'live'`)
	if got := b.axText(`document.querySelector('#conn')`); got != "live" {
		t.Fatalf("the connection's state reads %q to a screen reader, want \"live\"", got)
	}
	if live := b.liveIn(`document.querySelector('#conn')`); live != "polite" {
		t.Fatalf("the connection's state is in a live region %q, want polite", live)
	}
	b.do(chromedp.Evaluate[chromedp.Void](connSaid))

	// The server goes: three tries or more, all refused.
	px.down.Store(true)
	px.closeAll()
	tries := func() int {
		n := 0
		for _, l := range px.refusedPaths() {
			if strings.Contains(l, "/live?") {
				n++
			}
		}
		return n
	}
	waitFor(t, 30*time.Second, "three tries while the server is down", func() bool { return tries() >= 3 })
	if got := b.axText(`document.querySelector('#conn')`); got != "reconnecting" {
		t.Fatalf("the connection's state reads %q to a screen reader, want \"reconnecting\"", got)
	}
	px.down.Store(false)
	b.until("live again", `document.querySelector('#conn').dataset.state === 'live'`)

	// The browser's network goes, and the socket with it: the page tries
	// again while offline.
	b.offline(true)
	b.until("offline", `document.querySelector('#conn').dataset.state === 'offline'`)
	sets := b.num(`window.__connSets`)
	px.down.Store(true)
	px.closeAll()
	b.until("two tries while offline", fmt.Sprintf(`window.__connSets >= %v`, sets+2))
	// The server comes back before the network: the other way round, the
	// 'online' event's try meets the server still down and the page says
	// "reconnecting", rightly (a CI run of 7 Dec 2026 failed so). A try
	// that gets through while the browser still says offline says "live"
	// once, as the wanted list has it.
	px.down.Store(false)
	b.offline(false)
	b.until("live after the network came back", `navigator.onLine && document.querySelector('#conn').dataset.state === 'live'`)

	got := b.eval(`window.__connSaid`)
	want := []string{"reconnecting", "live", "offline", "live"}
	if !eq(got, want) {
		t.Fatalf("said %q, want %q: each change once", got, want)
	}
	b.noProblems()
}
