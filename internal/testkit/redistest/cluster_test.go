package redistest_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/internal/testkit/redistest"
)

// TestCluster drives one local cluster through everything the kit offers:
// a graceful failover, a master SIGKILLed and replaced by its replica, and a
// slot moved with its keys. Data written before each step is read after it.
func TestCluster(t *testing.T) {
	ctx := context.Background()
	c := redistest.MustStartCluster(t)
	if n := len(c.Nodes); n != 6 {
		t.Fatalf("nodes: %d, want 6", n)
	}
	for _, s := range c.Nodes {
		if s.Port > redistest.MaxClusterPort {
			t.Fatalf("node port %d: bus port %d is out of range", s.Port, s.Port+10000)
		}
	}
	if m := c.Masters(t); len(m) != 3 {
		t.Fatalf("masters: %d, want 3", len(m))
	}
	cc := c.Client(t)
	key := "codemojex:{kit}:events"
	if err := cc.XAdd(ctx, xadd(key, "1")).Err(); err != nil {
		t.Fatal(err)
	}
	wantLen := func(step string, n int64) {
		t.Helper()
		// The kit waited until the nodes agree; the client learns the
		// new map when it is told to (or within its own 10 s refresh).
		cc.ReloadState(ctx)
		got, err := cc.XLen(ctx, key).Result()
		if err != nil || got != n {
			t.Fatalf("after %s: XLEN %d, %v; want %d", step, got, err, n)
		}
	}

	slot := c.Slot(t, key)
	old := c.MasterOfSlot(t, slot)
	next := c.Failover(t, old)
	if got := c.MasterOfSlot(t, slot); got != next {
		t.Fatalf("after failover slot %d is on %s, want %s", slot, got.Addr, next.Addr)
	}
	wantLen("failover", 1)
	if err := cc.XAdd(ctx, xadd(key, "2")).Err(); err != nil {
		t.Fatal(err)
	}
	// WAIT for the replica, so the kill below loses nothing.
	if err := cc.Do(ctx, "wait", 1, 5000).Err(); err != nil {
		t.Fatal(err)
	}

	killed := c.MasterOfSlot(t, slot)
	survivor := c.KillMaster(t, killed)
	if got := c.MasterOfSlot(t, slot); got != survivor {
		t.Fatalf("after kill slot %d is on %s, want %s", slot, got.Addr, survivor.Addr)
	}
	wantLen("kill", 2)

	to := c.OtherMaster(t, survivor)
	if n := c.MoveSlot(t, slot, to); n != 1 {
		t.Fatalf("moved %d keys, want 1", n)
	}
	if got := c.MasterOfSlot(t, slot); got != to {
		t.Fatalf("after move slot %d is on %s, want %s", slot, got.Addr, to.Addr)
	}
	wantLen("move", 2)

	// The killed node comes back as a replica.
	killed.Start(t)
	c.WaitStable(t)
	if n := len(c.Masters(t)); n != 3 {
		t.Fatalf("masters after the killed node came back: %d, want 3", n)
	}
}

func xadd(key, v string) *redis.XAddArgs {
	return &redis.XAddArgs{Stream: key, Values: []string{"v", v}}
}
