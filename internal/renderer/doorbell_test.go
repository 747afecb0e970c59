package renderer_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/internal/renderer"
	"github.com/codemojex/feed/internal/testkit/redistest"
	"github.com/codemojex/feed/internal/testkit/wait"
)

// listen runs d.Listen until the test ends and returns the count of wakes.
func listen(t *testing.T, d *renderer.Doorbell) *atomic.Int64 {
	t.Helper()
	var rings atomic.Int64
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); d.Listen(ctx, func(string) { rings.Add(1) }) }()
	t.Cleanup(func() { cancel(); <-done })
	return &rings
}

// heard rings until the listener wakes: rings made before the listener has
// (re)subscribed are lost by design, so one ring is not enough.
func heard(t *testing.T, ringer *renderer.Doorbell, rings *atomic.Int64, after string) {
	t.Helper()
	before := rings.Load()
	ctx := context.Background()
	wait.For(t, 20*time.Second, "a ring to be heard "+after, func() bool {
		_ = ringer.Ring(ctx, "test")
		return rings.Load() > before
	})
}

// TestDoorbellSingleNode: a ring on one node wakes a listener of the same
// group and not one of another group (another host).
func TestDoorbellSingleNode(t *testing.T) {
	rs := redistest.MustStart(t)
	rdb := rs.Client(t)
	bell := &renderer.Doorbell{Client: rdb, Channel: event.DoorbellChannel("host-a")}
	other := listen(t, &renderer.Doorbell{Client: rdb, Channel: event.DoorbellChannel("host-b")})
	rings := listen(t, bell)
	heard(t, bell, rings, "on one node")
	if n := other.Load(); n != 0 {
		t.Fatalf("another group's listener woke %d times", n)
	}
}

// TestRinger: a committer's request is rung by the ringer's goroutine, and
// a request still pending when the ringer stops is rung before Run returns.
func TestRinger(t *testing.T) {
	rs := redistest.MustStart(t)
	rdb := rs.Client(t)
	bell := &renderer.Doorbell{Client: rdb, Channel: event.DoorbellChannel("host-a")}
	rings := listen(t, bell)
	heard(t, bell, rings, "before the ringer starts") // the listener is subscribed

	r := renderer.NewRinger(bell, "ringer")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.Run(ctx) }()
	for i := range 3 {
		before := rings.Load()
		r.Request()
		wait.For(t, 10*time.Second, fmt.Sprintf("request %d to be rung", i), func() bool { return rings.Load() > before })
	}
	cancel()
	<-done

	before := rings.Load()
	r.Request()
	stopped, stop := context.WithCancel(context.Background())
	stop()
	r.Run(stopped) // returns at once, after ringing
	wait.For(t, 10*time.Second, "the pending request to be rung at stop", func() bool { return rings.Load() > before })
	r.Run(stopped) // nothing pending: returns without ringing
}

// TestDoorbellCluster: on a cluster the listener keeps hearing rings after
// the channel's slot moves to another master, after a graceful failover of
// its master and after its master is SIGKILLed.
func TestDoorbellCluster(t *testing.T) {
	c := redistest.MustStartCluster(t)
	ch := event.DoorbellChannel("feed")
	// Separate clients, as separate renderers have.
	ringer := &renderer.Doorbell{Client: c.Client(t), Channel: ch}
	rings := listen(t, &renderer.Doorbell{Client: c.Client(t), Channel: ch, Health: time.Second})
	heard(t, ringer, rings, "at start")

	slot := c.Slot(t, ch)
	owner := c.MasterOfSlot(t, slot)
	var to *redistest.Server
	for _, m := range c.Masters(t) {
		if m != owner {
			to = m
			break
		}
	}
	c.MoveSlot(t, slot, to)
	heard(t, ringer, rings, "after the slot moved")

	c.Failover(t, to)
	heard(t, ringer, rings, "after a failover")

	c.KillMaster(t, c.MasterOfSlot(t, slot))
	ringer.Client.(*redis.ClusterClient).ReloadState(context.Background())
	heard(t, ringer, rings, "after the master was killed")
}
