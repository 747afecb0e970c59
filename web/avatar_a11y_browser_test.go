package web_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/codemojex/feed/internal/event"
)

// A player's avatar is the picture they chose for themselves: a sighted
// player learns "ada is the fox" from the join line and the scoreboard's
// row, and may meet it in the chat ("🦊 bluffs"). A screen reader is told
// it too, in words from the emoji name table (", avatar: fox" after the
// name): on the join line, served and live (and so in the line's
// announcement), and on the player's row. The emoji itself stays hidden,
// so that it is not said twice; the leave line says no avatar (it carries
// none, only a waving hand). Until 7 Dec 2026 the avatars were aria-hidden
// everywhere, taken for decoration.
func TestBrowserAvatarSaid(t *testing.T) {
	e := MustOpenEnv(t, nil)
	g := e.gen("g1")
	served := g.ev(t, event.KindPlayerJoined, "player", "ada", "avatar", "🦊")
	e.upsert(served)
	b := mustOpenBrowser(t)
	b.do(chromedp.EmulateViewport(1200, 1400), chromedp.Navigate(e.url("/games/g1")))
	b.until("live", `document.querySelector('#conn').dataset.state === 'live'`)

	line := func(id string) string { return fmt.Sprintf(`document.getElementById(%q)`, id) }
	said := func(what, js, want string) {
		t.Helper()
		// The tree's text runs lose the spaces between elements.
		got := b.axText(js)
		if !strings.Contains(strings.Join(strings.Fields(got), ""), strings.Join(strings.Fields(want), "")) {
			t.Errorf("%s: a screen reader reads %q, want %q in it", what, got, want)
		}
		if strings.ContainsAny(got, "🦊🦉👋") {
			t.Errorf("%s: a screen reader reads %q, the avatar's emoji itself too", what, got)
		}
	}
	said("the served join line", line(served.EvtID), "ada joined the game, avatar: fox")
	said("ada's row", `document.querySelector('#scoreboard li[data-player="ada"]')`, "ada, avatar: fox")

	live := g.ev(t, event.KindPlayerJoined, "player", "bob", "avatar", "🦉")
	left := g.ev(t, event.KindPlayerLeft, "player", "ada")
	e.upsert(live)
	b.until("the live join line", fmt.Sprintf(`!!document.getElementById(%q)`, live.EvtID))
	said("the live join line", line(live.EvtID), "bob joined the game, avatar: owl")
	b.until("the live join announced with the avatar", `document.getElementById('announce').textContent.replace(/\s+/g, ' ').includes('bob joined the game, avatar: owl')`)
	b.until("bob's row", `!!document.querySelector('#scoreboard li[data-player="bob"]')`)
	said("bob's row", `document.querySelector('#scoreboard li[data-player="bob"]')`, "bob, avatar: owl")

	e.upsert(left)
	b.until("the leave line", fmt.Sprintf(`!!document.getElementById(%q)`, left.EvtID))
	if got := b.axText(line(left.EvtID)); strings.Contains(got, "avatar") || !strings.Contains(got, "left the game") {
		t.Errorf("the leave line reads %q, want ada left the game and no avatar", got)
	}
	b.noProblems()
}
