package store_test

import (
	"context"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/store"
)

// model computes the scoreboards in-order, once-only delivery must produce,
// straight from the event list (which is in EVT-id order), without SQL.
func model(evs []store.Event) map[string]store.Scoreboard {
	boards := map[string]*store.Scoreboard{}
	players := map[string]map[string]*store.Player{}
	for _, e := range evs {
		b := boards[e.Game]
		if b == nil {
			b = &store.Scoreboard{Game: store.Game{Name: e.Game, Status: event.StatusWaiting}}
			boards[e.Game] = b
			players[e.Game] = map[string]*store.Player{}
		}
		f := e.Payload
		pl := func() *store.Player {
			p := players[e.Game][f["player"]]
			if p == nil {
				p = &store.Player{Name: f["player"]}
				players[e.Game][f["player"]] = p
			}
			return p
		}
		b.Game.Events++
		b.Game.LastEvtID = e.EvtID
		n := func(k string) int { v, _ := strconv.Atoi(f[k]); return v }
		switch e.Kind {
		case event.KindGameStarted:
			b.Game.Title, b.Game.Rounds, b.Game.CodeLen, b.Game.Palette = f["title"], n("rounds"), n("code_length"), f["palette"]
			b.Game.Round, b.Game.Status, b.Game.Winner = 0, event.StatusPlaying, ""
		case event.KindRoundStarted:
			b.Game.Round, b.Game.Status, b.Game.Winner = n("round"), event.StatusPlaying, ""
		case event.KindGameOver:
			b.Game.Status, b.Game.Winner = event.StatusOver, f["winner"]
		case event.KindPlayerJoined:
			p := pl()
			p.Avatar, p.Present = f["avatar"], true
		case event.KindPlayerLeft:
			pl().Present = false
		case event.KindGuess:
			p := pl()
			p.Guesses++
			p.LastGuess, p.LastExact, p.LastNear = f["guess"], n("exact"), n("near")
		case event.KindRoundWon:
			p := pl()
			p.Score += int64(n("points"))
			p.Wins++
			b.Game.Round = n("round")
		}
	}
	out := map[string]store.Scoreboard{}
	for g, b := range boards {
		b.Players = []store.Player{}
		for _, p := range players[g] {
			b.Players = append(b.Players, *p)
		}
		slices.SortFunc(b.Players, func(x, y store.Player) int {
			if x.Score != y.Score {
				if x.Score > y.Score {
					return -1
				}
				return 1
			}
			return strings.Compare(x.Name, y.Name)
		})
		out[g] = *b
	}
	return out
}

func boardsOf(t *testing.T, db *store.DB, games []string) map[string]store.Scoreboard {
	t.Helper()
	out := map[string]store.Scoreboard{}
	for _, g := range games {
		sb, err := db.Scoreboard(context.Background(), g)
		if err != nil {
			t.Fatalf("scoreboard %s: %v", g, err)
		}
		out[g] = sb
	}
	return out
}

func gamesOf(evs []store.Event) []string {
	var gs []string
	for _, e := range evs {
		if !slices.Contains(gs, e.Game) {
			gs = append(gs, e.Game)
		}
	}
	slices.Sort(gs)
	return gs
}

// TestAnyDeliveryOrderSameStore is Proof 1 of issue 4: for generated games
// of a few hundred events each, any permutation of the deliveries with
// random duplicates, in random batch sizes, leaves exactly the events rows,
// scoreboards and game states that in-order, once-only delivery leaves;
// and those match a model computed without SQL.
func TestAnyDeliveryOrderSameStore(t *testing.T) {
	for _, seed := range []uint64{1, 2, 42, 2026} {
		t.Run("seed="+strconv.FormatUint(seed, 10), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			evs := genGames(t, seed, 2)
			if len(evs) < 300 {
				t.Fatalf("generator made only %d events", len(evs))
			}
			games := gamesOf(evs)

			ref := MustOpen(t, "")
			for _, b := range inBatches(evs, 100) {
				for i, r := range mustUpsert(t, ref, b) {
					if !r.Inserted {
						t.Fatalf("in-order delivery: %s not inserted", b[i].EvtID)
					}
				}
			}
			want, err := ref.Snapshot(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(want.Lines) != len(evs) {
				t.Fatalf("reference store has %d lines, want %d", len(want.Lines), len(evs))
			}
			// The reference itself must be right, not just self-consistent.
			wantBoards := model(evs)
			for g, sb := range boardsOf(t, ref, games) {
				m := wantBoards[g]
				sb.Game.LastAt = m.Game.LastAt
				if sb.Game != m.Game {
					t.Errorf("game %s state:\n got %+v\nwant %+v", g, sb.Game, m.Game)
				}
				if !slices.Equal(sb.Players, m.Players) {
					t.Errorf("game %s scoreboard:\n got %+v\nwant %+v", g, sb.Players, m.Players)
				}
			}

			r := rand.New(rand.NewPCG(seed, 7))
			rev := slices.Clone(evs)
			slices.Reverse(rev)
			orders := map[string][][]store.Event{
				"shuffled with duplicates": deliveries(evs, r, 200),
				"newest first":             inBatches(rev, 37),
			}
			if seed == 1 {
				// One transaction per delivery: slow under -race, so once.
				orders["one by one, shuffled"] = deliveries(evs, r, 1)
			}
			for name, batches := range orders {
				db := MustOpen(t, "")
				if name == "newest first" {
					// The careful path (a SAVEPOINT per entry) must agree too.
					db = mustOpenWith(t, store.Options{EntryByEntry: true})
				}
				inserted := 0
				seqOf := map[string]int64{}
				for _, b := range batches {
					for i, res := range mustUpsert(t, db, b) {
						if res.Inserted {
							inserted++
							seqOf[b[i].EvtID] = res.Seq
						}
					}
				}
				if inserted != len(evs) {
					t.Errorf("%s: %d inserted verdicts, want %d (one per EVT id)", name, inserted, len(evs))
				}
				got, err := db.Snapshot(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if d := store.Diff(want, got, 10); len(d) > 0 {
					t.Errorf("%s: store differs from in-order delivery:\n%s", name, strings.Join(d, "\n"))
				}
				// Seq is arrival order, so it differs; it must still be a
				// gap-free cursor over every line.
				lines, err := db.Since(ctx, 0, 0)
				if err != nil {
					t.Fatal(err)
				}
				if len(lines) != len(evs) {
					t.Errorf("%s: Since(0) returned %d lines, want %d", name, len(lines), len(evs))
				}
				for i, l := range lines {
					if i > 0 && l.Seq <= lines[i-1].Seq {
						t.Fatalf("%s: seq not increasing: %d after %d", name, l.Seq, lines[i-1].Seq)
					}
					if seqOf[l.EvtID] != l.Seq {
						t.Fatalf("%s: %s stored at seq %d, its Result said %d", name, l.EvtID, l.Seq, seqOf[l.EvtID])
					}
				}
			}
		})
	}
}
