package main

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/feed"
	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/internal/testkit/redistest"
	"github.com/codemojex/feed/internal/testkit/wait"
)

// TestPruneStreamsLeavesNoKeys: prune -streams deletes every key of the
// game, the dead positions set of its dead letters included. That set is
// per game and never expires: left behind, each pruned game that ever had
// a dead letter kept up to 100,000 members in Redis for good, so memory
// grew with every game ever played.
func TestPruneStreamsLeavesNoKeys(t *testing.T) {
	s := redistest.MustStart(t)
	rdb := s.Client(t)
	ctx := context.Background()
	const game = "old-1"
	key := event.StreamKey(game)
	m := event.NewMinter(1)
	at := time.Now().UTC().Format(time.RFC3339)
	// One malformed entry (no id: dead-lettered), then the game's end.
	for _, vals := range [][]any{
		{"kind", "chat", "player", "ada", "text", "hi"},
		{"id", m.Next(time.Now()), "kind", event.KindGameOver, "at", at, "winner", "ada"},
	} {
		if err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: key, Values: vals}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	c, err := feed.Open(ctx, feed.Config{
		Client: rdb, Group: "feed", Consumer: "r1",
		Streams: func(context.Context) ([]string, error) { return []string{key}, nil },
		Handler: func(context.Context, feed.Message) error { return nil },
		Logger:  slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	wait.For(t, 10*time.Second, "the entry dead-lettered, the other acked", func() bool {
		st := c.Stats()
		return st.Acked == 1 && st.Dead == 1
	})
	c.Close()
	posKey := feed.DeadPositionsKey(event.DeadKey(game))
	if n, err := rdb.Exists(ctx, posKey).Result(); err != nil || n != 1 {
		t.Fatalf("dead positions set %s: exists %d, %v", posKey, n, err)
	}
	old := float64(time.Now().Add(-48 * time.Hour).UnixMilli())
	if err := rdb.ZAdd(ctx, event.RegistryKey, redis.Z{Score: old, Member: game}).Err(); err != nil {
		t.Fatal(err)
	}
	if out, errOut, err := runCtl(t, s.Addr, "prune", "-older-than", "24h", "-streams", "-yes"); err != nil {
		t.Fatalf("prune: %v\n%s%s", err, out, errOut)
	}
	for _, k := range []string{event.RegistryKey, key, event.DeadKey(game), posKey} {
		if n, err := rdb.Exists(ctx, k).Result(); err != nil || n != 0 {
			t.Errorf("after prune -streams, %s: exists %d, %v", k, n, err)
		}
	}
}
