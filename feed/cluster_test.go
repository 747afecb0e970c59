package feed_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/feed"
	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/internal/testkit/redistest"
)

// noFailover is the cluster-node-timeout of the tests that kill a master
// with no replica: longer than any test, so the cluster never marks the
// dead master failed, which would make every node answer CLUSTERDOWN
// (full coverage is required) and fail a slow test's writes to the live
// masters. One minute could, in a test slowed by a loaded machine.
const noFailover = 10 * time.Minute

// TestClusterReadsPerSlot: on a 3-master cluster, a consumer following the
// registry reads games spread over every node (one multi-key XREADGROUP
// per slot: a read over two slots would fail with CROSSSLOT), handles
// each entry once, and rides out a slot move under a blocked read of a hot
// game (UNBLOCKED in Redis 7.0, NOGROUP or a redirection elsewhere)
// without losing the group. event.Slot agrees with CLUSTER KEYSLOT.
func TestClusterReadsPerSlot(t *testing.T) {
	ctx := context.Background()
	rc := redistest.MustStartCluster(t)
	rdb := rc.Client(t)

	t.Run("keyslot", func(t *testing.T) {
		keys := []string{"codemojex:{g-1}:events", "codemojex:{g-1}:dead", "codemojex:games",
			"plain", "{}", "a{}b", "{a}{b}", "x{y}", "{{z}}", "}{w}", "codemojex:feed:lease:{feed}:r1", ""}
		for i := range 200 {
			keys = append(keys, event.StreamKey(fmt.Sprintf("game-%d", i)))
		}
		for _, k := range keys {
			if got, want := event.Slot(k), rc.Slot(t, k); got != want {
				t.Errorf("Slot(%q) = %d; CLUSTER KEYSLOT says %d", k, got, want)
			}
		}
	})

	rec := &recorder{}
	cfg := baseConfig(t, rdb, "c1")
	cfg.Streams, cfg.Registry = nil, event.RegistryKey
	cfg.WakeEvery, cfg.ActiveWindow, cfg.SweepEvery = 50*time.Millisecond, time.Second, time.Minute
	cfg.Handler = rec.handler
	c := mustOpen(t, cfg)

	const games = 40
	var want []string
	for i := range games {
		g := fmt.Sprintf("cl-%d", i)
		for range 3 {
			want = append(want, add(t, rdb, stream(g)))
		}
		if err := rdb.ZAddGT(ctx, event.RegistryKey, redisZ(g)).Err(); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 20*time.Second, "every entry handled", func() bool { return len(rec.ids()) == len(want) })

	// Every other game quiet, one game live: the consumer blocks on that
	// game's slot alone. Move the slot away while the game goes on writing:
	// every entry must arrive once, and the group must survive.
	waitFor(t, 10*time.Second, "the games quiet", func() bool { return c.Stats().Hot == 0 })
	hot := "cl-hot"
	stop, done := make(chan struct{}), make(chan []string)
	go func() {
		var ids []string
		defer func() { done <- ids }()
		for {
			id := minter.Next(time.Now())
			err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: stream(hot), Values: []any{"id", id, "kind", "chat",
				"at", time.Now().UTC().Format(time.RFC3339), "player", "ana", "text", "hi"}}).Err()
			if err == nil {
				ids = append(ids, id)
				rdb.ZAddGT(ctx, event.RegistryKey, redisZ(hot))
			}
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	waitFor(t, 10*time.Second, "the live game hot", func() bool { return c.Stats().Hot == 1 && len(rec.ids()) > len(want) })
	slot := rc.Slot(t, stream(hot))
	from := rc.MasterOfSlot(t, slot)
	rc.MoveSlot(t, slot, rc.OtherMaster(t, from))
	time.Sleep(500 * time.Millisecond) // the game goes on writing after the move
	close(stop)
	want = append(want, <-done...)
	waitFor(t, 20*time.Second, "entries around the slot move handled", func() bool { return len(rec.ids()) == len(want) })
	for _, id := range want {
		if n := rec.count(id); n != 1 {
			t.Errorf("%s handled %d times", id, n)
		}
	}
	t.Logf("stats after the slot move: %+v", c.Stats())
	if s := c.Stats(); s.GroupsRecreated != 0 {
		t.Errorf("groups re-created %d times; a slot move must not lose a group", s.GroupsRecreated)
	}
	for i := range games {
		if p := pending(t, rdb, stream(fmt.Sprintf("cl-%d", i))); p != 0 {
			t.Errorf("cl-%d: %d pending", i, p)
		}
	}
}

