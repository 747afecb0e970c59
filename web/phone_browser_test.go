package web_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/internal/testkit/browsertest"
)

// seedLongGame stores a game whose every field is as long as the writer may
// make it: the worst case for a narrow screen.
func seedLongGame(tb testing.TB, e *env) {
	tb.Helper()
	g := e.gen("g1")
	long := strings.Repeat("W", event.MaxPlayerRunes)
	e.upsert(
		g.ev(tb, event.KindGameStarted, "title", strings.Repeat("Title", 24), "rounds", "5", "code_length", "12", "palette", strings.Repeat("🍎🍌🍇🍒🥝🍑🍍🥥", 8)),
		g.ev(tb, event.KindPlayerJoined, "player", long, "avatar", "🦊"),
		g.ev(tb, event.KindPlayerJoined, "player", "ada", "avatar", "🦉"),
		g.ev(tb, event.KindRoundStarted, "round", "1"),
		g.ev(tb, event.KindGuess, "player", long, "round", "1", "guess", "🍎🍌🍇🍒🥝🍑🍍🥥🍎🍌🍇🍒", "exact", "12", "near", "0"),
		g.ev(tb, event.KindChat, "player", long, "text", strings.Repeat("x", event.MaxChatRunes)),
		g.ev(tb, event.KindRoundWon, "player", long, "round", "1", "code", "🍎🍌🍇🍒🥝🍑🍍🥥🍎🍌🍇🍒", "guesses", "1000000", "points", "1000000"),
		g.ev(tb, event.KindGameOver, "winner", long),
	)
}

// touchTargets lists the visible controls smaller than 44 × 44 px.
const touchTargets = `Array.from(document.querySelectorAll('a[href], button, summary, label, select, input:not([type=radio])'))
	.filter(el => el.getClientRects().length > 0 && getComputedStyle(el).visibility !== 'hidden')
	.filter(el => { const r = el.getBoundingClientRect(); return r.width < 44 || r.height < 44; })
	.map(el => el.outerHTML.slice(0, 80) + ' ' + Math.round(el.getBoundingClientRect().width) + 'x' + Math.round(el.getBoundingClientRect().height))`

// At 375 px a game page shows the timeline first, the scoreboard as a
// one-line summary after it, nothing scrolls sideways, and every control
// is at least 44 px square. With $CODEMOJEX_SCREENSHOTS set it saves
// screenshot-phone.png there.
func TestBrowserPhone(t *testing.T) {
	e := MustOpenEnv(t, nil)
	seedLongGame(t, e)
	b := mustOpenBrowser(t)
	b.do(chromedp.EmulateViewport(375, 812, chromedp.EmulateMobile, chromedp.EmulateTouch, chromedp.EmulatePortrait))
	for _, path := range []string{"/games/g1", "/"} {
		b.do(chromedp.Navigate(e.url(path)))
		b.until("page script ran", `document.querySelector('#conn') ? document.querySelector('#conn').dataset.state === 'live' : document.querySelector('#index').dataset.state === 'live'`)
		if w := b.eval(`[String(document.documentElement.scrollWidth), String(window.innerWidth)]`); w[0] != w[1] {
			t.Errorf("%s: page is %s px wide in a %s px viewport", path, w[0], w[1])
		}
		if small := b.eval(touchTargets); len(small) > 0 {
			t.Errorf("%s: touch targets under 44 px:\n%s", path, strings.Join(small, "\n"))
		}
	}
	b.do(chromedp.Navigate(e.url("/games/g1")))
	b.until("live", `document.querySelector('#conn').dataset.state === 'live'`)
	if v := b.eval(`[String(document.querySelector('#timeline').getBoundingClientRect().top < document.querySelector('#scoreboard').getBoundingClientRect().top),
		document.querySelector('#scoreboard .board-toggle').getAttribute('aria-expanded'), document.querySelector('#scoreboard .board-toggle').textContent]`); v[0] != "true" || v[1] != "false" || !strings.Contains(v[2], "2 players") {
		t.Errorf("timeline first %s, scoreboard open %s, summary %q", v[0], v[1], v[2])
	}
	png, err := chromedp.Run(b.ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	if dir := os.Getenv("CODEMOJEX_SCREENSHOTS"); dir != "" {
		if err := os.WriteFile(filepath.Join(dir, "screenshot-phone-worst.png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b.noProblems()
}

// axe-core finds no serious or critical accessibility problem on the live
// game page (wide and narrow, all kinds of lines, live lines arrived), on
// the index, on a replay while it plays, on the status page, on the older
// lines' page (the link's target without the script) or on an error page.
func TestBrowserAccessibility(t *testing.T) {
	e := MustOpenEnv(t, nil)
	seedLongGame(t, e)
	b := mustOpenBrowser(t)
	b.allowFailing("/games/nobody/replay") // the error page's own 404
	for _, vp := range [][2]int64{{1200, 900}, {375, 812}} {
		b.do(chromedp.EmulateViewport(vp[0], vp[1]), chromedp.Navigate(e.url("/games/g1")))
		b.until("live", `document.querySelector('#conn').dataset.state === 'live'`)
		e.upsert(e.gen("g1").chats(t, 2)...)
		b.until("watching", `document.querySelector('#watching').dataset.n === '1'`)
		check(t, b, "game page", vp)
		lastID := b.eval(domIDs)[0] // the newest line: the older lines' page has the rest
		b.do(chromedp.Navigate(e.url("/")))
		b.until("index", `document.querySelector('#index').dataset.state === 'live'`)
		check(t, b, "index", vp)
		b.do(chromedp.Navigate(e.url("/games/g1/replay")))
		b.until("replay loaded", `document.querySelector('#replay').dataset.state === 'ready'`)
		b.do(chromedp.SetValue(chromedp.CSS("#speed"), "50"), chromedp.Click(chromedp.CSS("#play")))
		b.until("lines played", `document.querySelectorAll('#timeline > li').length >= 3 && document.querySelector('#announce').children.length > 0`)
		check(t, b, "replay", vp)
		b.do(chromedp.Navigate(e.url("/status")))
		b.until("status", `!!document.querySelector('#status')`)
		check(t, b, "status", vp)
		b.do(chromedp.Navigate(e.url("/games/g1?before=" + lastID)))
		b.until("older lines' page", `document.querySelectorAll('#timeline > li').length > 0`)
		check(t, b, "older lines' page", vp)
		b.do(chromedp.Navigate(e.url("/games/nobody/replay")))
		b.until("error page", `!!document.querySelector('section.error')`)
		check(t, b, "error page", vp)
	}
	b.noProblems()
}

func check(t *testing.T, b *browser, what string, vp [2]int64) {
	t.Helper()
	for _, v := range browsertest.Axe(t, b.ctx) {
		switch v.Impact {
		case "serious", "critical":
			t.Errorf("%s at %dx%d: %s", what, vp[0], vp[1], v)
		default:
			t.Logf("%s at %dx%d (not failing): %s", what, vp[0], vp[1], v)
		}
	}
}
