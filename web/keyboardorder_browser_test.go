package web_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/accessibility"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// axName returns the accessible name Chromium computes for the element js
// evaluates to.
func (b *browser) axName(js string) string {
	b.tb.Helper()
	obj, node := b.element(js)
	tree, err := chromedp.Call(b.ctx, accessibility.GetPartialAXTree, accessibility.GetPartialAXTreeParams{ObjectID: obj})
	if err != nil {
		b.tb.Fatalf("%s: %v", js, err)
	}
	for _, n := range tree.Nodes {
		if n.BackendDOMNodeID != node || n.Name == nil {
			continue
		}
		var s string
		if err := json.Unmarshal([]byte(n.Name.Value), &s); err != nil {
			b.tb.Fatalf("%s: a name %s: %v", js, n.Name.Value, err)
		}
		return s
	}
	return ""
}

// focusables lists the page's controls a keyboard should reach, in the
// document's order, as outerHTML heads.
const focusables = `Array.from(document.querySelectorAll('a[href], button:not([disabled]), select:not([disabled]), input:not([disabled]), summary, [tabindex]:not([tabindex="-1"])'))
	.filter(el => el.getClientRects().length > 0 && getComputedStyle(el).visibility !== 'hidden')
	.map(el => el.outerHTML.slice(0, 80))`

// Tab reaches every control of each page once, in the document's order
// (no tabindex reorders it), and each shows a visible focus indicator
// (an outline of 2 px or more, not none) and has an accessible name in
// Chromium's accessibility tree.
func TestBrowserKeyboardReachesEveryControl(t *testing.T) {
	e := MustOpenEnv(t, nil)
	seedLongGame(t, e)
	b := mustOpenBrowser(t)
	b.do(chromedp.EmulateViewport(1200, 900))
	a11yPages(t, e, b, func(what string) {
		want := b.eval(focusables)
		b.do(chromedp.Evaluate[chromedp.Void](`document.activeElement && document.activeElement.blur(); window.scrollTo(0, 0)`))
		var got []string
		for i := 0; i < len(want)+3; i++ {
			b.do(chromedp.KeyEvent(kb.Tab))
			v := b.eval(`(() => {
				const a = document.activeElement;
				if (!a || a === document.body) return ['', '', ''];
				const s = getComputedStyle(a);
				const ring = s.outlineStyle !== 'none' && parseFloat(s.outlineWidth) >= 2;
				return [a.outerHTML.slice(0, 80), String(ring), s.outlineStyle + ' ' + s.outlineWidth];
			})()`)
			if v[0] == "" || (len(got) > 0 && v[0] == got[0]) {
				break // past the last control, or round again
			}
			got = append(got, v[0])
			if v[1] != "true" {
				t.Errorf("%s: %s shows no focus ring (outline %s)", what, v[0], v[2])
			}
			if name := strings.TrimSpace(b.axName(`document.activeElement`)); name == "" {
				t.Errorf("%s: %s has no accessible name", what, v[0])
			}
		}
		if !eq(got, want) {
			t.Errorf("%s: Tab went through\n%s\nwant, in the document's order,\n%s", what, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	})
	b.noProblems()
}
