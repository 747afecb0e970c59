package web_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/accessibility"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/codemojex/feed/internal/event"
)

// pwned is player-supplied text that tries to be markup: a role, a label,
// an image that would be named.
const pwned = `<b role="alert" aria-label="PWNED">x</b>" role="button" aria-label="PWNED`

// axRolesNamed lists the nodes of Chromium's accessibility tree whose name
// holds s, as "role: name".
func (b *browser) axRolesNamed(s string) []string {
	b.tb.Helper()
	tree, err := chromedp.Call(b.ctx, accessibility.GetFullAXTree, accessibility.GetFullAXTreeParams{})
	if err != nil {
		b.tb.Fatal(err)
	}
	var out []string
	for _, n := range tree.Nodes {
		if n.Ignored || n.Name == nil || n.Role == nil {
			continue
		}
		var name, role string
		json.Unmarshal([]byte(n.Name.Value), &name)
		json.Unmarshal([]byte(n.Role.Value), &role)
		if strings.Contains(name, s) && role != "StaticText" && role != "InlineTextBox" {
			out = append(out, role+": "+name)
		}
	}
	return out
}

// Player-supplied text (a name, a chat, an avatar, a title, a guess that is
// no emoji) reaches the page, the scoreboard and the screen readers'
// announcements as text: it adds no element, no role and no accessible
// name; the only nodes named with it are those whose name is their text
// (a link, a heading, a cell). Emoji that carry meaning (a guess, a code,
// the palette) are images named by the emoji's names, never by the
// player's text.
func TestBrowserUntrustedTextStaysText(t *testing.T) {
	e := MustOpenEnv(t, nil)
	g := e.gen("g1")
	e.upsert(
		g.ev(t, event.KindGameStarted, "title", pwned, "rounds", "3", "code_length", "4", "palette", "🍎🍌🍇🍒"),
		g.ev(t, event.KindPlayerJoined, "player", pwned, "avatar", pwned),
		g.ev(t, event.KindRoundStarted, "round", "1"),
		g.ev(t, event.KindGuess, "player", pwned, "round", "1", "guess", "🍎<b>🍌", "exact", "1", "near", "1"),
	)
	b := mustOpenBrowser(t)
	b.openTall(e.url("/games/g1"))
	b.do(chromedp.Evaluate[chromedp.Void](announcedLines))
	b.do(chromedp.Evaluate[chromedp.Void](`(t => { if (t.getAttribute('aria-expanded') !== 'true') t.click(); })(document.querySelector('#scoreboard .board-toggle'))`))
	live := g.ev(t, event.KindChat, "player", pwned, "text", pwned)
	e.upsert(live)
	b.until("the live line announced", `window.__announced.length > 0`)

	if got := b.eval(`Array.from(document.querySelectorAll('[role=alert], [role=button], b, [aria-label*="PWNED"]')).map(el => el.outerHTML.slice(0, 80))`); len(got) > 0 {
		t.Errorf("player text made elements, roles or labels:\n%s", strings.Join(got, "\n"))
	}
	for _, n := range b.axRolesNamed("PWNED") {
		role, _, _ := strings.Cut(n, ":")
		switch role {
		case "heading", "link", "listitem", "paragraph", "generic", "RootWebArea", "log", "time", "cell", "LabelText", "DisclosureTriangle":
			// named from its text
		default:
			t.Errorf("a %s node named with player text: %q", role, n)
		}
	}
	// The guess and the palette are named by their emoji, the player's
	// "<b>" a character.
	v := b.eval(`[document.querySelector('.line-guess .emoji.guess').getAttribute('aria-label'), document.querySelector('.line-game_started .emoji.palette').getAttribute('aria-label')]`)
	if !strings.HasPrefix(v[0], "red apple, character") || !strings.HasSuffix(v[0], "banana") || v[1] != "red apple, banana, grapes, cherries" {
		t.Errorf("emoji named %q, %q", v[0], v[1])
	}
	if got := b.eval(`window.__announced`); len(got) != 1 || !strings.Contains(got[0], pwned) {
		t.Errorf("announced %q, want the chat as its text", got)
	}
	b.noProblems()
}

// Under prefers-reduced-motion: reduce a live line arrives without its
// animation; without it, it arrives with one (so the test sees the
// animation it turns off).
func TestBrowserReducedMotion(t *testing.T) {
	e := MustOpenEnv(t, nil)
	g := e.gen("g1")
	evs := g.chats(t, 3)
	e.upsert(evs[0])
	b := mustOpenBrowser(t)
	for i, reduce := range []bool{false, true} {
		value := "no-preference"
		if reduce {
			value = "reduce"
		}
		if _, err := chromedp.Call(b.ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{Features: []*emulation.MediaFeature{{Name: "prefers-reduced-motion", Value: value}}}); err != nil {
			t.Fatal(err)
		}
		b.openTall(e.url("/games/g1"))
		// The animations of every element, caught as a line is put in.
		b.do(chromedp.Evaluate[chromedp.Void](`window.__animated = [];
			new MutationObserver(() => { for (const a of document.getAnimations()) window.__animated.push(a.animationName || 'animation'); })
				.observe(document.querySelector('#timeline'), { childList: true })`))
		e.upsert(evs[i+1])
		b.until("the live line", fmt.Sprintf(`!!document.getElementById(%q)`, evs[i+1].EvtID))
		got := b.eval(`window.__animated`)
		if reduce && len(got) > 0 {
			t.Errorf("reduced motion: a live line animated: %q", got)
		}
		if !reduce && len(got) == 0 {
			t.Errorf("no preference: a live line arrived without its animation (the test would see none to turn off)")
		}
		if v := b.eval(`[matchMedia('(prefers-reduced-motion: reduce)').matches ? 'reduce' : 'no-preference']`); v[0] != value {
			t.Fatalf("the page's media %s, want %s", v[0], value)
		}
	}
	b.noProblems()
}
