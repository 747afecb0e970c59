package feed_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/codemojex/feed/feed"
	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/internal/testkit/redistest"
)

// TestClusterHungMasterOthersReadOn: one master of three hangs (SIGSTOP:
// its connections stay open and nothing answers, as in a partition),
// holding a hot game with an entry pending, so that every step meets it:
// the hot read, the claims, the census. The other masters' games must be
// read on, an entry waiting at most about nodeTimeout once, and once the
// master answers again (SIGCONT) the pending entry is claimed and
// everything is handled once. The first read that met the hung node held
// the turn for 10 s (its deadline, through go-redis's retries), and
// go-redis's cluster pipeline then failed the other nodes' reads with it:
// their entries, delivered by the server, waited for a claim.
func TestClusterHungMasterOthersReadOn(t *testing.T) {
	ctx := context.Background()
	rc := redistest.MustStartCluster(t, redistest.ClusterOptions{Replicas: -1,
		Node: redistest.Options{NodeTimeout: noFailover}})
	rdb := rc.Client(t)
	hung := spareMaster(t, rc, "c1")
	live, stuck := gameOn(t, rc, "live", hung, false), gameOn(t, rc, "stuck", hung, true)

	rec := &recorder{}
	var mended atomic.Bool // the flaky entry fails until then
	cfg := baseConfig(t, rdb, "c1")
	cfg.Streams, cfg.Registry = nil, event.RegistryKey
	cfg.WakeEvery, cfg.SweepEvery, cfg.ActiveWindow = 50*time.Millisecond, time.Minute, time.Minute
	cfg.PoisonAfter = 1000
	cfg.Handler = func(ctx context.Context, m feed.Message) error {
		if m.Payload["flaky"] != "" && !mended.Load() {
			return errors.New("flaky until its master answers again")
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
	want := []string{write(live), write(stuck)}
	waitFor(t, 10*time.Second, "both games read", func() bool { return handled(want[0])() && handled(want[1])() })
	flaky := write(stuck, "flaky", "yes")
	waitFor(t, 10*time.Second, "the flaky entry failed and pending", func() bool {
		return c.Stats().Failed > 0 && pending(t, rdb, stream(stuck)) == 1
	})
	want = append(want, flaky)
	waitFor(t, 5*time.Second, "both games hot", func() bool { return c.Stats().Hot == 2 })

	hung.Pause(t)
	resumed := false
	defer func() {
		if !resumed {
			hung.Resume(t)
		}
	}()
	start := time.Now()
	var worst time.Duration
	slow := 0
	for i := 0; time.Since(start) < 15*time.Second; i++ {
		id, at := write(live), time.Now()
		waitFor(t, 30*time.Second, fmt.Sprintf("live entry %d read while another master hangs", i), handled(id))
		want = append(want, id)
		d := time.Since(at)
		worst = max(worst, d)
		if d > retryStall {
			slow++
		}
		if d > 300*time.Millisecond {
			t.Logf("live entry %d read after %v (at %v of the pause)", i, d.Round(time.Millisecond), at.Sub(start).Round(time.Millisecond))
		}
		<-time.After(100 * time.Millisecond) // the pace of a game, not a wait for the consumer
	}
	t.Logf("one master of three hung for 15 s: a live game's entry read after %v at worst", worst.Round(time.Millisecond))

	hung.Resume(t)
	resumed = true
	mended.Store(true)
	waitFor(t, 30*time.Second, "the flaky entry claimed and handled once its master answers", handled(flaky))
	back := write(stuck)
	waitFor(t, 10*time.Second, "the stuck game read again", handled(back))
	want = append(want, back)
	for _, id := range want {
		if n := rec.count(id); n != 1 {
			t.Errorf("%s handled %d times, want once", id, n)
		}
	}
	// Read by the reads, none by a claim: no reply of the live game's node
	// was lost with the hung node's.
	for _, m := range rec.all() {
		if m.Stream == stream(live) && m.Attempts != 1 {
			t.Errorf("live entry %s handled at delivery %d; want each read at once, none left for a claim", m.ID, m.Attempts)
		}
	}
	waitFor(t, 10*time.Second, "nothing left pending", func() bool {
		return pending(t, rdb, stream(live)) == 0 && pending(t, rdb, stream(stuck)) == 0
	})
	t.Logf("stats: %+v", c.Stats())
	if worst > hungStallMax {
		t.Errorf("a live game's entry waited %v while another master hung; want at most %v", worst.Round(time.Millisecond), hungStallMax)
	}
	if slow > slowMax {
		t.Errorf("%d live entries waited more than %v while another master hung; want the node's timeout once, and %d more at most (a loaded host)", slow, retryStall, slowMax-1)
	}
}

// retryStall and slowMax bound the entries that wait long while a master
// hangs: the first step that meets it waits out the node's timeout once;
// after that, until 5 Dec 2026, the PING of each of its retries (100 ms
// doubling to 5 s) held the loop goroutine for its whole probeTimeout, and
// 5–8 entries in these tests' windows waited 0.4–0.6 s.
const (
	retryStall = 350 * time.Millisecond
	slowMax    = 3
)

// hungStallMax is the longest a game's entry may wait while another
// master of its cluster hangs: the node's timeout (2 s) once, with room
// for a loaded host.
const hungStallMax = 3 * time.Second

// TestHungRedisResumed: a single Redis hangs (SIGSTOP) while an entry is in
// the handler, so that its ack meets the silent server, and then answers
// again (SIGCONT). The consumer must read again promptly, and every entry
// be handled once and acked: the one in hand, those written just before
// the pause, and those written after.
func TestHungRedisResumed(t *testing.T) {
	srv, rdb := mustStart(t)
	s := stream("hung")
	rec := &recorder{}
	inHand, release := make(chan struct{}, 1), make(chan struct{})
	cfg := baseConfig(t, rdb, "r1", s)
	cfg.Handler = func(ctx context.Context, m feed.Message) error {
		if m.Payload["slow"] != "" {
			select {
			case inHand <- struct{}{}:
			default:
			}
			<-release
		}
		return rec.handler(ctx, m)
	}
	c := mustOpen(t, cfg)
	var want []string
	for range 5 {
		want = append(want, add(t, rdb, s))
	}
	slow := add(t, rdb, s, "slow", "yes")
	want = append(want, slow)
	<-inHand
	srv.Pause(t)
	resumed := false
	defer func() {
		if !resumed {
			srv.Resume(t)
		}
	}()
	close(release) // its ack meets the silent server
	waitFor(t, 15*time.Second, "not ready while hung", func() bool { return c.Ready() != nil })
	// Past the backoff's cap, so that the loop waits its longest.
	<-time.After(6 * time.Second)
	srv.Resume(t)
	resumed = true
	at := time.Now()
	id := add(t, rdb, s)
	waitFor(t, 20*time.Second, "an entry written after the resume read", handled1(rec, id))
	t.Logf("read again %v after the resume", time.Since(at).Round(time.Millisecond))
	want = append(want, id)
	if d := time.Since(at); d > 6*time.Second {
		t.Errorf("the first entry after the resume read after %v; want within 6 s", d.Round(time.Millisecond))
	}
	for range 5 {
		want = append(want, add(t, rdb, s))
	}
	waitFor(t, 20*time.Second, "every entry handled", func() bool { return len(rec.ids()) == len(want) })
	waitFor(t, 20*time.Second, "nothing pending", func() bool { return pending(t, rdb, s) == 0 })
	for _, id := range want {
		if n := rec.count(id); n != 1 {
			t.Errorf("%s handled %d times, want once", id, n)
		}
	}
	t.Logf("stats: %+v", c.Stats())
}

// TestClusterHungRegistryMasterOthersReadOn: the registry's master hangs
// (SIGSTOP) while a game of another master is written. Its entries must
// go on being read, waiting at most about nodeTimeout once, and once the
// master answers again a new game is found. Every beat waited for its
// deadline (5 s) on the hung node, every WakeEvery, so every game's
// entries waited about 5 s for as long as the master hung.
func TestClusterHungRegistryMasterOthersReadOn(t *testing.T) {
	ctx := context.Background()
	rc, rdb, hung := registryCluster(t)
	live := gameOn(t, rc, "live", hung, false)
	rec := &recorder{}
	cfg := baseConfig(t, rdb, "c1")
	cfg.Streams, cfg.Registry = nil, event.RegistryKey
	cfg.WakeEvery, cfg.SweepEvery, cfg.ActiveWindow = 50*time.Millisecond, time.Minute, time.Minute
	cfg.Handler = rec.handler
	c := mustOpen(t, cfg)
	first := add(t, rdb, stream(live))
	if err := rdb.ZAddGT(ctx, event.RegistryKey, redisZ(live)).Err(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the live game read", handled1(rec, first))

	hung.Pause(t)
	resumed := false
	defer func() {
		if !resumed {
			hung.Resume(t)
		}
	}()
	start := time.Now()
	var worst time.Duration
	slow := 0
	for i := 0; time.Since(start) < 10*time.Second; i++ {
		id, at := add(t, rdb, stream(live)), time.Now()
		waitFor(t, 30*time.Second, fmt.Sprintf("live entry %d read while the registry's master hangs", i), handled1(rec, id))
		d := time.Since(at)
		worst = max(worst, d)
		if d > retryStall {
			slow++
		}
		if d > 300*time.Millisecond {
			t.Logf("live entry %d read after %v (at %v of the pause)", i, d.Round(time.Millisecond), at.Sub(start).Round(time.Millisecond))
		}
		<-time.After(100 * time.Millisecond) // the pace of a game, not a wait for the consumer
	}
	t.Logf("the registry's master hung for 10 s: a live game's entry read after %v at worst", worst.Round(time.Millisecond))

	hung.Resume(t)
	resumed = true
	late := gameOn(t, rc, "late", hung, false)
	id := add(t, rdb, stream(late))
	if err := rdb.ZAddGT(ctx, event.RegistryKey, redisZ(late)).Err(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "a new game found once the registry answers", handled1(rec, id))
	t.Logf("stats: %+v", c.Stats())
	if worst > hungStallMax {
		t.Errorf("a live game's entry waited %v while the registry's master hung; want at most %v", worst.Round(time.Millisecond), hungStallMax)
	}
	if slow > slowMax {
		t.Errorf("%d live entries waited more than %v while the registry's master hung; want the node's timeout once, and %d more at most (a loaded host)", slow, retryStall, slowMax-1)
	}
}

// TestClusterInspectHungMaster: one master of three hangs (SIGSTOP). The
// status (/status, /api/status, feedctl status) reports the other masters'
// games within about the node's timeout, and the hung one's game with its
// error. Until 5 Dec 2026 Inspect sent go-redis's cluster pipeline, which
// waits for every node's share until its context ends and then fails the
// replies of the nodes that answered too: the status took the caller's
// whole deadline and then reported that no stream answered.
func TestClusterInspectHungMaster(t *testing.T) {
	rdb, hung, live, stuck := mustReadSpareMastersGame(t, "stuck")

	hung.Pause(t)
	defer hung.Resume(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	st, err := feed.Inspect(ctx, rdb, group, []string{live, stuck}, nil)
	took := time.Since(start)
	t.Logf("Inspect with one master of three hung took %v", took.Round(time.Millisecond))
	if err != nil {
		t.Fatalf("Inspect with one master of three hung: %v; want the others reported", err)
	}
	if took > hungStallMax {
		t.Errorf("Inspect took %v; want at most %v", took.Round(time.Millisecond), hungStallMax)
	}
	if s := st.Streams[0]; s.Err != "" || s.Length != 1 || s.Lag != 0 || len(s.Consumers) != 1 || !s.Consumers[0].Alive {
		t.Errorf("the live master's game: %+v; want length 1, lag 0, c1 alive, no error", s)
	}
	if s := st.Streams[1]; s.Err == "" || s.Lag != -1 {
		t.Errorf("the hung master's game: %+v; want its error and lag -1", s)
	}
}
