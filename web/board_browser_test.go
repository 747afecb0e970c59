package web_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/web"
)

// boardIs is a script that reports whether the page's scoreboard is the
// panel html as a fresh page would show it (the reader's open or closed
// disclosure, its button's aria-expanded and its body's hidden).
func boardIs(html string) string {
	return `(() => {
		const t = document.createElement('template');
		t.innerHTML = ` + strconv.Quote(html) + `;
		const want = t.content.firstElementChild, got = document.getElementById('scoreboard');
		if (!want || !got) return false;
		const toggle = want.querySelector('.board-toggle'), body = want.querySelector('.board-body');
		if (toggle) toggle.setAttribute('aria-expanded', got.querySelector('.board-toggle').getAttribute('aria-expanded'));
		if (body) body.hidden = got.querySelector('.board-body').hidden;
		return got.isEqualNode(want);
	})()`
}

// The page applies board frames, panels whose unchanged rows are stubs, and
// shows what the store holds after every change, the rows kept where the
// patch says. A page that lacks a row a patch keeps (here: removed by hand)
// cannot apply it: it takes a new socket, whose whole panel heals it,
// without a reload.
func TestBrowserBoardPatches(t *testing.T) {
	e := MustOpenEnv(t, func(c *web.Config) { c.StateEvery = time.Millisecond })
	g := e.gen("g1")
	for _, p := range []string{"ada", "brian", "chloé", `"q&a"`} {
		e.upsert(g.ev(t, event.KindPlayerJoined, "player", p, "avatar", "🦊"))
	}
	b := mustOpenBrowser(t)
	b.do(chromedp.Navigate(e.url("/games/g1")))
	b.until("live", `document.querySelector('#conn').dataset.state === 'live'`)
	b.do(chromedp.Evaluate[chromedp.Void](`window.__mark = 1`))

	steps := []struct {
		kind string
		kv   []string
	}{
		{event.KindGuess, []string{"player", "brian", "guess", "🍒🥝🍋🫐", "exact", "3", "near", "0"}},
		{event.KindGuess, []string{"player", `"q&a"`, "guess", "🍎🍌🍇🍓", "exact", "1", "near", "2"}},
		{event.KindRoundWon, []string{"player", "chloé", "round", "1", "points", "10"}},
		{event.KindGuess, []string{"player", "ada", "guess", "🍎🍌🍇🍓", "exact", "0", "near", "1"}},
		{event.KindRoundWon, []string{"player", "ada", "round", "2", "points", "30"}},
		{event.KindPlayerLeft, []string{"player", "brian"}},
	}
	before := e.srv.Stats().BoardsEncoded
	for i, s := range steps {
		e.upsert(g.ev(t, s.kind, s.kv...))
		b.until("the panel after step "+strconv.Itoa(i)+" ("+s.kind+")", boardIs(e.boardHTML("g1")))
	}
	if n := e.srv.Stats().BoardsEncoded - before; n == 0 {
		t.Fatalf("no board frame encoded for %d changes of one row or two", len(steps))
	}

	// The page loses a row, its last: the next patch keeps it, and cannot
	// be applied. The rows its stubs keep above that one stay in the
	// panel shown meanwhile: until 7 Dec 2026 they were moved into the
	// patch before the missing row was found, and that was thrown away,
	// leaving the scoreboard without them until the new socket's panel.
	b.do(chromedp.Evaluate[chromedp.Void](`(() => {
		const rows = Array.from(document.querySelectorAll('#scoreboard li[data-player]')).filter(r => r.dataset.player !== 'chloé');
		rows[rows.length - 1].remove();
		window.__left = 0;
		new MutationObserver(ms => ms.forEach(m => m.removedNodes.forEach(n => {
			if (n.nodeType === 1 && n.matches('li[data-player]')) window.__left++;
		}))).observe(document.getElementById('scoreboard'), {childList: true, subtree: true});
	})()`))
	rowsBefore := b.num(`document.querySelectorAll('#scoreboard li[data-player]').length`)
	e.upsert(g.ev(t, event.KindGuess, "player", "chloé", "guess", "🍒🥝🍋🫐", "exact", "4", "near", "0"))
	b.until("a new socket", `document.getElementById('game').dataset.closeCode !== undefined`)
	if n := b.num(`window.__left`); n != 0 {
		t.Errorf("a patch that could not be applied took %v of the %v rows out of the panel shown", n, rowsBefore)
	}
	b.until("the whole panel again", boardIs(e.boardHTML("g1")))
	b.until("live again", `document.querySelector('#conn').dataset.state === 'live'`)
	if n := b.num(`window.__mark || 0`); n != 1 {
		t.Fatalf("the page reloaded")
	}
	b.noProblems()
}

// A keyboard player on the scoreboard's button (its one control, which
// opens and closes the panel) keeps their place while the panel is
// updated: a state or board frame replaces the panel, and the focus moves
// to the new button, not to the page's start.
func TestBrowserBoardKeepsFocus(t *testing.T) {
	e := MustOpenEnv(t, func(c *web.Config) { c.StateEvery = time.Millisecond })
	g := e.gen("g1")
	for _, p := range []string{"ada", "brian"} {
		e.upsert(g.ev(t, event.KindPlayerJoined, "player", p, "avatar", "🦊"))
	}
	b := mustOpenBrowser(t)
	b.do(chromedp.Navigate(e.url("/games/g1")))
	b.until("live", `document.querySelector('#conn').dataset.state === 'live'`)
	b.do(chromedp.Focus(chromedp.CSS("#scoreboard .board-toggle")))
	const onSummary = `document.activeElement === document.querySelector('#scoreboard .board-toggle')`
	b.until("focus on the button", onSummary)

	for i, kv := range [][]string{
		{"player", "brian", "guess", "🍒🥝🍋🫐", "exact", "3", "near", "0"},
		{"player", "ada", "guess", "🍎🍌🍇🍓", "exact", "1", "near", "2"},
	} {
		b.do(chromedp.Evaluate[chromedp.Void](`document.getElementById('scoreboard').dataset.old = '1'`))
		e.upsert(g.ev(t, event.KindGuess, kv...))
		b.until("the panel after guess "+string(rune('1'+i)), boardIs(e.boardHTML("g1")))
		if v := b.eval(`[String(` + onSummary + `), document.activeElement.tagName]`); v[0] != "true" {
			t.Fatalf("after guess %d the focus is on %s, not the scoreboard's button", i+1, v[1])
		}
	}
	// And the key still works there.
	open := b.eval(`[document.querySelector('#scoreboard .board-toggle').getAttribute('aria-expanded')]`)[0]
	b.do(chromedp.KeyEvent(kb.Enter))
	b.until("the panel toggled", `document.querySelector('#scoreboard .board-toggle').getAttribute('aria-expanded') !== '`+open+`'`)
	b.noProblems()
}
