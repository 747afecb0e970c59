package feed_test

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/feed"
)

// TestFailedAcksRetried: an XACK that fails (here the server holds every
// write past the client's timeout, as it may in a failover) keeps its
// entries in hand, and a later turn acks them once the server answers
// (docs/reader-law.md): each entry is handled once, and nothing is left
// pending. The claim waits for MinIdle (5 s), well past the pause: an
// entry whose ack were lost would come back by it and be handled twice.
func TestFailedAcksRetried(t *testing.T) {
	srv, admin := mustStart(t)
	// Short timeouts and no retries inside go-redis: the ack fails while
	// the pause lasts rather than being carried across it by the client.
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, ReadTimeout: 500 * time.Millisecond, WriteTimeout: 500 * time.Millisecond, MaxRetries: -1})
	t.Cleanup(func() { rdb.Close() })
	s := stream("acks")
	const n = 10
	for range n {
		add(t, admin, s)
	}
	var logs logBuffer
	cfg := baseConfig(t, rdb, "r1", s)
	cfg.Logger = slog.New(slog.NewTextHandler(io.MultiWriter(&logs, tbWriter{t}), &slog.HandlerOptions{Level: slog.LevelWarn}))
	cfg.MinIdle = 5 * time.Second
	var paused atomic.Bool
	var mu sync.Mutex
	seen := map[string]int{}
	cfg.Handler = func(ctx context.Context, m feed.Message) error {
		mu.Lock()
		seen[m.ID]++
		mu.Unlock()
		if paused.CompareAndSwap(false, true) {
			// From here until the pause ends, writes wait: the batch's
			// XACK among them.
			if err := admin.Do(ctx, "client", "pause", 2000, "write").Err(); err != nil {
				t.Errorf("client pause: %v", err)
			}
		}
		return nil
	}
	c := mustOpen(t, cfg)
	waitFor(t, 15*time.Second, "every entry acked", func() bool {
		return c.Stats().Acked == n && pending(t, admin, s) == 0
	})
	if got := logs.count("ack failed; will retry"); got == 0 {
		t.Errorf("no ack failed while the server held writes: the retry was not exercised")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != n {
		t.Errorf("%d entries handled, want %d", len(seen), n)
	}
	for id, k := range seen {
		if k != 1 {
			t.Errorf("%s handled %d times, want once", id, k)
		}
	}
}
