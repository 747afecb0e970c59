package feed_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/codemojex/feed/internal/event"
)

// TestClusterRegistryMasterDownLogSampled: the registry's master is down
// (no replica to take over) while the other masters answer. The games
// already known are read on, and the beat, which fails every WakeEvery,
// says so in one line per LogEvery, not one per beat: the turns go on
// without the loop's backoff there, and each failed beat logged a WARN,
// several lines a second, for the length of the outage.
func TestClusterRegistryMasterDownLogSampled(t *testing.T) {
	ctx := context.Background()
	rc, rdb, doomed := registryCluster(t)
	game := gameOn(t, rc, "live", doomed, false)
	live := stream(game)
	rec := &recorder{}
	cfg := baseConfig(t, rdb, "c1")
	cfg.Streams, cfg.Registry = nil, event.RegistryKey
	cfg.WakeEvery, cfg.SweepEvery, cfg.ActiveWindow = 50*time.Millisecond, time.Minute, time.Minute
	cfg.LogEvery = time.Minute
	cfg.Handler = rec.handler
	logs := captureLogs(t, &cfg)
	mustOpen(t, cfg)
	first := add(t, rdb, live)
	if err := rdb.ZAddGT(ctx, event.RegistryKey, redisZ(game)).Err(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the live game read", func() bool { return rec.count(first) == 1 })

	doomed.Kill(t)
	waitFor(t, 10*time.Second, "a failed beat", func() bool { return logs.count("registry beat failed") >= 1 })
	// The live game goes on for four seconds (eighty beats).
	for deadline := time.Now().Add(4 * time.Second); time.Now().Before(deadline); {
		id := add(t, rdb, live)
		waitFor(t, 10*time.Second, "the live game read while the registry's master is down", func() bool { return rec.count(id) == 1 })
	}
	if n := logs.count("registry beat failed"); n > 1 {
		t.Errorf("%d lines of a failed beat in 4s; want one per LogEvery", n)
	}
}

// TestClusterRegistryMasterDownNoSpin: while the registry's master is down
// the loop turns no faster than with it up. The beat's and the sweep's
// deadlines, left in the past, cut every blocking read to 1 ms: with hot
// games in two slots (a non-blocking read of each slot every turn) the live
// master got five times the reads for the length of the outage.
func TestClusterRegistryMasterDownNoSpin(t *testing.T) {
	ctx := context.Background()
	rc, rdb, doomed := registryCluster(t)
	a := gameOn(t, rc, "live", doomed, false)
	master := rc.MasterOfSlot(t, rc.Slot(t, stream(a)))
	b := ""
	for i := 0; b == ""; i++ {
		g := fmt.Sprintf("other-%d", i)
		if rc.Slot(t, stream(g)) != rc.Slot(t, stream(a)) && rc.MasterOfSlot(t, rc.Slot(t, stream(g))).Addr == master.Addr {
			b = g
		}
	}
	rec := &recorder{}
	cfg := baseConfig(t, rdb, "c1")
	cfg.Streams, cfg.Registry = nil, event.RegistryKey
	cfg.WakeEvery, cfg.SweepEvery, cfg.ActiveWindow = 100*time.Millisecond, time.Minute, time.Minute
	cfg.LogEvery = time.Minute
	cfg.Handler = rec.handler
	mustOpen(t, cfg)
	var ids []string
	for _, g := range []string{a, b} {
		ids = append(ids, add(t, rdb, stream(g)))
		if err := rdb.ZAddGT(ctx, event.RegistryKey, redisZ(g)).Err(); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 10*time.Second, "both games read", func() bool { return rec.count(ids[0]) == 1 && rec.count(ids[1]) == 1 })
	node := master.Client(t)
	reads := func() int64 {
		before := commandCalls(t, node)["xreadgroup"]
		<-time.After(2 * time.Second) // a measured window
		return commandCalls(t, node)["xreadgroup"] - before
	}
	up := reads()
	doomed.Kill(t)
	<-time.After(time.Second) // past the first failed beat and its probe
	down := reads()
	t.Logf("XREADGROUP on the live games' master in 2 s: %d with the registry's master up, %d with it down", up, down)
	if down > 2*up+100 {
		t.Errorf("%d reads in 2 s with the registry's master down against %d with it up: the loop spins", down, up)
	}
}
