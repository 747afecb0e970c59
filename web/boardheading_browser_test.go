package web_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/accessibility"
	"github.com/chromedp/chromedp"

	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/web"
)

// axHeadings lists the headings in Chromium's accessibility tree as
// "LEVEL NAME", each followed by " in ROLE" for every ancestor whose role
// is a control's (a disclosure's summary, a button): a heading inside a
// control is one some screen readers flatten into the control's name.
func (b *browser) axHeadings() []string {
	b.tb.Helper()
	tree, err := chromedp.Call(b.ctx, accessibility.GetFullAXTree, accessibility.GetFullAXTreeParams{})
	if err != nil {
		b.tb.Fatal(err)
	}
	nodes := map[accessibility.NodeID]*accessibility.Node{}
	for _, n := range tree.Nodes {
		nodes[n.NodeID] = n
	}
	str := func(v *accessibility.Value) string {
		if v == nil {
			return ""
		}
		var s string
		if json.Unmarshal(v.Value, &s) != nil {
			return string(v.Value)
		}
		return s
	}
	var out []string
	for _, n := range tree.Nodes {
		if n.Ignored || str(n.Role) != "heading" {
			continue
		}
		h := str(n.Name)
		for _, p := range n.Properties {
			if p.Name == accessibility.PropertyNameLevel {
				h = string(p.Value.Value) + " " + h
			}
		}
		for a := nodes[n.ParentID]; a != nil; a = nodes[a.ParentID] {
			if r := str(a.Role); r == "DisclosureTriangle" || r == "button" {
				h += " in " + r
			}
		}
		out = append(out, h)
	}
	return out
}

// The scoreboard's heading is a heading outside the panel's <summary>:
// some screen readers take a summary for a button, whose content is its
// name alone, and drop a heading in it, so a reader going by headings
// never met the scoreboard. The heading (an h2, out of sight) names the
// panel's landmark; the summary keeps "Scoreboard" in its words and looks
// as it did (the title in the h2's font), on a wide screen (the panel
// open) and a phone's (closed), as served and after the panel is replaced.
func TestBrowserBoardHeading(t *testing.T) {
	e := MustOpenEnv(t, func(c *web.Config) { c.StateEvery = time.Millisecond })
	g := e.gen("g1")
	for _, p := range []string{"ada", "brian"} {
		e.upsert(g.ev(t, event.KindPlayerJoined, "player", p, "avatar", "🦊"))
	}
	b := mustOpenBrowser(t)
	check := func(when string) {
		t.Helper()
		var board []string
		for _, h := range b.axHeadings() {
			if strings.Contains(h, "Scoreboard") {
				board = append(board, h)
			}
		}
		if len(board) != 1 || board[0] != "2 Scoreboard" {
			t.Errorf("%s: the scoreboard's headings in the accessibility tree %q, want one level 2 \"Scoreboard\" in no control", when, board)
		}
		if n := b.num(`document.querySelectorAll('#scoreboard summary :is(h1, h2, h3, h4, h5, h6, [role=heading])').length`); n != 0 {
			t.Errorf("%s: %v headings in the scoreboard's summary", when, n)
		}
		if got := b.axRole(`document.getElementById('scoreboard')`); got != "complementary" {
			t.Errorf("%s: the scoreboard's role is %q, want complementary", when, got)
		}
		if got := b.axName(`document.getElementById('scoreboard')`); got != "Scoreboard" {
			t.Errorf("%s: the scoreboard's landmark is named %q, want Scoreboard", when, got)
		}
		if got := b.axName(`document.querySelector('#scoreboard summary')`); !strings.HasPrefix(got, "Scoreboard") {
			t.Errorf("%s: the summary is named %q, want it to start with Scoreboard", when, got)
		}
		// Its look: the title in the summary, in app.css's h2 font, and
		// no heading in sight beside it.
		look := b.eval(`(() => {
			const s = document.querySelector('#scoreboard summary');
			const w = document.createTreeWalker(s, NodeFilter.SHOW_TEXT, { acceptNode: n => n.textContent.trim() ? NodeFilter.FILTER_ACCEPT : NodeFilter.FILTER_SKIP });
			const text = w.nextNode(), el = text.parentElement, cs = getComputedStyle(el);
			const shown = Array.from(document.querySelectorAll('#scoreboard :is(h1, h2, h3, h4, h5, h6)')).filter(h => { const r = h.getBoundingClientRect(); return r.width > 1 && r.height > 1; }).length;
			return [text.textContent.trim(), cs.fontSize, cs.fontWeight, cs.marginTop + ' ' + cs.marginRight + ' ' + cs.marginBottom + ' ' + cs.marginLeft, String(shown)];
		})()`)
		if want := []string{"Scoreboard", "16.8px", "700", "0px 0px 0px 0px", "0"}; !eq(look, want) {
			t.Errorf("%s: the summary's title, its font size, weight and margins, and headings shown: %q, want %q", when, look, want)
		}
	}
	for _, v := range []struct {
		what string
		w, h int64
		open string
	}{{"wide", 1200, 900, "true"}, {"phone", 375, 812, "false"}} {
		b.do(chromedp.EmulateViewport(v.w, v.h), chromedp.Navigate(e.url("/games/g1")))
		b.until(v.what+": live", `document.querySelector('#conn').dataset.state === 'live'`)
		if got := b.eval(`[String(document.querySelector('#scoreboard details').open)]`); got[0] != v.open {
			t.Fatalf("%s: the panel open %s, want %s", v.what, got[0], v.open)
		}
		check(v.what + ", served")
		b.do(chromedp.Evaluate[chromedp.Void](`document.getElementById('scoreboard').dataset.old = '1'`))
		e.upsert(g.ev(t, event.KindGuess, "player", "ada", "guess", "🍎🍌🍇🍓", "exact", "1", "near", "2"))
		b.until(v.what+": the panel replaced", `document.getElementById('scoreboard').dataset.old === undefined`)
		check(v.what + ", replaced")
	}
	b.noProblems()
}
