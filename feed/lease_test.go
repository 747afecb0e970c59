package feed_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/codemojex/feed/feed"
	"github.com/codemojex/feed/internal/event"
)

// TestLeaseLostStopsReading: when another process holds the name (this one
// could not refresh in time), the consumer reports not ready and reads
// nothing until the lease is free again.
func TestLeaseLostStopsReading(t *testing.T) {
	ctx := context.Background()
	_, rdb := mustStart(t)
	s := stream("lost")
	var rec recorder
	cfg := baseConfig(t, rdb, "r1", s)
	cfg.Handler = rec.handler
	c := mustOpen(t, cfg)
	first := add(t, rdb, s)
	waitFor(t, 5*time.Second, "first entry", func() bool { return rec.count(first) == 1 })

	key := event.LeaseKey(group, "r1")
	rdb.Set(ctx, key, "someone-else", time.Minute)
	waitFor(t, 5*time.Second, "lease lost", func() bool { return errors.Is(c.Ready(), feed.ErrLeaseLost) })
	// A turn already under way may still finish its read. Two lease
	// refreshes later (EVALSHA calls; every turn would call XREADGROUP
	// within a Block) the loop has settled into waiting.
	refreshes := func() int64 { return commandCalls(t, rdb)["evalsha"] }
	twoRefreshes := func() {
		e0 := refreshes()
		waitFor(t, 5*time.Second, "two lease refreshes", func() bool { return refreshes() >= e0+2 })
	}
	twoRefreshes()
	reads := commandCalls(t, rdb)["xreadgroup"]
	during := add(t, rdb, s)
	twoRefreshes()
	st, _ := feed.Inspect(ctx, rdb, group, []string{s}, nil)
	if n := commandCalls(t, rdb)["xreadgroup"] - reads; n != 0 || rec.count(during) != 0 || st.Streams[0].Lag != 1 {
		t.Fatalf("read while the lease was another's: %d XREADGROUP, handled %d, lag %d", n, rec.count(during), st.Streams[0].Lag)
	}
	rdb.Del(ctx, key)
	waitFor(t, 5*time.Second, "lease re-taken and entry read", func() bool { return rec.count(during) == 1 })
	if err := c.Ready(); err != nil {
		t.Errorf("Ready = %v", err)
	}
}
