package bench

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/internal/gamesim"
)

// SeedGames writes each game's first event (game_started) and registers the
// games, so that renderers discover them and the store knows them before
// websocket clients ask for them.
func SeedGames(ctx context.Context, rdb redis.UniversalClient, m *event.Minter, prefix string, n int) ([]string, error) {
	games := make([]string, n)
	for i := range n {
		games[i] = gamesim.GameName(prefix, i+1)
		first := gamesim.Play(games[i], gamesim.GameSeed(1, i+1), 1)
		if _, err := gamesim.Append(ctx, rdb, m, games[i], first...); err != nil {
			return nil, err
		}
	}
	return games, nil
}

// Keys returns the games' stream keys.
func Keys(games []string) []string {
	out := make([]string, len(games))
	for i, g := range games {
		out[i] = event.StreamKey(g)
	}
	return out
}

// Writer appends plausible game events (gamesim's generator: joins,
// rounds, guesses, wins, chat, …) to a set of games and remembers when it
// sent each one, by EVT id, so that a client can tell a line's latency
// from its frame's id.
type Writer struct {
	rdb   redis.UniversalClient
	m     *event.Minter
	games []string
	gens  []*gamesim.Game
	turn  int
	pub   *publisher // set by NewPublisher: PUBLISH rendered frames instead of XADD

	mu   sync.Mutex
	sent map[string]sentRec // by EVT id
}

type sentRec struct {
	at   int64 // unix ns just before its XADD was sent
	game int   // index in games
}

// NewWriter returns a Writer of games, which SeedGames seeded with the
// same prefix: each game goes on from its first event.
func NewWriter(rdb redis.UniversalClient, m *event.Minter, games []string) *Writer {
	w := &Writer{rdb: rdb, m: m, games: games, sent: map[string]sentRec{}}
	for i, g := range games {
		gen := gamesim.NewGame(g, gamesim.GameSeed(1, i+1))
		gen.Next() // the game_started SeedGames wrote
		w.gens = append(w.gens, gen)
	}
	return w
}

// send writes one event to each game index of idx in one pipeline
// (gamesim's writer).
func (w *Writer) send(ctx context.Context, idx []int) error {
	now := time.Now()
	items := make([]gamesim.Item, len(idx))
	for j, i := range idx {
		items[j] = gamesim.Item{Game: w.games[i], ID: w.m.Next(now), Event: w.gens[i].Next()}
	}
	if w.pub != nil {
		return w.publish(ctx, idx, items, now)
	}
	w.mu.Lock()
	for j, it := range items {
		w.sent[it.ID] = sentRec{at: now.UnixNano(), game: idx[j]}
	}
	w.mu.Unlock()
	if err := gamesim.AppendItems(ctx, w.rdb, now, items...); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	return nil
}

// Paced writes events at rate per second, round-robin over the games, for
// d; events due together go in one pipeline. It returns how many it wrote.
func (w *Writer) Paced(ctx context.Context, rate float64, d time.Duration) (int, error) {
	start := time.Now()
	total := int(rate * d.Seconds())
	sent := 0
	for sent < total {
		due := min(int(time.Since(start).Seconds()*rate)+1, total)
		if due <= sent {
			next := start.Add(time.Duration(float64(sent) / rate * float64(time.Second)))
			select {
			case <-ctx.Done():
				return sent, ctx.Err()
			case <-time.After(time.Until(next)):
			}
			continue
		}
		idx := make([]int, 0, due-sent)
		for range due - sent {
			idx = append(idx, w.turn%len(w.games))
			w.turn++
		}
		if err := w.send(ctx, idx); err != nil {
			return sent, err
		}
		sent = due
	}
	return sent, nil
}

// Broadcast writes one event to every game in one pipeline.
func (w *Writer) Broadcast(ctx context.Context) error {
	idx := make([]int, len(w.games))
	for i := range idx {
		idx[i] = i
	}
	return w.send(ctx, idx)
}

// Sent returns the send time (unix ns) and the game index of the event
// id, if this writer sent it since the last Reset.
func (w *Writer) Sent(id string) (at int64, game int, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	r, ok := w.sent[id]
	return r.at, r.game, ok
}

// SentGames returns how many events each game was sent since the last
// Reset.
func (w *Writer) SentGames() []int { return w.perGame(w.sentSince()) }

// sentSince returns a copy of what was sent since the last Reset, by EVT
// id, for a caller that looks up many ids without taking the lock for
// each.
func (w *Writer) sentSince() map[string]sentRec {
	w.mu.Lock()
	defer w.mu.Unlock()
	return maps.Clone(w.sent)
}

// perGame counts the events of sent by game.
func (w *Writer) perGame(sent map[string]sentRec) []int {
	out := make([]int, len(w.games))
	for _, r := range sent {
		out[r.game]++
	}
	return out
}

// Reset forgets what was sent so far (the warm-up), so that only what is
// sent afterwards is measured.
func (w *Writer) Reset() {
	w.mu.Lock()
	clear(w.sent)
	w.mu.Unlock()
}

// PendingOf returns the number of entries consumer holds pending over keys
// in group (XPENDING summary per stream, pipelined).
func PendingOf(ctx context.Context, rdb redis.UniversalClient, group, consumer string, keys []string) (int64, error) {
	pipe := rdb.Pipeline()
	cmds := make([]*redis.XPendingCmd, len(keys))
	for i, k := range keys {
		cmds[i] = pipe.XPending(ctx, k, group)
	}
	_, _ = pipe.Exec(ctx) // each command's error is looked at below
	var n int64
	for _, c := range cmds {
		p, err := c.Result()
		if err != nil && strings.HasPrefix(err.Error(), "NOGROUP") {
			continue // not consumed yet: nothing pending
		}
		if err != nil {
			return 0, fmt.Errorf("bench: xpending: %w", err)
		}
		n += p.Consumers[consumer]
	}
	return n, nil
}

// Drained reports whether group has read every entry of keys and holds
// none pending.
func Drained(ctx context.Context, rdb redis.UniversalClient, group string, keys []string) (bool, error) {
	pipe := rdb.Pipeline()
	cmds := make([]*redis.XInfoGroupsCmd, len(keys))
	for i, k := range keys {
		cmds[i] = pipe.XInfoGroups(ctx, k)
	}
	_, _ = pipe.Exec(ctx)
	for _, c := range cmds {
		gs, err := c.Result()
		if err != nil {
			return false, nil // no stream or group yet
		}
		found := false
		for _, g := range gs {
			if g.Name == group {
				found = true
				if g.Pending != 0 || g.Lag != 0 {
					return false, nil
				}
			}
		}
		if !found {
			return false, nil
		}
	}
	return true, nil
}
