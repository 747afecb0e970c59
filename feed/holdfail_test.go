package feed_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/codemojex/feed/feed"
	"github.com/codemojex/feed/internal/event"
)

// TestFailureAfterPauseCounts: an entry whose every delivery is first
// refused as Unavailable (the pause takes that delivery back) and then
// fails for real on the retry in hand still reaches PoisonAfter and is
// dead-lettered: the failure counts, only the Unavailable verdict does not.
func TestFailureAfterPauseCounts(t *testing.T) {
	ctx := context.Background()
	_, rdb := mustStart(t)
	s := stream("flaky")
	var calls atomic.Int64
	cfg := baseConfig(t, rdb, "r1", s)
	cfg.PoisonAfter = 2
	cfg.PauseMax = 100 * time.Millisecond
	cfg.Handler = func(context.Context, feed.Message) error {
		if calls.Add(1)%2 == 1 {
			return feed.Unavailable(errors.New("database is locked"))
		}
		return errors.New("renderer bug")
	}
	c := mustOpen(t, cfg)
	id := add(t, rdb, s)
	waitFor(t, 10*time.Second, "dead-lettered after 2 failed deliveries", func() bool { return c.Stats().Dead == 1 })
	dead, err := feed.ListDead(ctx, rdb, event.DeadKey("flaky"), 0)
	if err != nil || len(dead) != 1 || dead[0].EvtID != id || dead[0].Attempts != 2 {
		t.Fatalf("dead letters %+v, %v; want %s at attempt 2", dead, err, id)
	}
	if n := calls.Load(); n != 4 {
		t.Errorf("handler called %d times, want 4 (2 deliveries, each refused once, then failed)", n)
	}
}
