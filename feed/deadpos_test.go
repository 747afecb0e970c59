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

// TestCatchUpSkipsDeadPositions: a catch-up (the store lacks every entry:
// no position) does not hand a dead-lettered position to the handler,
// and does hand the copy a requeue appended at a new position.
func TestCatchUpSkipsDeadPositions(t *testing.T) {
	ctx := context.Background()
	_, rdb := mustStart(t)
	s, dk := stream("caughtdead"), event.DeadKey("caughtdead")
	var refuse atomic.Bool
	refuse.Store(true)
	var bad string
	var first recorder
	cfg := baseConfig(t, rdb, "r1", s)
	cfg.Handler = func(ctx context.Context, m feed.Message) error {
		if m.ID == bad && refuse.Load() {
			return feed.Poison(errors.New("not yet"))
		}
		return first.handler(ctx, m)
	}
	before := add(t, rdb, s)
	bad = minter.Next(time.Now())
	addRaw(t, rdb, s, "id", bad, "kind", "chat", "at", time.Now().UTC().Format(time.RFC3339), "player", "eve", "text", "hi")
	after := add(t, rdb, s)
	c := mustOpen(t, cfg)
	waitFor(t, 10*time.Second, "two entries handled, one dead-lettered", func() bool {
		return first.count(before) == 1 && first.count(after) == 1 && c.Stats().Dead == 1 && pending(t, rdb, s) == 0
	})
	dead, err := feed.ListDead(ctx, rdb, dk, 0)
	if err != nil || len(dead) != 1 {
		t.Fatalf("dead letters %+v (%v); want one", dead, err)
	}
	refuse.Store(false)
	copyPos, err := feed.RequeueDead(ctx, rdb, s, dk, dead[0].DeadID)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the requeued copy handled and acked", func() bool {
		gs, err := rdb.XInfoGroups(ctx, s).Result()
		return first.count(bad) == 1 && err == nil && len(gs) == 1 && gs[0].LastDeliveredID == copyPos && gs[0].Pending == 0
	})
	c.Close()

	// A second consumer of the group whose store holds nothing.
	var rec recorder
	cfg2 := baseConfig(t, rdb, "r2", s)
	cfg2.Handler = rec.handler
	cfg2.Position = func(context.Context, string) (string, error) { return "", nil }
	c2 := mustOpen(t, cfg2)
	waitFor(t, 10*time.Second, "the catch-up", func() bool { return c2.Stats().CaughtUp == 4 })
	if rec.count(before) != 1 || rec.count(after) != 1 {
		t.Errorf("the stored entries handed %d and %d times by the catch-up; want once each", rec.count(before), rec.count(after))
	}
	var from []string
	for _, m := range rec.all() {
		if m.ID == bad {
			from = append(from, m.Position)
		}
	}
	if len(from) != 1 || from[0] != copyPos {
		t.Errorf("the requeued EVT id was caught up from positions %v; want the copy's %s only, not the dead-lettered original", from, copyPos)
	}
}
