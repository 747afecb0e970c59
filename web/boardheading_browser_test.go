package web_test

import (
	"encoding/json"
	"strconv"
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

// axExpanded returns Chromium's accessibility tree's expanded state of the
// element js evaluates to: "true", "false", or "" when it has none.
func (b *browser) axExpanded(js string) string {
	b.tb.Helper()
	obj, node := b.element(js)
	tree, err := chromedp.Call(b.ctx, accessibility.GetPartialAXTree, accessibility.GetPartialAXTreeParams{ObjectID: obj})
	if err != nil {
		b.tb.Fatalf("%s: %v", js, err)
	}
	for _, n := range tree.Nodes {
		if n.BackendDOMNodeID != node {
			continue
		}
		for _, p := range n.Properties {
			if p.Name == accessibility.PropertyNameExpanded {
				return string(p.Value.Value)
			}
		}
	}
	return ""
}

// The scoreboard's title is said once: the panel's disclosure is a button
// in its heading, as the WAI-ARIA Authoring Practices' accordion has it.
// A heading inside the panel's <summary> was dropped by some screen
// readers (a summary is a button, whose content is its name alone); one
// beside it, out of sight, was said, then the summary's name said
// "Scoreboard" again (until 7 Dec 2026). Now a reader going by headings
// meets one level 2 heading, "Scoreboard" and the panel's digest, which is
// the control itself: named with the words it shows (so a voice command
// of "Scoreboard" finds it), expanded or collapsed; the landmark is named
// "Scoreboard"; the title looks as it did. On a wide screen (the panel
// open) and a phone's (closed, then opened by the button), as served and
// after the panel is replaced.
func TestBrowserBoardHeading(t *testing.T) {
	e := MustOpenEnv(t, func(c *web.Config) { c.StateEvery = time.Millisecond })
	g := e.gen("g1")
	for _, p := range []string{"ada", "brian"} {
		e.upsert(g.ev(t, event.KindPlayerJoined, "player", p, "avatar", "🦊"))
	}
	b := mustOpenBrowser(t)
	const panel = `document.getElementById('scoreboard')`
	const toggle = `document.querySelector('#scoreboard h2 > button')`
	check := func(when, open string) {
		t.Helper()
		if n := strings.Count(b.axText(panel), "Scoreboard"); n != 1 {
			t.Errorf("%s: the scoreboard's text says Scoreboard %d times to a screen reader (%q), want once", when, n, b.axText(panel))
		}
		var board []string
		for _, h := range b.axHeadings() {
			if strings.Contains(h, "Scoreboard") {
				board = append(board, h)
			}
		}
		if len(board) != 1 || !strings.HasPrefix(board[0], "2 Scoreboard") || strings.Contains(board[0], " in ") {
			t.Errorf("%s: the scoreboard's headings in the accessibility tree %q, want one level 2 \"Scoreboard …\" in no control", when, board)
		}
		if n := b.num(`document.querySelectorAll('#scoreboard :is(h1, h2, h3, h4, h5, h6, [role=heading])').length`); n != 1 {
			t.Errorf("%s: %v headings in the scoreboard, want 1", when, n)
		}
		if got := b.axRole(toggle); got != "button" {
			t.Errorf("%s: the heading's control is a %q, want a button", when, got)
		}
		if got := b.axName(toggle); !strings.HasPrefix(got, "Scoreboard") {
			t.Errorf("%s: the button is named %q, want it to start with Scoreboard", when, got)
		}
		if got := b.axExpanded(toggle); got != open {
			t.Errorf("%s: the button is expanded %q, want %s", when, got, open)
		}
		if got := b.eval(`[String(!document.querySelector('#scoreboard .board-body').hidden), String(document.querySelector('#scoreboard .players').checkVisibility())]`); !eq(got, []string{open, open}) {
			t.Errorf("%s: the body shown and its rows visible %q, want %s", when, got, open)
		}
		if said := strings.Contains(b.axText(panel), " won · "); strconv.FormatBool(said) != open {
			t.Errorf("%s: the rows said to a screen reader %v, want %s", when, said, open)
		}
		if got := b.axRole(panel); got != "complementary" {
			t.Errorf("%s: the scoreboard's role is %q, want complementary", when, got)
		}
		if got := b.axName(panel); got != "Scoreboard" {
			t.Errorf("%s: the scoreboard's landmark is named %q, want Scoreboard", when, got)
		}
		// Its look: the title first in the button, in app.css's h2 font.
		look := b.eval(`(() => {
			const s = document.querySelector('#scoreboard h2 > button');
			const w = document.createTreeWalker(s, NodeFilter.SHOW_TEXT, { acceptNode: n => n.textContent.trim() ? NodeFilter.FILTER_ACCEPT : NodeFilter.FILTER_SKIP });
			const text = w.nextNode(), el = text.parentElement, cs = getComputedStyle(el);
			const h = getComputedStyle(s.parentElement);
			return [text.textContent.trim(), cs.fontSize, cs.fontWeight, h.marginTop + ' ' + h.marginBottom, getComputedStyle(s).backgroundColor];
		})()`)
		if want := []string{"Scoreboard", "16.8px", "700", "0px 0px", "rgba(0, 0, 0, 0)"}; !eq(look, want) {
			t.Errorf("%s: the title, its font size and weight, the heading's margins, the button's background: %q, want %q", when, look, want)
		}
	}
	for _, v := range []struct {
		what string
		w, h int64
		open string
	}{{"wide", 1200, 900, "true"}, {"phone", 375, 812, "false"}} {
		b.do(chromedp.EmulateViewport(v.w, v.h), chromedp.Navigate(e.url("/games/g1")))
		b.until(v.what+": live", `document.querySelector('#conn').dataset.state === 'live'`)
		check(v.what+", served", v.open)
		b.do(chromedp.Evaluate[chromedp.Void](panel + `.dataset.old = '1'`))
		e.upsert(g.ev(t, event.KindGuess, "player", "ada", "guess", "🍎🍌🍇🍓", "exact", "1", "near", "2"))
		b.until(v.what+": the panel replaced", panel+`.dataset.old === undefined`)
		check(v.what+", replaced", v.open)
		if v.open == "false" {
			b.do(chromedp.Click(chromedp.CSS(`#scoreboard h2 > button`)))
			b.until(v.what+": opened", `document.querySelector('#scoreboard h2 > button').getAttribute('aria-expanded') === 'true'`)
			check(v.what+", opened by its button", "true")
		}
	}
	b.noProblems()
}

// A collapsed scoreboard is searched by the browser as a closed <details>
// was: its body is hidden until found, and a find in page (here a link to
// a text fragment, which Chromium finds the same way) opens it, the
// button saying expanded, and keeps it open when a frame replaces it.
func TestBrowserBoardFoundInPage(t *testing.T) {
	e := MustOpenEnv(t, nil)
	g := e.gen("g1")
	for _, p := range []string{"ada", "brian"} {
		e.upsert(g.ev(t, event.KindPlayerJoined, "player", p, "avatar", "🦊"))
	}
	b := mustOpenBrowser(t)
	b.do(chromedp.EmulateViewport(375, 812), chromedp.Navigate(e.url("/games/g1#:~:text=0%20won")))
	b.until("live", `document.querySelector('#conn').dataset.state === 'live'`)
	b.until("found", `document.querySelector('#scoreboard .board-body').getAttribute('hidden') === null`)
	b.do(chromedp.Evaluate[chromedp.Void](`document.getElementById('scoreboard').dataset.old = '1'`))
	e.upsert(g.ev(t, event.KindGuess, "player", "ada", "guess", "🍎🍌🍇🍓", "exact", "1", "near", "2"))
	b.until("the panel replaced", `document.getElementById('scoreboard').dataset.old === undefined`)
	if got := b.axExpanded(`document.querySelector('#scoreboard .board-toggle')`); got != "true" {
		t.Errorf("found in page, the button is expanded %q, want true", got)
	}
	if got := b.eval(`[String(document.querySelector('#scoreboard .players').checkVisibility())]`); got[0] != "true" {
		t.Errorf("found in page, the rows are visible %s, want true", got[0])
	}
	b.noProblems()
}