func redisZ(game string) redis.Z {
	return redis.Z{Score: float64(time.Now().UnixMilli()), Member: game}
}

// TestClusterDeadMasterLeavesOthersRead: one master of three is down (its
// replica has not taken over yet, here for the whole test) when a new game
// whose slot it serves is registered. The other masters' games must go on
// being read: only the new game waits for its node. The group door came
// first in every turn and gave up the turn at its first unreachable node,
// so every game of the cluster waited as long as that one master.
func TestClusterDeadMasterLeavesOthersRead(t *testing.T) {
	ctx := context.Background()
	rc := redistest.MustStartCluster(t, redistest.ClusterOptions{Replicas: -1,
		Node: redistest.Options{NodeTimeout: noFailover}})
	rdb := rc.Client(t)

	// The master to kill serves neither the registry nor the lease: those
	// have a master of their own to fail over, at a cost to every game.
	busy := map[string]bool{
		rc.MasterOfSlot(t, rc.Slot(t, event.RegistryKey)).Addr:           true,
		rc.MasterOfSlot(t, rc.Slot(t, event.LeaseKey(group, "c1"))).Addr: true,
	}
	var doomed *redistest.Server
	for _, m := range rc.Masters(t) {
		if !busy[m.Addr] {
			doomed = m
			break
		}
	}
	name := func(prefix string, onDoomed bool) string {
		for i := 0; ; i++ {
			g := fmt.Sprintf("%s-%d", prefix, i)
			if (rc.MasterOfSlot(t, rc.Slot(t, stream(g))).Addr == doomed.Addr) == onDoomed {
				return g
			}
		}
	}
	live, late := name("live", false), name("late", true)

	rec := &recorder{}
	cfg := baseConfig(t, rdb, "c1")
	cfg.Streams, cfg.Registry = nil, event.RegistryKey
	cfg.WakeEvery, cfg.SweepEvery = 50*time.Millisecond, time.Minute
	cfg.Handler = rec.handler
	c := mustOpen(t, cfg)
	write := func() string {
		id := add(t, rdb, stream(live))
		if err := rdb.ZAddGT(ctx, event.RegistryKey, redisZ(live)).Err(); err != nil {
			t.Fatal(err)
		}
		return id
	}
	first := write()
	waitFor(t, 10*time.Second, "the live game read", func() bool { return rec.count(first) == 1 })

	doomed.Kill(t)
	// A game server registers a game on the dead master; its XADD fails.
	if err := rdb.ZAddGT(ctx, event.RegistryKey, redisZ(late)).Err(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the late game known", func() bool { return c.Stats().Known == 2 })
	for range 3 {
		id := write()
		waitFor(t, 5*time.Second, "the live game read while another master is down", func() bool { return rec.count(id) == 1 })
	}
}

// TestClusterDeadMasterHotGame: two hot games on two masters of three,
// the one on the master that dies with an entry pending (its handler
// failed). While that master is down (no replica here, and a node timeout
// long enough that the cluster never gives it up), every new entry of the
// other game must still be read within a few seconds; once the master is
// back (AOF: its streams and group come back with it), the pending entry
// is claimed and handled, and the game is read again. Each step of the
// turn gave up the turn at the first stream whose node it could not
// reach, so one master down stopped the reading of every game.
func TestClusterDeadMasterHotGame(t *testing.T) {
	ctx := context.Background()
	rc := redistest.MustStartCluster(t, redistest.ClusterOptions{Replicas: -1,
		Node: redistest.Options{NodeTimeout: noFailover, AOF: true}})
	rdb := rc.Client(t)
	doomed := spareMaster(t, rc, "c1")
	live, lost := gameOn(t, rc, "live", doomed, false), gameOn(t, rc, "lost", doomed, true)

	rec := &recorder{}
	var mended atomic.Bool // the flaky entry fails until then
	cfg := baseConfig(t, rdb, "c1")
	cfg.Streams, cfg.Registry = nil, event.RegistryKey
	cfg.WakeEvery, cfg.SweepEvery = 50*time.Millisecond, time.Minute
	cfg.PoisonAfter = 1000 // retried every MinIdle for the whole outage
	cfg.Handler = func(ctx context.Context, m feed.Message) error {
		if m.Payload["flaky"] != "" && !mended.Load() {
			return errors.New("flaky until its master is back")
		}
		return rec.handler(ctx, m)
	}
	c := mustOpen(t, cfg)
	write := func(game string, kv ...string) string {
		id := add(t, rdb, stream(game), kv...)
		if err := rdb.ZAddGT(ctx, event.RegistryKey, redisZ(game)).Err(); err != nil {
			t.Fatal(err)
		}
		return id
	}
	handled := func(id string) func() bool { return func() bool { return rec.count(id) == 1 } }
	want := []string{write(live), write(lost)}
	waitFor(t, 10*time.Second, "both games read", func() bool { return handled(want[0])() && handled(want[1])() })
	flaky := write(lost, "flaky", "yes")
	waitFor(t, 10*time.Second, "the flaky entry failed and pending", func() bool {
		return c.Stats().Failed > 0 && pending(t, rdb, stream(lost)) == 1
	})
	want = append(want, flaky)
	waitFor(t, 5*time.Second, "both games hot", func() bool { return c.Stats().Hot == 2 })

	doomed.Kill(t)
	// For 8 s, past the cap of the lost game's own retries (5 s), so that
	// they are tried again meanwhile: none may hold the live game up for
	// long. The first entry waits longest: the first call to the dead
	// node is go-redis's, with its dial retries (about 3 s).
	for i, end := 0, time.Now().Add(8*time.Second); time.Now().Before(end); i++ {
		id := write(live)
		waitFor(t, 5*time.Second, fmt.Sprintf("live entry %d read while the other game's master is down", i), handled(id))
		want = append(want, id)
		<-time.After(200 * time.Millisecond) // the pace of a game, not a wait for the consumer
	}

	doomed.Start(t)
	mended.Store(true)
	waitFor(t, 30*time.Second, "the flaky entry claimed and handled once its master is back", handled(flaky))
	var back string
	waitFor(t, 30*time.Second, "the lost game written again", func() bool {
		id := minter.Next(time.Now())
		err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: stream(lost), Values: []any{"id", id, "kind", "chat",
			"at", time.Now().UTC().Format(time.RFC3339), "player", "ana", "text", "back"}}).Err()
		if err == nil {
			back = id
		}
		return err == nil
	})
	if err := rdb.ZAddGT(ctx, event.RegistryKey, redisZ(lost)).Err(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the lost game read again", handled(back))
	id := write(live)
	waitFor(t, 5*time.Second, "the live game still read", handled(id))
	want = append(want, back, id)

	for _, id := range want {
		if n := rec.count(id); n != 1 {
			t.Errorf("%s handled %d times, want once", id, n)
		}
	}
	waitFor(t, 10*time.Second, "nothing left pending", func() bool {
		return pending(t, rdb, stream(live)) == 0 && pending(t, rdb, stream(lost)) == 0
	})
	t.Logf("stats: %+v", c.Stats())
}

