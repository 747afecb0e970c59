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
