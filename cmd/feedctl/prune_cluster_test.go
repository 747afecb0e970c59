package main

import (
	"context"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/feed"
	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/internal/testkit/redistest"
)

// TestPruneStreamsDuringSlotMigration: prune -streams deleted a game's
// three keys (stream, dead letters, dead positions) with one DEL. While the
// game's slot migrates (redis-cli --cluster reshard or rebalance), Redis
// refuses a multi-key command whose keys are not all on the node it asks,
// TRYAGAIN: a game without dead letters (two of its keys do not exist)
// from the moment the migration starts, and any game once some of its
// keys moved. The whole run stopped at that game ("delete streams:
// TRYAGAIN"), the games after it not pruned, and with -db its lines
// already gone from the store. Each key is now deleted alone, which the
// cluster client sends on to the key's node (ASK). It is one key in a
// script too since 6 Dec 2026, which deletes it only while nothing was
// added to it since the plan: an entry added then keeps the stream, on the
// node it moved to as on the other (the last case).
func TestPruneStreamsDuringSlotMigration(t *testing.T) {
	rc := redistest.MustStartCluster(t, redistest.ClusterOptions{Replicas: -1})
	rdb := rc.Client(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		game    string
		dead    bool // the game has a dead letter (all three keys exist)
		migrate bool // its stream moved before the prune, the others not
		late    bool // an entry is added to its stream after the plan
	}{
		{name: "no dead letters, nothing moved yet", game: "old-1"},
		{name: "dead letters, the stream moved", game: "old-2", dead: true, migrate: true},
		{name: "an entry since the plan, the stream moved", game: "old-3", dead: true, migrate: true, late: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key, deadKey := event.StreamKey(tc.game), event.DeadKey(tc.game)
			posKey := feed.DeadPositionsKey(deadKey)
			addGameOver(t, rdb, tc.game)
			if tc.dead {
				if err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: deadKey, Values: []any{"kind", "chat", "dead_reason", "malformed"}}).Err(); err != nil {
					t.Fatal(err)
				}
				if err := rdb.ZAdd(ctx, posKey, redis.Z{Score: 1, Member: "1-0"}).Err(); err != nil {
					t.Fatal(err)
				}
			}
			register(t, rdb, tc.game, twoDaysAgo())
			slot := rc.Slot(t, key)
			mv := rc.StartSlotMove(t, slot, rc.OtherMaster(t, rc.MasterOfSlot(t, slot)))
			if tc.migrate {
				mv.Migrate(t, key)
			}
			if tc.late {
				onPruneStep(t, stepStreams, func(string) {
					if err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: key, Values: []any{"kind", "chat", "player", "bob", "text", "gg"}}).Err(); err != nil {
						t.Error(err)
					}
				})
			}
			out, errOut, err := runCtl(t, rc.Addrs()[0], "prune", "-older-than", "24h", "-streams", "-yes")
			mv.Finish(t)
			if err != nil || !strings.Contains(out, "pruned ") {
				t.Errorf("prune -streams while the game's slot migrates: %v\n%s%s", err, out, errOut)
			}
			if tc.late {
				for _, k := range []string{key, deadKey, posKey} {
					if n, err := rdb.Exists(ctx, k).Result(); err != nil || n != 1 {
						t.Errorf("after prune -streams, an entry added since the plan: %s: exists %d, %v\n%s", k, n, err, out)
					}
				}
				if err := rdb.ZScore(ctx, event.RegistryKey, tc.game).Err(); err != nil {
					t.Errorf("%s not registered after prune: %v\n%s", tc.game, err, out)
				}
				if !strings.Contains(out, "late   "+tc.game+": ") {
					t.Errorf("prune does not report %s late:\n%s", tc.game, out)
				}
				return
			}
			for _, k := range []string{key, deadKey, posKey} {
				if n, err := rdb.Exists(ctx, k).Result(); err != nil || n != 0 {
					t.Errorf("after prune -streams, %s: exists %d, %v", k, n, err)
				}
			}
			if err := rdb.ZScore(ctx, event.RegistryKey, tc.game).Err(); err != redis.Nil {
				t.Errorf("after prune -streams, %s still registered (%v)", tc.game, err)
			}
		})
	}
}
