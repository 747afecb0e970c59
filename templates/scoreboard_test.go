package templates_test

import (
	"context"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/store"
	"github.com/codemojex/feed/templates"
)

// TestScoreboardClasses holds the panel's status and player classes (the
// page's CSS and script key on them) for every status and every mix of
// present, left and leader.
func TestScoreboardClasses(t *testing.T) {
	for _, c := range []struct {
		status event.Status
		want   string
	}{
		{event.StatusWaiting, "status status-waiting"},
		{event.StatusPlaying, "status status-playing"},
		{event.StatusOver, "status status-over"},
		{"<b>odd</b>", "status status-unknown"},
	} {
		b := store.Scoreboard{Game: store.Game{Name: "g", Status: c.status}}
		if got := classesOf(t, b, "status"); len(got) != 1 || got[0] != c.want {
			t.Errorf("status %q: classes %q, want [%q]", c.status, got, c.want)
		}
	}
	for _, c := range []struct {
		name    string
		players []store.Player
		want    []string
	}{
		{"leader present", []store.Player{{Name: "a", Present: true, Score: 3}, {Name: "b", Present: true}},
			[]string{"player leader", "player"}},
		{"leader left", []store.Player{{Name: "a", Score: 3}, {Name: "b"}},
			[]string{"player left leader", "player left"}},
		{"no points, no leader", []store.Player{{Name: "a", Present: true}, {Name: "b"}},
			[]string{"player", "player left"}},
	} {
		b := store.Scoreboard{Game: store.Game{Name: "g", Status: event.StatusPlaying}, Players: c.players}
		got := classesOf(t, b, "player")
		if strings.Join(got, "|") != strings.Join(c.want, "|") {
			t.Errorf("%s: classes %q, want %q", c.name, got, c.want)
		}
	}
}

// TestScoreboardMarkup holds the panel's markup well formed for every
// status and player mix: no element carries an attribute twice, or one
// named like templ's keywords (an `else if` chain among a tag's attributes
// once rendered as `else class="…" else class="…"`, which html.Parse
// hides by keeping the first class), and a score reads "40 points", not
// "40points", to a screen reader.
func TestScoreboardMarkup(t *testing.T) {
	players := []store.Player{
		{Name: "ada", Present: true, Score: 40, LastGuess: "🍎🍌", LastExact: 1},
		{Name: "bo", Score: 30},
		{Name: "cy", Present: true},
	}
	for _, st := range []event.Status{event.StatusWaiting, event.StatusPlaying, event.StatusOver, "odd"} {
		for _, ps := range [][]store.Player{nil, players, {{Name: "ada", Score: 40}}, {{Name: "cy", Present: true}}} {
			b := store.Scoreboard{Game: store.Game{Name: "g", Status: st, Rounds: 3, Round: 1, Palette: "🍎🍌"}, Players: ps}
			out := render(t, b)
			z := html.NewTokenizer(strings.NewReader(out))
			for tt := z.Next(); tt != html.ErrorToken; tt = z.Next() {
				if tt != html.StartTagToken && tt != html.SelfClosingTagToken {
					continue
				}
				tok := z.Token()
				seen := map[string]bool{}
				for _, a := range tok.Attr {
					if seen[a.Key] || a.Key == "else" || a.Key == "if" {
						t.Fatalf("status %q, %d players: <%s> has attribute %q twice or stray: %s", st, len(ps), tok.Data, a.Key, out)
					}
					seen[a.Key] = true
				}
			}
			if len(ps) > 0 && ps[0].Score == 40 && !strings.Contains(out, `40<span class="sr"> points</span>`) {
				t.Errorf("status %q: the score's spoken unit is not spaced: %s", st, out)
			}
		}
	}
}

// render renders b's panel.
func render(t *testing.T, b store.Scoreboard) string {
	t.Helper()
	var sb strings.Builder
	if err := templates.Scoreboard(b).Render(context.Background(), &sb); err != nil {
		t.Fatal(err)
	}
	return sb.String()
}

// classesOf renders b and returns the class attribute of every element
// whose first class is first, in document order.
func classesOf(t *testing.T, b store.Scoreboard, first string) []string {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(render(t, b)))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		for _, a := range n.Attr {
			if a.Key == "class" && strings.Split(a.Val, " ")[0] == first {
				got = append(got, a.Val)
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	return got
}