// spareMaster returns a master of rc that serves neither the registry nor
// consumer's lease: those have a master of their own to fail over, at a
// cost to every game.
func spareMaster(t *testing.T, rc *redistest.Cluster, consumer string) *redistest.Server {
	t.Helper()
	busy := map[string]bool{
		rc.MasterOfSlot(t, rc.Slot(t, event.RegistryKey)).Addr:               true,
		rc.MasterOfSlot(t, rc.Slot(t, event.LeaseKey(group, consumer))).Addr: true,
	}
	for _, m := range rc.Masters(t) {
		if !busy[m.Addr] {
			return m
		}
	}
	t.Fatal("no master free of the registry and the lease")
	return nil
}

// mustReadSpareMastersGame starts a cluster of three masters that do not
// fail over, and opens consumer c1 on two games: one on a master that
// serves neither the registry nor c1's lease (returned as spare, the one
// a test then kills or hangs), the other on another master. It returns
// once c1 has read an entry of each, with the two games' streams.
func mustReadSpareMastersGame(t *testing.T, prefix string) (rdb *redis.ClusterClient, spare *redistest.Server, live, onSpare string) {
	t.Helper()
	rc := redistest.MustStartCluster(t, redistest.ClusterOptions{Replicas: -1,
		Node: redistest.Options{NodeTimeout: noFailover}})
	rdb = rc.Client(t)
	spare = spareMaster(t, rc, "c1")
	live, onSpare = stream(gameOn(t, rc, "live", spare, false)), stream(gameOn(t, rc, prefix, spare, true))
	rec := &recorder{}
	cfg := baseConfig(t, rdb, "c1", live, onSpare)
	cfg.Handler = rec.handler
	mustOpen(t, cfg)
	ids := []string{add(t, rdb, live), add(t, rdb, onSpare)}
	waitFor(t, 10*time.Second, "both games read", func() bool { return rec.count(ids[0]) == 1 && rec.count(ids[1]) == 1 })
	return rdb, spare, live, onSpare
}

