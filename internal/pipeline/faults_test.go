package pipeline_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/codemojex/feed/feed"
	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/internal/pipeline"
	"github.com/codemojex/feed/store"
)

// TestProducerFaults: a line's identity is (game, EVT id); a conflicting
// same-game duplicate and an id from the future are dead-lettered with
// their label, and neither changes what the first line or the game's state
// says.
func TestProducerFaults(t *testing.T) {
	ctx := context.Background()
	p, _ := MustOpenPipeline(t)
	a, b := event.StreamKey("ga"), event.StreamKey("gb")
	now := time.Now()
	at := func(m feed.Message, pos time.Time) feed.Message {
		m.Position = fmt.Sprintf("%d-0", pos.UnixMilli())
		return m
	}
	start := msg(a, "game_started", "title", "Real", "rounds", "3", "code_length", "4", "palette", "🍎🍐🍊🍋🍌🍉")
	if v := p.Handle(ctx, []feed.Message{start}); v[0] != nil {
		t.Fatalf("game_started: %v", v[0])
	}

	t.Run("two games sharing an EVT id are both stored", func(t *testing.T) {
		m := msg(b, "chat", "player", "ada", "text", "hi")
		m.ID = start.ID
		if v := p.Handle(ctx, []feed.Message{m}); v[0] != nil {
			t.Fatalf("verdict %v, want nil", v[0])
		}
		for _, g := range []string{"ga", "gb"} {
			lines, err := p.DB.Timeline(ctx, g)
			if err != nil || len(lines) != 1 || lines[0].EvtID != start.ID {
				t.Errorf("game %s: lines %v (%v), want the one line %s", g, lines, err, start.ID)
			}
		}
	})

	t.Run("a conflicting same-game duplicate is a conflict", func(t *testing.T) {
		m := msg(a, "game_started", "title", "Forged", "rounds", "3", "code_length", "4", "palette", "🍎🍐🍊🍋🍌🍉")
		m.ID = start.ID
		for _, batch := range [][]feed.Message{{m}, {start, m}} {
			v := p.Handle(ctx, batch)
			last := v[len(v)-1]
			if !errors.Is(last, feed.ErrPoison) || !errors.Is(last, store.ErrConflict) {
				t.Fatalf("verdict %v, want a conflict (poison)", last)
			}
			if len(v) == 2 && v[0] != nil {
				t.Fatalf("the identical redelivery: %v, want nil", v[0])
			}
		}
		g := mustGame(t, p.DB, "ga")
		if g.Title != "Real" {
			t.Errorf("title %q after a conflict, want the first line's %q", g.Title, "Real")
		}
	})

	t.Run("forged future ids are dead-lettered whatever the order", func(t *testing.T) {
		future := event.NewMinter(9).Next(now.Add(365 * 24 * time.Hour))
		over := at(msg(a, "game_over", "winner", "mallory"), now)
		over.ID = future
		takeover := at(msg(a, "game_started", "title", "Owned", "rounds", "9", "code_length", "4", "palette", "🍎🍐🍊🍋🍌🍉"), now)
		takeover.ID = event.NewMinter(10).Next(now.Add(11 * time.Minute))
		genuine := at(msg(a, "round_started", "round", "1"), now)
		for _, order := range [][]feed.Message{{over, takeover, genuine}, {genuine, takeover, over}} {
			v := p.Handle(ctx, order)
			for i, m := range order {
				if m.ID == genuine.ID {
					if v[i] != nil {
						t.Errorf("genuine entry: %v", v[i])
					}
					continue
				}
				if !errors.Is(v[i], feed.ErrPoison) || !errors.Is(v[i], pipeline.ErrFutureID) {
					t.Errorf("%s: verdict %v, want poison for a future id", m.Kind, v[i])
				}
			}
		}
		g := mustGame(t, p.DB, "ga")
		if g.Title != "Real" || g.Status != "playing" || g.Winner != "" {
			t.Errorf("game after forged entries: title %q status %q winner %q, want Real playing no winner", g.Title, g.Status, g.Winner)
		}
		// Within the bound an id is fine: a producer clock a little ahead.
		ok := at(msg(a, "chat", "player", "ada", "text", "soon"), now)
		ok.ID = event.NewMinter(11).Next(now.Add(9 * time.Minute))
		if v := p.Handle(ctx, []feed.Message{ok}); v[0] != nil {
			t.Errorf("id 9m ahead (bound 10m): %v, want nil", v[0])
		}
	})

	t.Run("a store that cannot write is Unavailable, not poison", func(t *testing.T) {
		if err := os.Remove(p.DB.Path()); err != nil {
			t.Fatal(err)
		}
		v := p.Handle(ctx, []feed.Message{msg(a, "chat", "player", "ada", "text", "lost?")})
		if !errors.Is(v[0], feed.ErrUnavailable) || errors.Is(v[0], feed.ErrPoison) {
			t.Errorf("verdict %v, want Unavailable", v[0])
		}
	})
}

func mustGame(t *testing.T, db *store.DB, name string) store.Game {
	t.Helper()
	g, err := db.Game(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return g
}
