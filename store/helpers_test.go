package store_test

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/internal/testkit/wait"
	"github.com/codemojex/feed/store"
	"github.com/codemojex/feed/templates"
)

// quiet drops the store's Info logs (a line per migration per Open).
var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// MustOpen opens a store at path (a new file under t.TempDir() when path
// is empty) and closes it when the test ends.
func MustOpen(tb testing.TB, path string) *store.DB {
	tb.Helper()
	if path == "" {
		path = filepath.Join(tb.TempDir(), "feed.db")
	}
	db, err := store.OpenWith(context.Background(), path, store.Options{Logger: quiet})
	if err != nil {
		tb.Fatalf("open %s: %v", path, err)
	}
	tb.Cleanup(func() {
		if err := db.Close(); err != nil {
			tb.Errorf("close: %v", err)
		}
	})
	return db
}

// mustOpenWith opens a new store under t.TempDir() with opts.
func mustOpenWith(tb testing.TB, opts store.Options) *store.DB {
	tb.Helper()
	if opts.Logger == nil {
		opts.Logger = quiet
	}
	db, err := store.OpenWith(context.Background(), filepath.Join(tb.TempDir(), "feed.db"), opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

// waitFor polls cond until it holds or timeout passes.
func waitFor(tb testing.TB, timeout time.Duration, cond func() bool) {
	tb.Helper()
	wait.For(tb, timeout, "the condition", cond)
}

// mustUpsert upserts evs and fails on any error, returning the verdicts.
func mustUpsert(tb testing.TB, db *store.DB, evs []store.Event) []store.Result {
	tb.Helper()
	res, err := db.Upsert(context.Background(), evs)
	if err != nil {
		tb.Fatalf("upsert: %v", err)
	}
	for i, r := range res {
		if r.Err != nil {
			tb.Fatalf("upsert %s: %v", evs[i].EvtID, r.Err)
		}
	}
	return res
}

// mkEvent builds a store.Event the way the renderer does: payload is every
// field but id, the line body comes from templates.RenderLine.
func mkEvent(tb testing.TB, id, game, kind string, at time.Time, kv ...string) store.Event {
	tb.Helper()
	f := map[string]string{event.FieldKind: kind, event.FieldAt: at.Format(time.RFC3339Nano)}
	for i := 0; i+1 < len(kv); i += 2 {
		f[kv[i]] = kv[i+1]
	}
	html, err := templates.RenderLine(kind, f, at)
	if err != nil {
		tb.Fatalf("render %s: %v", kind, err)
	}
	return store.Event{
		EvtID: id, Game: game, Kind: kind, Payload: f, HTML: html,
		StreamID: strconv.FormatInt(at.UnixMilli(), 10) + "-0", Renderer: "test", Attempts: 1, At: at,
	}
}

// genGames plays n deterministic codemojex games whose events interleave
// (one minter, so the slice is in EVT-id order): joins with avatars,
// rounds of guesses with exact/near, wins with points, chat, a player who
// leaves and comes back with another avatar, one event of a kind this
// version does not know, and the game over. Each game is a few hundred
// events.
func genGames(tb testing.TB, seed uint64, n int) []store.Event {
	tb.Helper()
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	mint := event.NewMinter(int64(seed))
	clock := time.Date(2026, 11, 29, 19, 0, 0, 0, time.UTC)
	palette := []string{"🍎", "🍌", "🍇", "🍓", "🍒", "🥝", "🍋", "🫐"}
	avatars := []string{"🦊", "🐼", "🐸", "🐙", "🦄", "🐢"}

	type game struct {
		name    string
		script  []func() store.Event
		players []string
	}
	var games []*game
	for g := range n {
		gm := &game{name: fmt.Sprintf("g%d-%d", seed, g)}
		players := []string{"ann", "bob", "\u202eevil", "<script>alert(1)</script>"}[:2+r.IntN(3)]
		gm.players = players
		rounds := 3 + r.IntN(3)
		emit := func(kind string, kv ...string) {
			gm.script = append(gm.script, func() store.Event {
				clock = clock.Add(time.Duration(200+r.IntN(800)) * time.Millisecond)
				return mkEvent(tb, mint.Next(clock), gm.name, kind, clock, kv...)
			})
		}
		code := func() string {
			var b strings.Builder
			for range 4 {
				b.WriteString(palette[r.IntN(len(palette))])
			}
			return b.String()
		}
		emit(event.KindGameStarted, "title", "Game "+gm.name, "rounds", strconv.Itoa(rounds),
			"code_length", "4", "palette", strings.Join(palette, ""))
		for _, p := range players {
			emit(event.KindPlayerJoined, "player", p, "avatar", avatars[r.IntN(len(avatars))])
		}
		for round := 1; round <= rounds; round++ {
			emit(event.KindRoundStarted, "round", strconv.Itoa(round))
			guesses := 25 + r.IntN(40)
			for i := range guesses {
				p := players[r.IntN(len(players))]
				exact := r.IntN(4)
				emit(event.KindGuess, "player", p, "round", strconv.Itoa(round), "guess", code(),
					"exact", strconv.Itoa(exact), "near", strconv.Itoa(r.IntN(5-exact)))
				switch r.IntN(12) {
				case 0:
					emit(event.KindChat, "player", p, "text", fmt.Sprintf("so close <b>%d</b> \"onmouseover=x", i))
				case 1:
					emit(event.KindPlayerLeft, "player", p)
					emit(event.KindPlayerJoined, "player", p, "avatar", avatars[r.IntN(len(avatars))])
				}
			}
			if round == 2 {
				emit("power_up", "player", players[0], "what", "double points")
			}
			emit(event.KindRoundWon, "player", players[r.IntN(len(players))], "round", strconv.Itoa(round),
				"code", code(), "guesses", strconv.Itoa(guesses), "points", strconv.Itoa(10+r.IntN(90)))
		}
		if r.IntN(2) == 0 {
			emit(event.KindPlayerLeft, "player", players[len(players)-1])
		}
		emit(event.KindGameOver, "winner", players[0])
		games = append(games, gm)
	}
	// Interleave the games' scripts at random; minting happens here, so the
	// result is in EVT-id order.
	var out []store.Event
	for {
		var live []*game
		for _, g := range games {
			if len(g.script) > 0 {
				live = append(live, g)
			}
		}
		if len(live) == 0 {
			return out
		}
		g := live[r.IntN(len(live))]
		out = append(out, g.script[0]())
		g.script = g.script[1:]
	}
}

// deliveries turns an in-order event list into an at-least-once delivery:
// every event once or more (about a third get 1–3 duplicates), shuffled,
// cut into batches of 1..maxBatch.
func deliveries(evs []store.Event, r *rand.Rand, maxBatch int) [][]store.Event {
	var all []store.Event
	for _, e := range evs {
		all = append(all, e)
		if r.IntN(3) == 0 {
			for range 1 + r.IntN(3) {
				all = append(all, e)
			}
		}
	}
	r.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	var batches [][]store.Event
	for len(all) > 0 {
		n := min(len(all), 1+r.IntN(maxBatch))
		batches = append(batches, all[:n])
		all = all[n:]
	}
	return batches
}

// inBatches cuts evs into batches of n in order.
func inBatches(evs []store.Event, n int) [][]store.Event {
	var out [][]store.Event
	for len(evs) > 0 {
		k := min(n, len(evs))
		out = append(out, evs[:k])
		evs = evs[k:]
	}
	return out
}

// mustRaw opens a plain connection pool on the store file at path, beside
// the store's own, for a test to change or lock the file behind its back.
// mustHoldWriteLock takes the store file's write lock on a connection of
// its own (BEGIN IMMEDIATE), as another process's writer would, and returns
// release, which lets it go (ROLLBACK); release may be called more than
// once, and the test's cleanup calls it.
func mustHoldWriteLock(tb testing.TB, path string) (release func()) {
	tb.Helper()
	ctx := context.Background()
	holder, err := mustRaw(tb, path).Conn(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := holder.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		holder.Close()
		tb.Fatal(err)
	}
	var once sync.Once
	release = func() {
		once.Do(func() {
			if _, err := holder.ExecContext(ctx, "ROLLBACK"); err != nil {
				tb.Error(err)
			}
			holder.Close()
		})
	}
	tb.Cleanup(release)
	return release
}

func mustRaw(tb testing.TB, path string) *sql.DB {
	tb.Helper()
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { raw.Close() })
	return raw
}
