package templates_test

import (
	"context"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/codemojex/feed/store"
	"github.com/codemojex/feed/templates"
)

// TestTitleIsolated: a game page's <title> keeps a title that is not all
// ASCII in an isolate of its own (FSI … PDI), its own isolates balanced,
// so that a right-to-left override or right-to-left letters in a game's
// title cannot turn " · codemojex feed" around in the browser's tab; an
// ASCII title is left as it is. The title went into the tab bare.
func TestTitleIsolated(t *testing.T) {
	const fsi, pdi, rlo = "\u2068", "\u2069", "\u202e"
	for _, c := range []struct{ title, want string }{
		{"Friday night", "Friday night"},
		{rlo + "evil", fsi + rlo + "evil" + pdi},
		{"عربي", fsi + "عربي" + pdi},
		{pdi + rlo + "x", fsi + fsi + pdi + rlo + "x" + pdi},           // a stray PDI cannot close the isolate
		{"\u2067" + rlo + "x", fsi + "\u2067" + rlo + "x" + pdi + pdi}, // nor an open one swallow it
	} {
		var sb strings.Builder
		v := templates.GameView{Name: "g1", Board: store.Scoreboard{Game: store.Game{Name: "g1", Title: c.title}}}
		if err := templates.GamePage(v).Render(context.Background(), &sb); err != nil {
			t.Fatal(err)
		}
		got, ok := titleOf(t, sb.String())
		if want := c.want + " · codemojex feed"; !ok || got != want {
			t.Errorf("title %+q: <title> %+q, want %+q", c.title, got, want)
		}
	}
}

// titleOf returns the text of page's <title>.
func titleOf(t *testing.T, page string) (string, bool) {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	var find func(*html.Node) (string, bool)
	find = func(n *html.Node) (string, bool) {
		if n.Type == html.ElementNode && n.Data == "title" && n.FirstChild != nil {
			return n.FirstChild.Data, true
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			if s, ok := find(c); ok {
				return s, true
			}
		}
		return "", false
	}
	return find(doc)
}
