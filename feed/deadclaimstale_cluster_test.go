package feed_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/feed"
	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/internal/testkit/redistest"
)

// TestClusterStaleClaimOfVanishedEntry: on a cluster, DeadPositions
// settles an orphan claim (stale, its group destroyed) by one script over
// the game's stream and dead positions set, routed to their slot's
// master: removed, not dead. While the slot migrates with the set moved
// and the stream not (the script refused with TRYAGAIN), the claim is
// left as it is and counts, and the look is no error; once the move is
// over it is settled.
func TestClusterStaleClaimOfVanishedEntry(t *testing.T) {
	rc := redistest.MustStartCluster(t, redistest.ClusterOptions{Replicas: -1})
	rdb := rc.Client(t)
	ctx := context.Background()
	orphan := func(game string) (st, dk, pos string) {
		st, dk = stream(game), event.DeadKeyOf(stream(game))
		pos = addRaw(t, rdb, st, "id", minter.Next(time.Now()), "kind", "chat", "at", time.Now().UTC().Format(time.RFC3339), "bad", "yes")
		if err := rdb.XGroupCreate(ctx, st, group, "0").Err(); err != nil {
			t.Fatal(err)
		}
		if err := rdb.XReadGroup(ctx, &redis.XReadGroupArgs{Group: group, Consumer: "r1", Streams: []string{st, ">"}, Count: 1}).Err(); err != nil {
			t.Fatal(err)
		}
		claimAt(t, rdb, game, pos, 2*time.Minute)
		if err := rdb.XGroupDestroy(ctx, st, group).Err(); err != nil {
			t.Fatal(err)
		}
		return st, dk, pos
	}
	claimed := func(dk, pos string) bool {
		s, err := rdb.ZScore(ctx, feed.DeadPositionsKey(dk), pos).Result()
		return err == nil && s < 0
	}

	st, dk, pos := orphan("g0")
	dead, err := feed.DeadPositions(ctx, rdb, st, dk, []string{pos})
	if err != nil || dead[0] || claimed(dk, pos) {
		t.Fatalf("DeadPositions = %v, %v, claim kept %v: want not dead, the claim removed", dead, err, claimed(dk, pos))
	}

	st, dk, pos = orphan("g1")
	slot := rc.Slot(t, st)
	move := rc.StartSlotMove(t, slot, rc.OtherMaster(t, rc.MasterOfSlot(t, slot)))
	move.Migrate(t, feed.DeadPositionsKey(dk))
	dead, err = feed.DeadPositions(ctx, rdb, st, dk, []string{pos})
	if err != nil || !dead[0] || !claimed(dk, pos) {
		t.Fatalf("during the move: DeadPositions = %v, %v, claim kept %v: want dead, the claim kept", dead, err, claimed(dk, pos))
	}
	move.Finish(t)
	dead, err = feed.DeadPositions(ctx, rdb, st, dk, []string{pos})
	if err != nil || dead[0] || claimed(dk, pos) {
		t.Fatalf("after the move: DeadPositions = %v, %v, claim kept %v: want not dead, the claim removed", dead, err, claimed(dk, pos))
	}
}
