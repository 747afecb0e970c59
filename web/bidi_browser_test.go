package web_test

import (
	"strconv"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/store"
)

// leftOf is a script that defines leftOf(sel, a, b): whether the first
// character of text a, under the element sel, is drawn left of the first
// character of text b (each found in one text node).
const leftOf = `window.leftOf = function (sel, a, b) {
  function x(needle) {
    var root = document.querySelector(sel);
    var w = document.createTreeWalker(root, NodeFilter.SHOW_TEXT), n;
    while ((n = w.nextNode())) {
      var i = n.data.indexOf(needle);
      if (i < 0) continue;
      var r = document.createRange();
      r.setStart(n, i);
      r.setEnd(n, i + needle.length);
      return r.getBoundingClientRect().left;
    }
    return NaN;
  }
  return x(a) < x(b);
};`

// TestBrowserBidiStaysInIsolation: a right-to-left override in a player's
// name or guess flips that text only, never the words, pegs or numbers
// after it, on a phone where the scoreboard shows its one-line summary: not
// when a PDI in the name would close the <bdi> around it (the lines), nor
// where the name or guess sat in plain text (the summary, the last guess).
func TestBrowserBidiStaysInIsolation(t *testing.T) {
	e := MustOpenEnv(t, nil)
	g := e.gen("g1")
	const rlo, pdi = "\u202e", "\u2069"
	e.upsert(
		g.ev(t, event.KindGameStarted, "title", "Bidi", "rounds", "3", "code_length", "2", "palette", "🍎🍌🍇"),
		g.ev(t, event.KindPlayerJoined, "player", rlo+"ann", "avatar", "🦉"),
		g.ev(t, event.KindRoundWon, "player", rlo+"ann", "round", "1", "code", "🍎🍌", "guesses", "3", "points", "40"),
		g.ev(t, event.KindGuess, "player", "eve"+pdi+rlo, "round", "2", "guess", "🍎"+pdi+rlo, "exact", "3", "near", "1"),
	)
	b := mustOpenBrowser(t)
	b.do(chromedp.EmulateViewport(800, 900), chromedp.Navigate(e.url("/games/g1")))
	b.until("live", `document.querySelector('#conn').dataset.state === 'live'`)
	b.eval(leftOf + `[]`)
	for _, c := range []struct{ where, sel, a, b string }{
		{"the guess line", ".line-guess .what", "guessed", "round"},
		{"the guess line's pegs", ".line-guess .what", "3 exact", "1 near"},
		{"the summary", ".board-sum", "leads", "players"},
		{"the last guess's pegs", "#scoreboard .last .pegs", "🎯", "🔄"},
	} {
		if got := b.eval(`[String(leftOf(` + strconv.Quote(c.sel) + `, ` + strconv.Quote(c.a) + `, ` + strconv.Quote(c.b) + `))]`); got[0] != "true" {
			t.Errorf("%s: %q is not drawn left of %q: the override flipped it", c.where, c.a, c.b)
		}
	}
	b.noProblems()
}

// TestBrowserBidiUnclosedIsolateInSummary: the summary wraps the leader's
// name in FSI…PDI as plain text, so an isolate the name opens and never
// closes (an RLI at its end) took that PDI for its own: the FSI stayed
// open and a right-to-left override before the RLI flipped the rest of
// the summary.
func TestBrowserBidiUnclosedIsolateInSummary(t *testing.T) {
	e := MustOpenEnv(t, nil)
	g := e.gen("g1")
	const rlo, rli = "\u202e", "\u2067"
	e.upsert(
		g.ev(t, event.KindGameStarted, "title", "Bidi", "rounds", "3", "code_length", "2", "palette", "🍎🍌🍇"),
		g.ev(t, event.KindPlayerJoined, "player", rlo+"ann"+rli, "avatar", "🦉"),
		g.ev(t, event.KindPlayerJoined, "player", "bob", "avatar", "🐧"),
		g.ev(t, event.KindRoundWon, "player", rlo+"ann"+rli, "round", "1", "code", "🍎🍌", "guesses", "3", "points", "40"),
	)
	b := mustOpenBrowser(t)
	b.do(chromedp.EmulateViewport(800, 900), chromedp.Navigate(e.url("/games/g1")))
	b.until("live", `document.querySelector('#conn').dataset.state === 'live'`)
	b.eval(leftOf + `[]`)
	if got := b.eval(`[String(leftOf(".board-sum", "leads", "players"))]`); got[0] != "true" {
		t.Errorf("the summary: %q is not drawn left of %q: the override flipped it", "leads", "players")
	}
	b.noProblems()
}

// TestBrowserBidiParagraphSeparator: a paragraph separator (U+2029 in a
// name or a guess, U+001C or NEL in a title: text the validator takes)
// ends every isolate before it, the <bdi>'s own too, so a right-to-left
// override after it flipped the rest of the line ("guessed", the pegs,
// the round, the points) and of the scoreboard's summary.
func TestBrowserBidiParagraphSeparator(t *testing.T) {
	e := MustOpenEnv(t, nil)
	g := e.gen("g1")
	const rlo, ps, fs, nel = "\u202e", "\u2029", "\u001c", "\u0085"
	evs := []store.Event{
		g.ev(t, event.KindGameStarted, "title", "Bidi"+fs+rlo+"x"+nel+rlo, "rounds", "3", "code_length", "2", "palette", "🍎🍌🍇"),
		g.ev(t, event.KindGuess, "player", "eve"+ps+rlo, "round", "2", "guess", "🍎"+ps+rlo, "exact", "3", "near", "1"),
		g.ev(t, event.KindRoundWon, "player", "eve"+ps+rlo, "round", "1", "code", "🍎🍌", "guesses", "3", "points", "40"),
	}
	for _, ev := range evs {
		if err := event.Validate(ev.Kind, ev.Payload); err != nil {
			t.Fatalf("%s is not valid: %v", ev.Kind, err)
		}
	}
	e.upsert(evs...)
	b := mustOpenBrowser(t)
	b.do(chromedp.EmulateViewport(800, 900), chromedp.Navigate(e.url("/games/g1")))
	b.until("live", `document.querySelector('#conn').dataset.state === 'live'`)
	b.eval(leftOf + `[]`)
	for _, c := range []struct{ where, sel, a, b string }{
		{"the title's line", ".line-game_started .what", "started", "crack"},
		{"the guess line", ".line-guess .what", "guessed", "round"},
		{"the guess line's pegs", ".line-guess .what", "3 exact", "1 near"},
		{"the won line", ".line-round_won .what", "guesses", "points"},
		{"the summary", ".board-sum", "leads", "player"},
	} {
		if got := b.eval(`[String(leftOf(` + strconv.Quote(c.sel) + `, ` + strconv.Quote(c.a) + `, ` + strconv.Quote(c.b) + `))]`); got[0] != "true" {
			t.Errorf("%s: %q is not drawn left of %q: the override flipped it", c.where, c.a, c.b)
		}
	}
	b.noProblems()
}