// gameOn returns the first game prefix-N whose stream master serves, or
// (on false) does not.
func gameOn(t *testing.T, rc *redistest.Cluster, prefix string, master *redistest.Server, on bool) string {
	t.Helper()
	for i := 0; ; i++ {
		g := fmt.Sprintf("%s-%d", prefix, i)
		if (rc.MasterOfSlot(t, rc.Slot(t, stream(g))).Addr == master.Addr) == on {
			return g
		}
	}
}

// registryCluster starts a 3-master cluster without failover, its client,
// and the master of the registry, which is not the master of consumer c1's
// lease (else the consumer could not read at all with it down).
func registryCluster(t *testing.T) (*redistest.Cluster, *redis.ClusterClient, *redistest.Server) {
	t.Helper()
	rc := redistest.MustStartCluster(t, redistest.ClusterOptions{Replicas: -1,
		Node: redistest.Options{NodeTimeout: noFailover}})
	registry := rc.MasterOfSlot(t, rc.Slot(t, event.RegistryKey))
	if registry.Addr == rc.MasterOfSlot(t, rc.Slot(t, event.LeaseKey(group, "c1"))).Addr {
		t.Fatal("the registry and the lease share a master: the consumer could not read at all")
	}
	return rc, rc.Client(t), registry
}

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

