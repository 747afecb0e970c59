package feed_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/codemojex/feed/feed"
	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/internal/testkit/redistest"
)

// TestClusterLeaseTakenDuringSlotMigration: a renderer that starts while
// the slot of its group's leases migrates (redis-cli --cluster reshard)
// takes its lease and reads. The lease scripts named the lease key and the
// group's index of leases together, and Redis refuses a command over
// several keys of a migrating slot with TRYAGAIN as soon as one of them is
// missing on the node asked, as a lease not taken yet is: the renderer
// logged "redis unreachable at open", held no lease and read nothing
// until the migration ended. It is listed among the live renderers with
// the one that held its lease before the move, during the move and after.
func TestClusterLeaseTakenDuringSlotMigration(t *testing.T) {
	rc := redistest.MustStartCluster(t, redistest.ClusterOptions{Replicas: -1})
	rdb := rc.Client(t)
	ctx := context.Background()
	slot := rc.Slot(t, event.LeasesKey(group))
	if rc.Slot(t, stream("g0")) == slot || rc.Slot(t, stream("g1")) == slot {
		t.Fatal("a game shares the leases' slot: the test would move it too")
	}
	open := func(name, game string) *recorder {
		t.Helper()
		rec := &recorder{}
		cfg := baseConfig(t, rdb, name, stream(game))
		cfg.LeaseTTL = 3 * time.Second
		cfg.Handler = rec.handler
		mustOpen(t, cfg)
		return rec
	}
	renderers := func(when string) {
		t.Helper()
		waitFor(t, 10*time.Second, "r0 and r1 listed "+when, func() bool {
			st, err := feed.Inspect(ctx, rdb, group, nil, nil)
			return err == nil && slices.Equal(st.Renderers, []string{"r0", "r1"})
		})
	}
	r0 := open("r0", "g0") // its lease and the index exist before the move
	add(t, rdb, stream("g0"))
	waitFor(t, 10*time.Second, "r0 reading", func() bool { return len(r0.ids()) == 1 })

	move := rc.StartSlotMove(t, slot, rc.OtherMaster(t, rc.MasterOfSlot(t, slot)))
	r1 := open("r1", "g1") // its lease key does not exist yet
	add(t, rdb, stream("g1"))
	waitFor(t, 10*time.Second, "r1 to take its lease and read while its leases' slot migrates", func() bool {
		return len(r1.ids()) == 1
	})
	renderers("during the move")
	move.Finish(t)
	add(t, rdb, stream("g0"))
	add(t, rdb, stream("g1"))
	waitFor(t, 10*time.Second, "both reading after the move", func() bool {
		return len(r0.ids()) == 2 && len(r1.ids()) == 2
	})
	renderers("after the move")
}
