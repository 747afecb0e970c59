package web_test

import (
	"testing"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
)

// axe-core finds no serious or critical problem on the pages in the dark
// colour scheme either (TestBrowserAccessibility checks the light one,
// Chromium's default); its colour-contrast rule judges the colours the
// browser computed, where TestTextContrast judges app.css's.
func TestBrowserAccessibilityDark(t *testing.T) {
	e := MustOpenEnv(t, nil)
	seedLongGame(t, e)
	b := mustOpenBrowser(t)
	if _, err := chromedp.Call(b.ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}}}); err != nil {
		t.Fatal(err)
	}
	vp := [2]int64{1200, 900}
	b.do(chromedp.EmulateViewport(vp[0], vp[1]))
	a11yPages(t, e, b, func(what string) {
		if v := b.eval(`[getComputedStyle(document.body).backgroundColor]`); v[0] != "rgb(20, 19, 27)" {
			t.Fatalf("%s: the body's background is %s, not the dark scheme's", what, v[0])
		}
		check(t, b, what+" (dark)", vp)
	})
	b.noProblems()
}
