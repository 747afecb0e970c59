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

// classesOf renders b and returns the class attribute of every element
// whose first class is first, in document order.
func classesOf(t *testing.T, b store.Scoreboard, first string) []string {
	t.Helper()
	var sb strings.Builder
	if err := templates.Scoreboard(b).Render(context.Background(), &sb); err != nil {
		t.Fatal(err)
	}
	doc, err := html.Parse(strings.NewReader(sb.String()))
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
