package web_test

import (
	"bytes"
	"image/png"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/store"
)

// TestBrowserCombiningMarksStayInTheirBox: text the validator takes may
// pile up to its length in combining marks on one letter (a chat of "a"
// and 279 U+0301, a title of 119, a palette emoji and 127), which a
// browser stacks far above the line; the page clips each line, the game's
// heading and the scoreboard's parts, so a stack draws nothing over the
// line before it, the filter or the site's header. Each case screenshots
// the part that must stay clean with the stack shown and with it hidden:
// the same pixels both times.
func TestBrowserCombiningMarksStayInTheirBox(t *testing.T) {
	e := MustOpenEnv(t, nil)
	g := e.gen("g1")
	marks := func(n int) string { return strings.Repeat("\u0301", n) }
	started := g.ev(t, event.KindGameStarted, "title", "T"+marks(119), "rounds", "3", "code_length", "2", "palette", "🍎"+marks(127))
	flood := g.ev(t, event.KindChat, "player", "bob", "text", "a"+marks(279))
	after := g.ev(t, event.KindChat, "player", "cy", "text", "after")
	won := g.ev(t, event.KindRoundWon, "player", "ann"+marks(60), "round", "1", "code", "🍎", "guesses", "3", "points", "40")
	over := g.ev(t, event.KindGameOver, "winner", "ann"+marks(60))
	for _, ev := range []store.Event{started, flood, won, over} {
		if err := event.Validate(ev.Kind, ev.Payload); err != nil {
			t.Fatalf("%s is not valid: %v", ev.Kind, err)
		}
	}
	e.upsert(started, flood, after, won, over)
	b := mustOpenBrowser(t)
	// The lines' arrival animation would tell two screenshots apart.
	if _, err := chromedp.Call(b.ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
		Features: []*emulation.MediaFeature{{Name: "prefers-reduced-motion", Value: "reduce"}},
	}); err != nil {
		t.Fatal(err)
	}
	b.do(chromedp.EmulateViewport(1200, 900), chromedp.Navigate(e.url("/games/g1")))
	b.until("live", `document.querySelector('#conn').dataset.state === 'live'`)
	b.until("scoreboard open", `document.querySelector('#scoreboard .board-toggle').getAttribute('aria-expanded') === 'true'`)
	for _, c := range []struct{ where, stack, clean string }{
		{"a chat over the line before it", "#" + flood.EvtID + " .chat-text", "#" + after.EvtID},
		{"the title over the site's header", "#game h1", "header.top"},
		{"the title's line over the chat after it", "#" + started.EvtID + " .title", "#" + flood.EvtID},
		{"the palette over the scoreboard's heading", "#scoreboard .board-meta .palette", "#scoreboard .board-toggle"},
		{"the winner over the scoreboard's status", "#scoreboard .winner strong", "#scoreboard .board-meta"},
		{"a name over the winner", "#scoreboard .player .name", "#scoreboard .winner"},
	} {
		shown := b.shot(c.clean)
		b.eval(`document.querySelector(` + strconv.Quote(c.stack) + `).style.visibility = 'hidden', []`)
		hidden := b.shot(c.clean)
		b.eval(`document.querySelector(` + strconv.Quote(c.stack) + `).style.visibility = '', []`)
		if n := differing(t, shown, hidden); n > 0 {
			t.Errorf("%s: the marks of %s draw over %s (%d pixels differ)", c.where, c.stack, c.clean, n)
		}
	}
	b.noProblems()
}

// differing returns how many pixels of two screenshots of one size differ
// by more than shotJitter in a channel. Two screenshots of an element with
// nothing changed between them differed now and then (2 runs of 12 on an
// idle host) by one step in a channel, in some 15 pixels at a line's left
// edge: Chromium's raster, not marks, which draw text far darker than its
// background.
func differing(tb testing.TB, a, b []byte) int {
	tb.Helper()
	ia, err := png.Decode(bytes.NewReader(a))
	if err != nil {
		tb.Fatal(err)
	}
	ib, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		tb.Fatal(err)
	}
	if ia.Bounds() != ib.Bounds() {
		return ia.Bounds().Dx() * ia.Bounds().Dy()
	}
	const shotJitter = 2
	n := 0
	for y := ia.Bounds().Min.Y; y < ia.Bounds().Max.Y; y++ {
		for x := ia.Bounds().Min.X; x < ia.Bounds().Max.X; x++ {
			r1, g1, b1, _ := ia.At(x, y).RGBA()
			r2, g2, b2, _ := ib.At(x, y).RGBA()
			for _, d := range []int{int(r1>>8) - int(r2>>8), int(g1>>8) - int(g2>>8), int(b1>>8) - int(b2>>8)} {
				if d > shotJitter || d < -shotJitter {
					n++
					break
				}
			}
		}
	}
	return n
}

// shot is a screenshot of the first element sel finds.
func (b *browser) shot(sel string) []byte {
	b.tb.Helper()
	png, err := chromedp.Run(b.ctx, chromedp.Screenshot(chromedp.CSS(sel)))
	if err != nil {
		b.tb.Fatalf("screenshot of %s: %v", sel, err)
	}
	return png
}

// TestBrowserUnbreakableTextKeepsPhoneWidth: emoji joined by ZWJs are one
// grapheme cluster, which no line break splits, so a title, a chat or a
// name of one (60 apples in a title, 140 in a chat, 32 in a name: text
// the validator takes) is as wide as it is long. On a 375 px phone the
// page stays as wide as the screen, the clusters clipped in their boxes;
// the game's heading made it 822 px wide, its flex item no narrower than
// the cluster, and the games index 890 px, its table as wide as the title.
func TestBrowserUnbreakableTextKeepsPhoneWidth(t *testing.T) {
	e := MustOpenEnv(t, nil)
	g := e.gen("g1")
	joined := func(n int) string { return "🍎" + strings.Repeat("\u200d🍎", n-1) }
	evs := []store.Event{
		g.ev(t, event.KindGameStarted, "title", joined(60), "rounds", "3", "code_length", "2", "palette", "🍎🍌🍇"),
		g.ev(t, event.KindChat, "player", joined(32), "text", joined(140)),
		g.ev(t, event.KindRoundWon, "player", joined(32), "round", "1", "code", "🍎", "guesses", "3", "points", "40"),
		g.ev(t, event.KindGameOver, "winner", joined(32)),
	}
	for _, ev := range evs {
		if err := event.Validate(ev.Kind, ev.Payload); err != nil {
			t.Fatalf("%s is not valid: %v", ev.Kind, err)
		}
	}
	e.upsert(evs...)
	b := mustOpenBrowser(t)
	for _, path := range []string{"/games/g1", "/games/g1/replay", "/"} {
		b.do(chromedp.EmulateViewport(375, 800), chromedp.Navigate(e.url(path)))
		b.until("page script ran", `document.querySelector('#conn') ? document.querySelector('#conn').dataset.state === 'live' : !!document.querySelector('h1')`)
		// clientWidth: the viewport less a scrollbar, which a long
		// page shows.
		if w := b.eval(`[String(document.documentElement.scrollWidth), String(document.documentElement.clientWidth)]`); w[0] != w[1] {
			t.Errorf("%s: page is %s px wide in a %s px viewport", path, w[0], w[1])
		}
	}
	b.noProblems()
}
