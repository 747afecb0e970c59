package feed_test

import (
	"context"
	"testing"
	"time"

	"github.com/codemojex/feed/feed"
	"github.com/codemojex/feed/internal/event"
)

// TestReplayedClaimedPositionLetterSaysClaimed: a replay (the group
// rewound) re-reads a position claimed in the dead positions set by a
// writer in single-key steps that stopped (say another host's). The
// replay's look at the set (skipDead) took the claim for a letter written
// and sent the entry on as a duplicate; the script handed it to the steps,
// which took the stale claim over and wrote the letter, whose reason then
// said "dead-lettered already" (of a letter that did not exist) and which
// was counted under the reason "duplicate", a label no letter has. A
// claimed position is settled as the own pending list settles one: reason
// "dead letter under way (its position claimed)", label "claimed".
func TestReplayedClaimedPositionLetterSaysClaimed(t *testing.T) {
	ctx := context.Background()
	_, rdb := mustStart(t)
	s, dk := stream("g"), event.DeadKeyOf(stream("g"))
	var rec recorder
	cfg := baseConfig(t, rdb, "r1", s)
	cfg.Handler = rec.handler
	c := mustOpen(t, cfg)
	id := add(t, rdb, s)
	waitFor(t, 10*time.Second, "the entry handled and acked", func() bool { return rec.count(id) == 1 && pending(t, rdb, s) == 0 })
	pos := lastID(t, rdb, s)
	claimAt(t, rdb, "g", pos, 2*time.Minute)
	if err := rdb.Do(ctx, "XGROUP", "SETID", s, group, "0").Err(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the rewound entry settled", func() bool { return settledAt(rdb, s, pos) && c.Stats().Dead > 0 })
	ds, err := feed.ListDead(ctx, rdb, dk, 0)
	if err != nil || len(ds) != 1 {
		t.Fatalf("letters %+v (%v): want the one the take-over wrote", ds, err)
	}
	if want := "dead letter under way (its position claimed)"; ds[0].Reason != want {
		t.Errorf("letter's reason %q, want %q", ds[0].Reason, want)
	}
	if n := feed.DeadOf(c, "duplicate"); n != 0 {
		t.Errorf("%d letters counted under reason duplicate, want 0", n)
	}
	if n := feed.DeadOf(c, "claimed"); n != 1 {
		t.Errorf("%d letters counted under reason claimed, want 1", n)
	}
}
