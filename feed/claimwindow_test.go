package feed_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/feed"
)

// TestClaimedAmongOwnPending: XAUTOCLAIM scans up to ten times COUNT
// pending entries for one reply, so the entries it claims from a dead peer
// can lie far apart, with many of this consumer's own entries (failed,
// not idle yet) between them. Each claimed entry must still be handed to
// the handler at once, with the delivery count the claim gave it (2),
// rather than be taken for one a peer took (not found in the XPENDING
// page read for the counts) and left pending: claimed again later, its
// count bumped without a handling, toward PoisonAfter.
func TestClaimedAmongOwnPending(t *testing.T) {
	ctx := context.Background()
	_, rdb := mustStart(t)
	key := stream("claim-window")
	const count, own, peer = 200, 1799, 100
	if err := rdb.XGroupCreateMkStream(ctx, key, group, "0").Err(); err != nil {
		t.Fatal(err)
	}
	read := func(consumer string, n int64) {
		t.Helper()
		if err := rdb.XReadGroup(ctx, &redis.XReadGroupArgs{Group: group, Consumer: consumer,
			Streams: []string{key, ">"}, Count: n, Block: -1}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	// A dead peer holds the first entry and the last ones; "a" holds
	// those between, and fails them.
	peerIDs := map[string]bool{add(t, rdb, key, "who", "peer"): true}
	read("dead", 1)
	for range own {
		add(t, rdb, key, "who", "own")
	}
	read("a", own)
	for range peer {
		peerIDs[add(t, rdb, key, "who", "peer")] = true
	}
	read("dead", peer)

	cfg := baseConfig(t, rdb, "a", key)
	cfg.Count = count
	cfg.MinIdle = 2 * time.Second
	cfg.PoisonAfter = 100
	// The peer's entries idle past MinIdle before a starts: a's own ones
	// are delivered again by its recovery, and not idle at the claim.
	waitFor(t, 10*time.Second, "the dead peer's entries idle", func() bool {
		p, err := rdb.XPendingExt(ctx, &redis.XPendingExtArgs{Stream: key, Group: group, Consumer: "dead",
			Start: "-", End: "+", Count: 1000, Idle: cfg.MinIdle}).Result()
		return err == nil && len(p) == peer+1
	})
	var (
		mu    sync.Mutex
		first = map[string]int64{} // EVT id → Attempts at its first handling
	)
	cfg.Handler = func(ctx context.Context, m feed.Message) error {
		if m.Payload["who"] == "own" {
			return errors.New("failing")
		}
		mu.Lock()
		if _, ok := first[m.ID]; !ok {
			first[m.ID] = m.Attempts
		}
		mu.Unlock()
		return nil
	}
	mustOpen(t, cfg)
	waitFor(t, 20*time.Second, "the dead peer's entries handled", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(first) == len(peerIDs)
	})
	mu.Lock()
	defer mu.Unlock()
	for id, n := range first {
		if n != 2 {
			t.Errorf("%s first handled with Attempts %d; want 2 (claimed once from the dead peer)", id, n)
		}
	}
}
