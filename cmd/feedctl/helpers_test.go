package main

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/feed"
	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/internal/gamesim"
	"github.com/codemojex/feed/internal/testkit/wait"
)

// mustRunCtl runs feedctl against the Redis at addr, as runCtl, and fails
// the test if the command fails; it returns the command's output.
func mustRunCtl(t *testing.T, addr string, args ...string) string {
	t.Helper()
	out, errOut, err := runCtl(t, addr, args...)
	if err != nil {
		t.Fatalf("%s: %v\n%s%s", strings.Join(args, " "), err, out, errOut)
	}
	return out
}

// register scores game in the registry at at, as its last event.
func register(tb testing.TB, rdb redis.UniversalClient, game string, at time.Time) {
	tb.Helper()
	if err := rdb.ZAdd(context.Background(), event.RegistryKey, redis.Z{Score: float64(at.UnixMilli()), Member: game}).Err(); err != nil {
		tb.Fatal(err)
	}
}

// twoDaysAgo is when the pruned games of these tests had their last event,
// past the -older-than 24h they prune with.
func twoDaysAgo() time.Time { return time.Now().Add(-48 * time.Hour) }

// addGameOver appends a game_over entry (ada wins) to game's stream.
func addGameOver(tb testing.TB, rdb redis.UniversalClient, game string) {
	tb.Helper()
	at := time.Now().UTC().Format(time.RFC3339)
	vals := []any{"id", event.NewMinter(1).Next(time.Now()), "kind", event.KindGameOver, "at", at, "winner", "ada"}
	if err := rdb.XAdd(context.Background(), &redis.XAddArgs{Stream: event.StreamKey(game), Values: vals}).Err(); err != nil {
		tb.Fatal(err)
	}
}

// handledWithDeadLetter gives game a malformed entry (no id) and then its
// game_over, and has the group handle them: the first dead-lettered, the
// other acked. The game's three keys (gameKeys) then exist.
func handledWithDeadLetter(tb testing.TB, rdb redis.UniversalClient, game string) {
	tb.Helper()
	key := event.StreamKey(game)
	if err := rdb.XAdd(context.Background(), &redis.XAddArgs{Stream: key, Values: []any{"kind", "chat", "player", "ada", "text", "hi"}}).Err(); err != nil {
		tb.Fatal(err)
	}
	addGameOver(tb, rdb, game)
	c := openStreamConsumer(tb, rdb, key)
	wait.For(tb, 10*time.Second, "the entry dead-lettered, the other acked", func() bool {
		st := c.Stats()
		return st.Acked == 1 && st.Dead == 1
	})
	c.Close()
}

// playToGameOver plays game until well past its first game_over and
// returns the events played and the game_over's index among them.
func playToGameOver(tb testing.TB, game string) ([]gamesim.Event, int) {
	tb.Helper()
	evs := gamesim.Play(game, 1, 400)
	for i, e := range evs {
		if e.Kind == event.KindGameOver {
			return evs, i
		}
	}
	tb.Fatalf("no game_over in %d events", len(evs))
	return nil, -1
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// openStreamConsumer opens consumer r1 of group "feed" on the stream key
// alone, acking every entry it can decode; it is closed at the test's end
// if the test does not close it first.
func openStreamConsumer(tb testing.TB, rdb redis.UniversalClient, key string) *feed.Consumer {
	tb.Helper()
	c, err := feed.Open(context.Background(), feed.Config{
		Client: rdb, Group: "feed", Consumer: "r1",
		Streams: func(context.Context) ([]string, error) { return []string{key}, nil },
		Handler: func(context.Context, feed.Message) error { return nil },
		Logger:  discardLogger(),
	})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	return c
}

// openQuietConsumer opens consumer name of group "feed" on the registry,
// with h: it wakes every 50 ms and takes a game for quiet 300 ms after
// its last entry, but polls and sweeps only hourly, so that a quiet game
// is read again only if its registry score moves. It is closed at the
// test's end if the test does not close it first.
func openQuietConsumer(tb testing.TB, rdb redis.UniversalClient, name string, h feed.Handler) *feed.Consumer {
	tb.Helper()
	c, err := feed.Open(context.Background(), feed.Config{
		Client: rdb, Group: "feed", Consumer: name, Registry: event.RegistryKey,
		WakeEvery: 50 * time.Millisecond, ActiveWindow: 300 * time.Millisecond,
		PollEvery: time.Hour, SweepEvery: time.Hour,
		Handler: h,
		Logger:  discardLogger(),
	})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	return c
}

// handledCount counts how many times each entry was handled.
type handledCount struct {
	mu sync.Mutex
	n  map[string]int
}

// handle is a feed.Handler counting the entry.
func (h *handledCount) handle(_ context.Context, m feed.Message) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.n == nil {
		h.n = map[string]int{}
	}
	h.n[m.ID]++
	return nil
}

// each reports whether every entry of ids was handled n times.
func (h *handledCount) each(ids []string, n int) func() bool {
	return func() bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		for _, id := range ids {
			if h.n[id] != n {
				return false
			}
		}
		return true
	}
}

// oneDead returns game's one dead letter; it fails the test if there is
// not exactly one.
func oneDead(tb testing.TB, rdb redis.UniversalClient, game string) feed.DeadLetter {
	tb.Helper()
	dead, err := feed.ListDead(context.Background(), rdb, event.DeadKey(game), 0)
	if err != nil || len(dead) != 1 {
		tb.Fatalf("ListDead = %v, %v", dead, err)
	}
	return dead[0]
}
