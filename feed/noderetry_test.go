package feed_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/codemojex/feed/feed"
	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/internal/testkit/redistest"
)

// TestClusterDeadMasterProbedOncePerRetry: many hot games on a master that
// dies. Each stream set aside draws its own retry (jittered), so without a
// retry of the node's own their retries fall due in nearly every turn, and
// every turn PINGed the dead node (up to 500 ms each when it is silent
// rather than refusing) where the law promises a PING every 5 s at most.
func TestClusterDeadMasterProbedOncePerRetry(t *testing.T) {
	ctx := context.Background()
	rc := redistest.MustStartCluster(t, redistest.ClusterOptions{Replicas: -1,
		Node: redistest.Options{NodeTimeout: noFailover}})
	rdb := rc.Client(t)
	doomed := spareMaster(t, rc, "c1")
	live := gameOn(t, rc, "live", doomed, false)
	var lost []string
	for i := 0; len(lost) < 30; i++ {
		if g := fmt.Sprintf("lost-%d", i); rc.MasterOfSlot(t, rc.Slot(t, stream(g))).Addr == doomed.Addr {
			lost = append(lost, g)
		}
	}
	rec := &recorder{}
	cfg := baseConfig(t, rdb, "c1")
	cfg.Streams, cfg.Registry = nil, event.RegistryKey
	cfg.SweepEvery = time.Minute
	cfg.Handler = rec.handler
	c := mustOpen(t, cfg)
	write := func(game string) string {
		id := add(t, rdb, stream(game))
		if err := rdb.ZAddGT(ctx, event.RegistryKey, redisZ(game)).Err(); err != nil {
			t.Fatal(err)
		}
		return id
	}
	var ids []string
	for _, g := range append(lost, live) {
		ids = append(ids, write(g))
	}
	waitFor(t, 20*time.Second, "every game read", func() bool {
		for _, id := range ids {
			if rec.count(id) != 1 {
				return false
			}
		}
		return true
	})

	doomed.Kill(t)
	// 6 s for the retries to reach their cap (5 s), then 10 s counted.
	var before int64
	start := time.Now()
	for i := 0; time.Since(start) < 16*time.Second; i++ {
		if before == 0 && time.Since(start) > 6*time.Second {
			before = feed.LoopErrorsOf(c, "probe") + 1 // +1: not zero
		}
		id, at := write(live), time.Now()
		waitFor(t, 5*time.Second, fmt.Sprintf("live entry %d read", i), func() bool { return rec.count(id) == 1 })
		if d := time.Since(at); d > 300*time.Millisecond {
			t.Logf("live entry %d read after %v (at %v)", i, d.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
		}
		<-time.After(100 * time.Millisecond) // the pace of a game, not a wait for the consumer
	}
	probes := feed.LoopErrorsOf(c, "probe") + 1 - before
	t.Logf("failed PINGs of the dead node in 10 s: %d", probes)
	if probes > 5 { // every 5 s at most, after a first doubling to the cap: 3 or 4
		t.Errorf("the dead node was PINGed %d times in 10 s; want at most 5 (a PING every 5 s at most)", probes)
	}
}

// TestClusterDeadNodeRetryDoubles: the retry of a dead node doubles once
// per failed PING (100 ms doubling to 5 s), however many of its streams
// fall due together. The probe set aside each due stream on its own, and
// each of them doubled the node's wait again: with 30 hot games on the
// node, the first failed PING put the next one 2.5 to 5 s later, so a
// master back within a second was read again only then.
func TestClusterDeadNodeRetryDoubles(t *testing.T) {
	ctx := context.Background()
	rc := redistest.MustStartCluster(t, redistest.ClusterOptions{Replicas: -1,
		Node: redistest.Options{NodeTimeout: noFailover}})
	rdb := rc.Client(t)
	doomed := spareMaster(t, rc, "c1")
	var lost []string
	for i := 0; len(lost) < 30; i++ {
		if g := fmt.Sprintf("lost-%d", i); rc.MasterOfSlot(t, rc.Slot(t, stream(g))).Addr == doomed.Addr {
			lost = append(lost, g)
		}
	}
	rec := &recorder{}
	cfg := baseConfig(t, rdb, "c1")
	cfg.Streams, cfg.Registry = nil, event.RegistryKey
	cfg.SweepEvery = time.Minute
	cfg.Handler = rec.handler
	c := mustOpen(t, cfg)
	var ids []string
	for _, g := range lost {
		ids = append(ids, add(t, rdb, stream(g)))
		if err := rdb.ZAddGT(ctx, event.RegistryKey, redisZ(g)).Err(); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 20*time.Second, "every game read", func() bool {
		for _, id := range ids {
			if rec.count(id) != 1 {
				return false
			}
		}
		return true
	})

	doomed.Kill(t) // its 30 games hot: in the read set, due for the same retry
	waitFor(t, 10*time.Second, "a first failed PING of the dead node", func() bool { return feed.LoopErrorsOf(c, "probe") > 0 })
	first := feed.LoopErrorsOf(c, "probe")
	// The node's next three waits are at most 200, 400 and 800 ms, each
	// PING some 400 ms (go-redis dials 5 times): about 3 s, given 6.5 s
	// here for a loaded host, where the waits at the cap (2.5 to 5 s
	// each) take 7.5 s at least.
	waitFor(t, 6500*time.Millisecond, "three more PINGs of the dead node", func() bool {
		return feed.LoopErrorsOf(c, "probe") >= first+3
	})
}

// TestClusterDeadMasterColdGamesCostNoStall: a dead master whose games are
// all cold (out of the read set). The law: its streams wait for the node's
// retry and a due retry costs one PING, so the other masters' games are
// read on without stalls. Only the read set's streams were probed, so
// once the node's retry passed the poll met its cold games again and paid
// go-redis's dial retries, seconds in which no other game was read, at
// every retry.
func TestClusterDeadMasterColdGamesCostNoStall(t *testing.T) {
	ctx := context.Background()
	rc := redistest.MustStartCluster(t, redistest.ClusterOptions{Replicas: -1,
		Node: redistest.Options{NodeTimeout: noFailover}})
	rdb := rc.Client(t)
	doomed := spareMaster(t, rc, "c1")
	live := gameOn(t, rc, "live", doomed, false)
	var cold []string
	for i := 0; len(cold) < 5; i++ {
		if g := fmt.Sprintf("cold-%d", i); rc.MasterOfSlot(t, rc.Slot(t, stream(g))).Addr == doomed.Addr {
			cold = append(cold, g)
		}
	}
	rec := &recorder{}
	cfg := baseConfig(t, rdb, "c1")
	cfg.Streams, cfg.Registry = nil, event.RegistryKey
	cfg.WakeEvery, cfg.ActiveWindow, cfg.SweepEvery, cfg.PollEvery = 50*time.Millisecond, 300*time.Millisecond, time.Minute, 200*time.Millisecond
	cfg.Handler = rec.handler
	c := mustOpen(t, cfg)
	write := func(game string) string {
		id := add(t, rdb, stream(game))
		if err := rdb.ZAddGT(ctx, event.RegistryKey, redisZ(game)).Err(); err != nil {
			t.Fatal(err)
		}
		return id
	}
	for _, g := range append(cold, live) {
		id := write(g)
		waitFor(t, 20*time.Second, "game "+g+" read", func() bool { return rec.count(id) == 1 })
	}
	waitFor(t, 10*time.Second, "the games on the doomed master out of the read set", func() bool {
		return c.Stats().Working <= 1 // live at most
	})

	doomed.Kill(t)
	waitFor(t, 20*time.Second, "the dead node met", func() bool { return feed.LoopErrorsOf(c, "read") > 0 })
	id := write(live) // read after the reads that met the dead node are counted
	waitFor(t, 20*time.Second, "a live entry read", func() bool { return rec.count(id) == 1 })
	// Once set aside, its cold games are the node's retry's: a PING each,
	// no command to them, and no stall of the live game.
	reads := feed.LoopErrorsOf(c, "read")
	start := time.Now()
	var worst time.Duration
	for i := 0; time.Since(start) < 12*time.Second; i++ {
		id, at := write(live), time.Now()
		waitFor(t, 20*time.Second, fmt.Sprintf("live entry %d read", i), func() bool { return rec.count(id) == 1 })
		worst = max(worst, time.Since(at))
		<-time.After(100 * time.Millisecond) // the pace of a game, not a wait for the consumer
	}
	failed := feed.LoopErrorsOf(c, "read") - reads
	t.Logf("in 12 s: reads of the dead node's games %d, live entry read after %v at worst", failed, worst.Round(time.Millisecond))
	if failed > 0 || worst > time.Second {
		t.Errorf("the dead node's cold games were read %d times after it was set aside, and a live entry waited %v: want none, and under 1 s",
			failed, worst.Round(time.Millisecond))
	}
}
