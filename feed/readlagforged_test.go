package feed_test

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestReadLagForgedPosition: an entry whose stream id a producer chose
// past 2^63 ms (XADD key <ms>-<seq>: Redis takes any 64-bit ms) is read
// with no lag, as any position ahead of the clock is. Its ms was taken as
// a negative int64, and the entry observed some 292 million years late:
// a sample past the last bucket and a histogram sum that swamped every
// mean lag taken from it.
func TestReadLagForgedPosition(t *testing.T) {
	_, rdb := mustStart(t)
	s := stream("read-lag-forged")
	var rec recorder
	cfg := baseConfig(t, rdb, "read-lag-forged", s)
	cfg.Handler = rec.handler
	mustOpen(t, cfg)
	count0, below0 := readLag(t, 60)

	err := rdb.XAdd(t.Context(), &redis.XAddArgs{Stream: s, ID: "18446744073709551614-0", Values: []any{
		"id", minter.Next(time.Now()), "kind", "chat", "player", "ana", "text", "forged"}}).Err()
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the entry handled", func() bool { return len(rec.all()) == 1 })

	count, below := readLag(t, 60)
	if count-count0 != 1 || below-below0 != 1 {
		t.Errorf("read lag: %d samples, %d of them at most 60 s; want 1 and 1", count-count0, below-below0)
	}
}