// TestClusterInspectDeadMaster: with one master of three down (no replica
// to take over), the status still reports the games of the other masters
// and the live renderers, and the dead master's games carry the error in
// their own row. One master down failed the whole Inspect (its SCAN of
// the leases, then its pipeline), so /status, /api/status and feedctl
// status showed nothing while the renderers read the other games on.
func TestClusterInspectDeadMaster(t *testing.T) {
	rdb, doomed, live, dead := mustReadSpareMastersGame(t, "dead")

	doomed.Kill(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := feed.Inspect(ctx, rdb, group, []string{live, dead}, nil)
	if err != nil {
		t.Fatalf("Inspect with one master of three down: %v; want the others reported", err)
	}
	if len(st.Renderers) != 1 || st.Renderers[0] != "c1" {
		t.Errorf("renderers %v; want [c1]", st.Renderers)
	}
	if s := st.Streams[0]; s.Err != "" || s.Length != 1 || s.Lag != 0 || len(s.Consumers) != 1 || !s.Consumers[0].Alive {
		t.Errorf("the live master's game: %+v; want length 1, lag 0, c1 alive, no error", s)
	}
	if s := st.Streams[1]; s.Err == "" || s.Lag != -1 {
		t.Errorf("the dead master's game: %+v; want its error and lag -1", s)
	}

	// Nothing answers: Inspect's own error, as on a single node.
	if _, err := feed.Inspect(ctx, rdb, group, []string{dead}, nil); err == nil {
		t.Errorf("Inspect of games on the dead master alone: no error")
	}
}

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

// TestClusterLeaseMasterDownLogged: the master of the leases' slot is down
// (no replica to take over) while the others answer. The consumer cannot
// refresh its lease, so it reads none of its games (the lease is what
// keeps one process per name), and it must say so, once: it stopped
// without a log line, its games unread, for as long as the master was
// down.
func TestClusterLeaseMasterDownLogged(t *testing.T) {
	rc := redistest.MustStartCluster(t, redistest.ClusterOptions{Replicas: -1,
		Node: redistest.Options{NodeTimeout: noFailover}})
	rdb := rc.Client(t)
	doomed := rc.MasterOfSlot(t, rc.Slot(t, event.LeaseKey(group, "c1")))
	live := stream(gameOn(t, rc, "live", doomed, false))
	rec := &recorder{}
	cfg := baseConfig(t, rdb, "c1", live)
	cfg.Handler = rec.handler
	logs := captureLogs(t, &cfg)
	c := mustOpen(t, cfg)
	first := add(t, rdb, live)
	waitFor(t, 10*time.Second, "the live game read", func() bool { return rec.count(first) == 1 })

	doomed.Kill(t)
	const line = "lease not held; reading nothing"
	waitFor(t, 10*time.Second, "the stop said", func() bool { return logs.count(line) == 1 })
	if err := c.Ready(); !errors.Is(err, feed.ErrLeaseLost) {
		t.Errorf("Ready = %v; want the lease lost", err)
	}
	// Six failed refreshes later (one every LeaseTTL/3), still one line,
	// and Ready still says why: each failed refresh records a Redis error
	// that the loop, reading nothing, never clears, and Ready gave that
	// instead from the first refresh after the line on (read right after
	// the line, the lease lost showed only when the test was quick).
	errs := c.Stats().LoopErrors
	waitFor(t, 10*time.Second, "more failed refreshes", func() bool { return c.Stats().LoopErrors >= errs+6 })
	if n := logs.count(line); n != 1 {
		t.Errorf("%d lines saying the consumer reads nothing; want one", n)
	}
	if err := c.Ready(); !errors.Is(err, feed.ErrLeaseLost) {
		t.Errorf("six failed refreshes later, Ready = %v; want the lease lost", err)
	}
}

// TestClusterForgottenStreamAckKept: an ack fails because its master died
// (no replica to take over), and the stream is then forgotten: dropped
// from the static list here, as a game removed from the registry is at the
// end of a sweep pass. Its failed ack must stay in hand without costing
// the other masters' games their reads: the retry of an ack whose stream
// was no longer known returned its connection error as the turn's, so
// every turn ended at its second step, and no game of the cluster was read
// for as long as that one master was down. Once the master is back, the
// ack is sent (each entry handled once, nothing pending) and the stream
// forgotten.
func TestClusterForgottenStreamAckKept(t *testing.T) {
	rc := redistest.MustStartCluster(t, redistest.ClusterOptions{Replicas: -1,
		Node: redistest.Options{NodeTimeout: noFailover, AOF: true}})
	rdb := rc.Client(t)
	doomed := spareMaster(t, rc, "c1")
	live, lost := stream(gameOn(t, rc, "live", doomed, false)), stream(gameOn(t, rc, "lost", doomed, true))

	var dropped atomic.Bool
	entered, killed := make(chan struct{}), make(chan struct{})
	rec := &recorder{}
	cfg := baseConfig(t, rdb, "c1")
	cfg.Streams = func(context.Context) ([]string, error) {
		if dropped.Load() {
			return []string{live}, nil
		}
		return []string{live, lost}, nil
	}
	logs := captureLogs(t, &cfg)
	cfg.Handler = func(ctx context.Context, m feed.Message) error {
		if m.Payload["last"] != "" && rec.count(m.ID) == 0 {
			close(entered)
			<-killed // its ack goes to a dead master
		}
		return rec.handler(ctx, m)
	}
	c := mustOpen(t, cfg)
	want := []string{add(t, rdb, live), add(t, rdb, lost)}
	waitFor(t, 10*time.Second, "both games read", func() bool { return rec.count(want[0]) == 1 && rec.count(want[1]) == 1 })

	last := add(t, rdb, lost, "last", "yes")
	want = append(want, last)
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the lost game's last entry not handed to the handler")
	}
	doomed.Kill(t)
	close(killed)
	waitFor(t, 15*time.Second, "the ack to the dead master failed", func() bool { return logs.count("ack failed; will retry") > 0 })
	dropped.Store(true)

	// For 4 s, many times the static list's period (200 ms): the lost
	// stream is dropped from the list meanwhile, and the retries of its
	// ack must not hold the live game up.
	for i, end := 0, time.Now().Add(4*time.Second); time.Now().Before(end); i++ {
		id := add(t, rdb, live)
		waitFor(t, 5*time.Second, fmt.Sprintf("live entry %d read while the forgotten stream's master is down", i), handled1(rec, id))
		want = append(want, id)
		<-time.After(200 * time.Millisecond) // the pace of a game, not a wait for the consumer
	}

	doomed.Start(t)
	waitFor(t, 30*time.Second, "the kept ack sent once the master is back", func() bool {
		p, err := rdb.XPending(context.Background(), lost, group).Result()
		return err == nil && p.Count == 0
	})
	waitFor(t, 10*time.Second, "the lost stream forgotten", func() bool { return c.Stats().Known == 1 })
	id := add(t, rdb, live)
	waitFor(t, 5*time.Second, "the live game still read", handled1(rec, id))
	want = append(want, id)
	for _, id := range want {
		if n := rec.count(id); n != 1 {
			t.Errorf("%s handled %d times, want once", id, n)
		}
	}
}

