package templates_test

import (
	"cmp"
	"context"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/internal/testkit/boardpatch"
	"github.com/codemojex/feed/store"
	"github.com/codemojex/feed/templates"
)

// TestScoreboardPatch walks random games, one change a step, and holds
// that a page which shows the previous panel and applies the next one's
// patch (its unchanged rows stubbed, as PatchRows picks them) shows
// exactly the next panel; that SamePanel agrees with the rendered bytes;
// and that a step which changes one row stubs the others.
func TestScoreboardPatch(t *testing.T) {
	names := []string{"ada", "anna", "ann", `q"uote`, "<b>tag</b>", "a&b", "chloé", "🦊"}
	for seed := range uint64(40) {
		r := rand.New(rand.NewPCG(seed, 1))
		prev := store.Scoreboard{Game: store.Game{Name: "g", Status: event.StatusWaiting}}
		for step := range 60 {
			next, what := mutate(r, prev, names)
			full, was := render(t, next), render(t, prev)
			if same := templates.SamePanel(prev, next); same != (full == was) {
				t.Fatalf("seed %d step %d (%s): SamePanel %v, but the panels' bytes equal: %v", seed, step, what, same, full == was)
			}
			keep := templates.PatchRows(prev, next, nil)
			patch := renderPatch(t, next, keep)
			got, err := boardpatch.Apply(was, patch)
			if err != nil {
				t.Fatalf("seed %d step %d (%s): %v", seed, step, what, err)
			}
			if got != full {
				t.Fatalf("seed %d step %d (%s): patch applied\n%s\nwant\n%s", seed, step, what, got, full)
			}
			if what == "guess" {
				if kept := count(keep); kept != len(next.Players)-1 {
					t.Fatalf("seed %d step %d: a guess kept %d of %d rows, want all but the guesser's", seed, step, kept, len(next.Players))
				}
			}
			prev = next
		}
	}
}

// mutate returns a copy of b with one change of the kinds a game's events
// make, and the change's name.
func mutate(r *rand.Rand, b store.Scoreboard, names []string) (store.Scoreboard, string) {
	b.Players = slices.Clone(b.Players)
	b.Game.Events++
	b.Game.LastAt = time.Unix(int64(b.Game.Events), 0)
	b.Game.LastEvtID = "evt_" + strings.Repeat("x", int(b.Game.Events%5))
	pick := func() *store.Player { return &b.Players[r.IntN(len(b.Players))] }
	what := "nothing"
	switch n := r.IntN(10); {
	case n == 0 || len(b.Players) == 0:
		name := names[r.IntN(len(names))]
		if slices.ContainsFunc(b.Players, func(p store.Player) bool { return p.Name == name }) {
			return b, "chat"
		}
		b.Players = append(b.Players, store.Player{Name: name, Avatar: "🐼", Present: true})
		what = "join"
	case n <= 4:
		p := pick()
		p.Guesses++
		p.LastGuess = []string{"🍎🍌🍇🍓", "🍒🥝🍋🫐"}[p.Guesses%2]
		p.LastExact, p.LastNear = r.IntN(4), r.IntN(2)
		what = "guess"
	case n <= 6:
		p := pick()
		p.Score += int64(10 * (1 + r.IntN(3)))
		p.Wins++
		b.Game.Round++
		b.Game.Rounds = 5
		b.Game.Status = event.StatusPlaying
		what = "round won"
	case n == 7:
		p := pick()
		p.Present = !p.Present
		what = "join or leave"
	case n == 8:
		b.Game.Palette = []string{"", "🍎🍌🍇", "🍒🥝🍋🫐"}[r.IntN(3)]
		what = "palette"
	default:
		return b, "chat"
	}
	slices.SortFunc(b.Players, func(x, y store.Player) int { // the store's order
		return cmp.Or(cmp.Compare(y.Score, x.Score), strings.Compare(x.Name, y.Name))
	})
	return b, what
}

func renderPatch(t *testing.T, b store.Scoreboard, keep []bool) string {
	t.Helper()
	var sb strings.Builder
	if err := templates.ScoreboardPatch(b, keep).Render(context.Background(), &sb); err != nil {
		t.Fatal(err)
	}
	return sb.String()
}

func count(keep []bool) (n int) {
	for _, k := range keep {
		if k {
			n++
		}
	}
	return n
}
