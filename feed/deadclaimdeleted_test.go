package feed_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/feed"
	"github.com/codemojex/feed/internal/event"
)

// TestStaleClaimOfDeletedEntryCleared: a writer in single-key steps
// claimed an entry's position and stopped; the entry was then deleted
// from the stream (XDEL, or trimmed) while pending. The own pending list
// (XREADGROUP 0 gives it without fields) or a peer's XAUTOCLAIM (which
// answers it apart) drops it, and no reader meets the position again (it
// is not in the stream), so the claim stayed in the set for good: the
// set's trim never removes a claim. The consumer that drops such an entry
// now settles a stale claim of its position as DeadPositions does
// (removed: no letter was written, no group has it pending).
func TestStaleClaimOfDeletedEntryCleared(t *testing.T) {
	for _, by := range []string{"r1", "r2"} { // its own pending list, a peer's claim
		t.Run(by, func(t *testing.T) {
			_, rdb := mustStart(t)
			ctx := context.Background()
			st, dk := stream("g"), event.DeadKeyOf(stream("g"))
			pos := addRaw(t, rdb, st, "id", minter.Next(time.Now()), "kind", "chat", "at", time.Now().UTC().Format(time.RFC3339), "bad", "yes")
			if err := rdb.XGroupCreateMkStream(ctx, st, group, "0").Err(); err != nil {
				t.Fatal(err)
			}
			if err := rdb.XReadGroup(ctx, &redis.XReadGroupArgs{Group: group, Consumer: "r1", Streams: []string{st, ">"}, Count: 1}).Err(); err != nil {
				t.Fatal(err)
			}
			claimAt(t, rdb, "g", pos, 2*time.Minute)
			if err := rdb.XDel(ctx, st, pos).Err(); err != nil {
				t.Fatal(err)
			}
			var rec recorder
			cfg := baseConfig(t, rdb, by, st)
			cfg.Handler = rec.handler
			c := mustOpen(t, cfg)
			waitFor(t, 10*time.Second, "the deleted entry dropped", func() bool {
				s := c.Stats()
				return s.Trimmed+s.ClaimDeleted == 1 && pending(t, rdb, st) == 0
			})
			waitFor(t, 10*time.Second, "the stale claim cleared", func() bool {
				return rdb.ZScore(ctx, feed.DeadPositionsKey(dk), pos).Err() == redis.Nil
			})
		})
	}
}