// TestClusterStaticListBackAfterAside: a static list of two games, one
// quiet, the other on a master that dies and comes back, with a Block
// longer than pingFresh (1 s). While the second is set aside, each turn
// blocked a whole Block on the quiet game, and the answer of the dead
// node's PING, sent off the loop, was older than pingFresh whenever a turn
// came to take it: it was thrown away and the PING sent again, turn after
// turn, and the game was never read again (with the default Block, 1 s,
// now and then: a game of a slot whose keys a migration split was read
// 2.8-11 s after the move ended, against 1.2-1.3 s with a Block of 300
// ms). While streams are set aside the loop waits at most asideWait
// between turns.
func TestClusterStaticListBackAfterAside(t *testing.T) {
	ctx := context.Background()
	rc := redistest.MustStartCluster(t, redistest.ClusterOptions{Replicas: -1,
		Node: redistest.Options{NodeTimeout: noFailover, AOF: true}})
	rdb := rc.Client(t)
	doomed := spareMaster(t, rc, "c1")
	quiet, lost := stream(gameOn(t, rc, "quiet", doomed, false)), stream(gameOn(t, rc, "lost", doomed, true))
	rec := &recorder{}
	cfg := baseConfig(t, rdb, "c1", quiet, lost)
	cfg.Block = 2 * time.Second
	logs := captureLogs(t, &cfg)
	cfg.Handler = rec.handler
	mustOpen(t, cfg)
	id := add(t, rdb, lost)
	waitFor(t, 10*time.Second, "the game read", func() bool { return rec.count(id) == 1 })

	doomed.Kill(t)
	waitFor(t, 20*time.Second, "the game set aside", func() bool { return logs.count("streams not reachable") > 0 })
	doomed.Start(t)
	var back string
	waitFor(t, 30*time.Second, "the game written again", func() bool {
		id := minter.Next(time.Now())
		err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: lost, Values: []any{"id", id, "kind", "chat",
			"at", time.Now().UTC().Format(time.RFC3339), "player", "ana", "text", "back"}}).Err()
		if err == nil {
			back = id
		}
		return err == nil
	})
	// Within the node's retry (5 s at most) and its PING, with room for a
	// loaded host.
	waitFor(t, 20*time.Second, "the game read again once its master is back", func() bool { return rec.count(back) == 1 })
}
