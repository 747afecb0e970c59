package renderer_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/internal/renderer"
	"github.com/codemojex/feed/internal/testkit/redistest"
	"github.com/codemojex/feed/internal/testkit/wait"
)

// TestDoorbellHungMaster: the master that holds the doorbell's slot hangs
// (SIGSTOP: a frozen host, a partition) instead of dying, so no FIN and no
// sunsubscribe ever reach the listener. Its replica takes over; Health's
// ping must notice that the old node no longer answers and subscribe again
// on the new owner.
func TestDoorbellHungMaster(t *testing.T) {
	c := redistest.MustStartCluster(t)
	ch := event.DoorbellChannel("feed")
	rings := listen(t, &renderer.Doorbell{Client: c.Client(t), Channel: ch, Health: 500 * time.Millisecond})
	heard(t, &renderer.Doorbell{Client: c.Client(t), Channel: ch}, rings, "at start")

	owner := c.MasterOfSlot(t, c.Slot(t, ch))
	replica := c.ReplicaOf(t, owner)
	owner.Pause(t)
	t.Cleanup(func() { owner.Resume(t) })
	rc := redis.NewClient(&redis.Options{Addr: replica.Addr})
	t.Cleanup(func() { rc.Close() })
	wait.For(t, 30*time.Second, "the replica to take over", func() bool {
		v, err := rc.Do(context.Background(), "ROLE").Slice()
		return err == nil && len(v) > 0 && v[0] == "master"
	})
	// Ring on the new owner directly.
	heard(t, &renderer.Doorbell{Client: rc, Channel: ch}, rings, "after the hung master's replica took over")
}
