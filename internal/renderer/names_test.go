package renderer_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/codemojex/feed/feed"
	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/internal/gamesim"
	"github.com/codemojex/feed/internal/testkit/proctest"
	"github.com/codemojex/feed/internal/testkit/redistest"
)

// TestPlayerNamesAsThePageReadsThem: the page matches scoreboard rows by
// their data-player as its HTML parser reads it, which turns CR LF and CR
// into LF and NUL into U+FFFD. Players whose names differ only there were
// two players to the server and one key to the page (a board frame could
// show one row twice and lose the other). Names with control characters
// are now invalid and dead-lettered; every row the page shows has a
// data-player that reads back as its player's name, and no two are the same.
func TestPlayerNamesAsThePageReadsThem(t *testing.T) {
	ctx := context.Background()
	rs := redistest.MustStart(t)
	rdb := rs.Client(t)
	m := MustRunMain(t, rs.URL(), filepath.Join(t.TempDir(), "feed.db"), "r1")
	const game = "names"
	bad := []string{"a\rb", "a\nb", "a\r\nb", "a\x00b", "tab\there"}
	good := []string{"a\uFFFDb", "ada", "<b>&amp;</b>"}
	var evs []gamesim.Event
	for i, name := range append(slices.Clone(bad), good...) {
		evs = append(evs, gamesim.Event{Kind: event.KindPlayerJoined, Fields: []gamesim.Field{
			{Name: "player", Value: name}, {Name: "avatar", Value: []string{"🦊", "🐼", "🐸"}[i%3]}}})
	}
	ids, err := gamesim.Append(ctx, rdb, event.NewMinter(11), game, evs...)
	if err != nil {
		t.Fatal(err)
	}
	var dead []feed.DeadLetter
	proctest.WaitFor(t, 20*time.Second, func() bool {
		tl, err := m.DB().Timeline(ctx, game)
		if err != nil {
			return false
		}
		dead, err = feed.ListDead(ctx, rdb, event.DeadKey(game), 0)
		return err == nil && len(tl)+len(dead) == len(ids)
	}, "every entry of %s stored or dead-lettered", game)

	deadNames := map[string]bool{}
	for _, d := range dead {
		deadNames[d.Fields["player"]] = true
		if !strings.HasPrefix(d.Reason, "poison") || !strings.Contains(d.Reason, `"player"`) {
			t.Errorf("dead letter of %q: reason %q, want poison naming the player field", d.Fields["player"], d.Reason)
		}
	}
	for _, name := range bad {
		if !deadNames[name] {
			t.Errorf("player %q was not dead-lettered", name)
		}
	}

	resp, err := http.Get("http://" + m.Addr() + "/games/" + game)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /games/%s: %d %v", game, resp.StatusCode, err)
	}
	b, err := m.DB().Scoreboard(ctx, game)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range b.Players {
		names = append(names, p.Name)
	}
	keys, err := dataPlayers(string(body))
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(names)
	slices.Sort(keys)
	if !slices.Equal(keys, names) || len(slices.Compact(slices.Clone(keys))) != len(keys) {
		t.Fatalf("the page reads the rows' data-player as %q; the server's players are %q", keys, names)
	}
	want := slices.Clone(good)
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Errorf("players %q, want %q", names, want)
	}
}

// dataPlayers parses page as a browser does and returns the data-player
// of every scoreboard row.
func dataPlayers(page string) ([]string, error) {
	doc, err := html.Parse(strings.NewReader(page))
	if err != nil {
		return nil, err
	}
	var out []string
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && n.Data == "li" {
			for _, a := range n.Attr {
				if a.Key == "data-player" {
					out = append(out, a.Val)
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	if len(out) == 0 {
		return nil, fmt.Errorf("no scoreboard row on the page")
	}
	return out, nil
}
