package feed_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/feed"
	"github.com/codemojex/feed/internal/event"
)

// TestClaimedPendingEntryNotJudgedAfresh: an entry whose dead letter got
// as far as its claim (its writer stopped, or its XADD's reply was lost)
// is pending, and comes back by the own pending list or a claim. Judged
// afresh there, a verdict that changed (a future id whose time has come)
// acked it as handled, and the claim stayed for good with no letter:
// DeadPositions called the position dead, and feedctl rebuild, a replay
// and a catch-up skipped a line the store has. A claimed position is the
// dead letter under way: the entry is settled by the steps (the stale
// claim taken over), never handed to the handler again.
func TestClaimedPendingEntryNotJudgedAfresh(t *testing.T) {
	_, rdb := mustStart(t)
	ctx := context.Background()
	pos := addRaw(t, rdb, stream("g"), "id", minter.Next(time.Now()), "kind", "chat", "at", time.Now().UTC().Format(time.RFC3339))
	if err := rdb.XGroupCreateMkStream(ctx, stream("g"), group, "0").Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.XReadGroup(ctx, &redis.XReadGroupArgs{Group: group, Consumer: "r1", Streams: []string{stream("g"), ">"}, Count: 1}).Err(); err != nil {
		t.Fatal(err)
	}
	claimAt(t, rdb, "g", pos, 2*time.Minute)
	c := poisonOpen(t, rdb, "g") // passes the entry: it has no field bad
	waitFor(t, 10*time.Second, "the entry acked", func() bool { return pending(t, rdb, stream("g")) == 0 })
	dk := event.DeadKeyOf(stream("g"))
	ds, err := feed.ListDead(ctx, rdb, dk, 0)
	if err != nil {
		t.Fatal(err)
	}
	dead, err := feed.DeadPositions(ctx, rdb, stream("g"), dk, []string{pos})
	if err != nil {
		t.Fatal(err)
	}
	letters := 0
	for _, d := range ds {
		if d.StreamID == pos {
			letters++
		}
	}
	if dead[0] != (letters == 1) || letters > 1 {
		t.Fatalf("%s: dead %v with %d letters (Dead %d): a position counted dead must have its one letter", pos, dead[0], letters, c.Stats().Dead)
	}
}
