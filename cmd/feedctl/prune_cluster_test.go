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
// cluster client sends on to the key's node (ASK).
func TestPruneStreamsDuringSlotMigration(t *testing.T) {
	rc := redistest.MustStartCluster(t, redistest.ClusterOptions{Replicas: -1})
	rdb := rc.Client(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		game    string
		dead    bool // the game has a dead letter (all three keys exist)
		migrate bool // its stream moved before the prune, the others not
	}{
		{name: "no dead letters, nothing moved yet", game: "old-1"},
		{name: "dead letters, the stream moved", game: "old-2", dead: true, migrate: true},
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
			out, errOut, err := runCtl(t, rc.Addrs()[0], "prune", "-older-than", "24h", "-streams", "-yes")
			mv.Finish(t)
			if err != nil || !strings.Contains(out, "pruned ") {
				t.Errorf("prune -streams while the game's slot migrates: %v\n%s%s", err, out, errOut)
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
