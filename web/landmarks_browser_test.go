package web_test

import (
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// a11yPages opens each page players and operators meet, seeded by
// seedLongGame, and waits until its script has run; each then calls check.
func a11yPages(t *testing.T, e *env, b *browser, check func(what string)) {
	t.Helper()
	for _, p := range []struct{ what, path, ready string }{
		{"game page", "/games/g1", `document.querySelector('#conn').dataset.state === 'live'`},
		{"index", "/", `document.querySelector('#index').dataset.state === 'live'`},
		{"replay", "/games/g1/replay", `document.querySelector('#replay').dataset.state === 'ready'`},
		{"status", "/status", `document.querySelector('#status').dataset.state === 'live'`},
	} {
		b.do(chromedp.Navigate(e.url(p.path)))
		b.until(p.what, p.ready)
		check(p.what)
	}
}

// Every page has a language, one h1, one main landmark, and, since the
// site's navigation comes before the content, a skip link: the first stop
// of Tab, visible when focused, which takes the focus past the navigation
// into main. Without it, a keyboard reader tabbed through the brand and
// the navigation's links on every page, before every game.
func TestBrowserPageStructure(t *testing.T) {
	e := MustOpenEnv(t, nil)
	seedLongGame(t, e)
	b := mustOpenBrowser(t)
	b.do(chromedp.EmulateViewport(1200, 900))
	a11yPages(t, e, b, func(what string) {
		v := b.eval(`[document.documentElement.lang, String(document.querySelectorAll('h1').length),
			String(document.querySelectorAll('main').length), String(document.querySelectorAll('header nav, nav').length)]`)
		if v[0] != "en" || v[1] != "1" || v[2] != "1" {
			t.Errorf("%s: lang %q, %s h1, %s main; want en, 1, 1", what, v[0], v[1], v[2])
		}
		if v[3] == "0" {
			return
		}
		// Tab from the top of the page.
		b.do(chromedp.Evaluate[chromedp.Void](`document.activeElement && document.activeElement.blur(); window.scrollTo(0, 0)`))
		b.do(chromedp.KeyEvent(kb.Tab))
		skip := b.eval(`(() => {
			const a = document.activeElement;
			if (!a || a.tagName !== 'A') return ['', '', ''];
			const target = document.getElementById((a.getAttribute('href') || '').replace(/^#/, ''));
			const r = a.getBoundingClientRect();
			const seen = r.width > 0 && r.height > 0 && r.top >= 0 && r.left >= 0 && r.bottom <= innerHeight && getComputedStyle(a).visibility !== 'hidden';
			return [a.textContent.trim(), target && target.tagName === 'MAIN' ? 'main' : String(target && target.tagName), String(seen)];
		})()`)
		if skip[1] != "main" || skip[2] != "true" {
			t.Errorf("%s: the first Tab stop is %q (target %s, in sight when focused: %s), want a skip link to main", what, skip[0], skip[1], skip[2])
			return
		}
		b.do(chromedp.KeyEvent(kb.Enter))
		b.until(what+": the focus in main", `document.querySelector('main').contains(document.activeElement)`)
		// Tab goes on from there: to the first control in main, not back
		// to the navigation.
		b.do(chromedp.KeyEvent(kb.Tab))
		if v := b.eval(`[String(document.querySelector('main').contains(document.activeElement)), document.activeElement.outerHTML.slice(0, 80)]`); v[0] != "true" {
			t.Errorf("%s: Tab after the skip link goes to %s, outside main", what, v[1])
		}
	})
	b.noProblems()
}
