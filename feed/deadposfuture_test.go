package feed_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/feed"
	"github.com/codemojex/feed/internal/event"
)

// TestForgedFuturePositionKeepsDeadPositions: a dead letter at a stream
// position a producer forged far ahead (XADD key <ms>-<seq> a year on)
// does not make the dead positions set forget the game's other
// dead-lettered positions. The set's 30-day horizon was measured from
// the position being added, whatever it said, so one forged entry
// emptied the set below it: a replay then wrote a second dead letter for
// every earlier one, and a catch-up or a rebuild judged them afresh.
func TestForgedFuturePositionKeepsDeadPositions(t *testing.T) {
	ctx := context.Background()
	_, rdb := mustStart(t)
	s, dk := stream("forgedpos"), event.DeadKey("forgedpos")
	var rec recorder
	cfg := baseConfig(t, rdb, "r1", s)
	cfg.Handler = rec.handler
	c := mustOpen(t, cfg)

	early := addRaw(t, rdb, s, "id", "evt_1", "kind", "chat") // malformed: dead-lettered at once
	waitFor(t, 10*time.Second, "the malformed entry dead-lettered", func() bool { return c.Stats().Dead == 1 })
	ahead := time.Now().Add(365 * 24 * time.Hour)
	forged := fmt.Sprintf("%d-0", ahead.UnixMilli())
	if err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: s, ID: forged, Values: []any{"id", "evt_2", "kind", "chat"}}).Err(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the forged entry dead-lettered", func() bool { return c.Stats().Dead == 2 })

	dead, err := feed.DeadPositions(ctx, rdb, s, dk, []string{early, forged})
	if err != nil {
		t.Fatal(err)
	}
	if !dead[0] || !dead[1] {
		t.Errorf("dead positions %s, %s: %v; want both recorded", early, forged, dead)
	}

	// A replay (feedctl replay) settles both as letters already written.
	if err := rdb.Do(ctx, "XGROUP", "SETID", s, group, "0").Err(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the rewound stream re-delivered and settled", func() bool {
		return settledAt(rdb, s, forged) && c.Stats().DeadDuplicates+c.Stats().Dead >= 4
	})
	letters, err := feed.ListDead(ctx, rdb, dk, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(letters) != 2 {
		t.Errorf("%d dead letters after a replay; want the 2 written before", len(letters))
	}
}
