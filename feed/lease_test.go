package feed_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/feed"
	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/internal/testkit/redistest"
)

// TestLeaseLostStopsReading: when another process holds the name (this one
// could not refresh in time), the consumer reports not ready and reads
// nothing until the lease is free again.
func TestLeaseLostStopsReading(t *testing.T) {
	ctx := context.Background()
	_, rdb := mustStart(t)
	s := stream("lost")
	var rec recorder
	cfg := baseConfig(t, rdb, "r1", s)
	cfg.Handler = rec.handler
	logs := captureLogs(t, &cfg)
	c := mustOpen(t, cfg)
	first := add(t, rdb, s)
	waitFor(t, 5*time.Second, "first entry", func() bool { return rec.count(first) == 1 })

	key := event.LeaseKey(group, "r1")
	rdb.Set(ctx, key, "someone-else", time.Minute)
	waitFor(t, 5*time.Second, "lease lost", func() bool { return errors.Is(c.Ready(), feed.ErrLeaseLost) })
	// A turn already under way may still finish its read. Once the loop
	// has said it reads nothing (a turn that found the lease not held)
	// no turn is under way: the loop is one goroutine.
	waitFor(t, 5*time.Second, "the loop to see the lease lost", func() bool { return logs.count("lease not held; reading nothing") >= 1 })
	refreshes := func() int64 { return commandCalls(t, rdb)["evalsha"] }
	twoRefreshes := func() {
		e0 := refreshes()
		waitFor(t, 5*time.Second, "two lease refreshes", func() bool { return refreshes() >= e0+2 })
	}
	reads := commandCalls(t, rdb)["xreadgroup"]
	during := add(t, rdb, s)
	twoRefreshes()
	st, _ := feed.Inspect(ctx, rdb, group, []string{s}, nil)
	if n := commandCalls(t, rdb)["xreadgroup"] - reads; n != 0 || rec.count(during) != 0 || st.Streams[0].Lag != 1 {
		t.Fatalf("read while the lease was another's: %d XREADGROUP, handled %d, lag %d", n, rec.count(during), st.Streams[0].Lag)
	}
	rdb.Del(ctx, key)
	waitFor(t, 5*time.Second, "lease re-taken and entry read", func() bool { return rec.count(during) == 1 })
	if err := c.Ready(); err != nil {
		t.Errorf("Ready = %v", err)
	}
}

// TestStuckCloseFreesLease: a Close that gives up on a loop stuck in its
// handler releases the name for good. The lease keeper lived as long as the
// loop, and its refresh takes a free key, so the stuck process took its
// released name back within LeaseTTL/3 and kept it: a replacement started
// under the name was refused (ErrConsumerTaken) until the stuck call
// returned, which may be never.
func TestStuckCloseFreesLease(t *testing.T) {
	ctx := context.Background()
	_, rdb := mustStart(t)
	s := stream("stuck-close")
	entered := make(chan struct{}, 1)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	cfg := baseConfig(t, rdb, "r1", s)
	cfg.LeaseTTL = 300 * time.Millisecond
	cfg.ShutdownGrace = 50 * time.Millisecond
	cfg.Handler = func(context.Context, feed.Message) error {
		select {
		case entered <- struct{}{}:
		default:
		}
		<-release // deaf to its context: a handler stuck in a call
		return nil
	}
	c := mustOpen(t, cfg)
	add(t, rdb, s)
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("handler never called")
	}
	c.Close() // gives up after ShutdownGrace and its slack

	key := event.LeaseKey(group, "r1")
	// Measured window: five of the old keeper's periods (LeaseTTL/3).
	for end := time.Now().Add(500 * time.Millisecond); time.Now().Before(end); {
		if holder, err := rdb.Get(ctx, key).Result(); err == nil {
			t.Fatalf("lease %s taken back by %q after Close", key, holder)
		}
	}
	cfg2 := baseConfig(t, rdb, "r1", s)
	cfg2.LeaseTTL = cfg.LeaseTTL
	cfg2.Handler = func(context.Context, feed.Message) error { return nil }
	c2, err := feed.Open(ctx, cfg2)
	if err != nil {
		t.Fatalf("replacement under the same name: %v", err)
	}
	defer c2.Close()
	waitFor(t, 5*time.Second, "replacement ready", func() bool { return c2.Ready() == nil })
}

// TestStuckCloseFreesEntries: the entries in the hands of a handler that
// Close gave up on are left to peers. The keep-alive of entries in hand
// went on refreshing their idle time while the handler hung, so a process
// that serves on after its consumer closed (a store file deleted) kept them
// from every peer for as long as the handler hung.
func TestStuckCloseFreesEntries(t *testing.T) {
	_, rdb := mustStart(t)
	s := stream("stuck-entries")
	entered := make(chan struct{}, 1)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	cfg := baseConfig(t, rdb, "r1", s)
	cfg.ShutdownGrace = 50 * time.Millisecond
	cfg.Handler = func(context.Context, feed.Message) error {
		select {
		case entered <- struct{}{}:
		default:
		}
		<-release
		return nil
	}
	c := mustOpen(t, cfg)
	id := add(t, rdb, s)
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("handler never called")
	}
	c.Close()

	var rec recorder
	peer := baseConfig(t, rdb, "r2", s)
	peer.Handler = rec.handler
	mustOpen(t, peer)
	waitFor(t, 10*time.Second, "the stuck entry claimed by a peer", func() bool { return rec.count(id) == 1 })
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

// TestReadySaysRedisRefuses: a Redis that answers every call with an error
// (the URL's database index past the server's, a password it does not
// takes for another) is not a silent one, and Ready says what it answers. Ready said
// "redis has not answered yet", as for a server that is not there, and
// the reason was only in the logs.
func TestReadySaysRedisRefuses(t *testing.T) {
	s, admin := mustStart(t)
	if err := admin.Do(context.Background(), "ACL", "SETUSER", "feeder", "on", ">right", "~*", "&*", "+@all").Err(); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		opt  redis.Options
		want string
	}{
		{"database out of range", redis.Options{DB: 99}, "DB index is out of range"},
		{"wrong password", redis.Options{Username: "feeder", Password: "wrong"}, "WRONGPASS"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			opt := tt.opt
			opt.Addr = s.Addr
			rdb := redis.NewClient(&opt)
			t.Cleanup(func() { rdb.Close() })
			var rec recorder
			cfg := baseConfig(t, rdb, "r1", stream("refused"))
			cfg.Handler = rec.handler
			c := mustOpen(t, cfg)
			var err error
			waitFor(t, 5*time.Second, "Ready to say what Redis answers", func() bool {
				err = c.Ready()
				return err != nil && strings.Contains(err.Error(), tt.want)
			})
			if !errors.Is(err, feed.ErrNotReady) || !strings.Contains(err.Error(), "refuses") {
				t.Errorf("Ready = %v, want ErrNotReady saying redis refuses", err)
			}
		})
	}
}

// A take of the lease that Redis ran but whose reply the client never read
// (Redis stopped: the read timed out, go-redis sent the take again on
// another connection, and Redis, back, ran both) is this process's own:
// the second take finds the key holding its own token and takes it. Until
// 7 Dec 2026 it read as held by another, and a renderer whose restart met
// a stopped Redis refused to start, its name "held by" itself (a chaos run
// in CI, where Redis was SIGSTOPped for 5 s).
func TestLeaseTakeRetriedIsOwn(t *testing.T) {
	_, rdb := mustStart(t)
	ctx := context.Background()
	if err := feed.AcquireLeaseTwice(ctx, rdb, group, "r1", 5*time.Second); err != nil {
		t.Fatalf("the take sent again: %v, want the lease this process holds", err)
	}
	ttl, err := rdb.PTTL(ctx, event.LeaseKey(group, "r1")).Result()
	if err != nil || ttl <= 0 || ttl > 5*time.Second {
		t.Fatalf("the lease's expiry after the second take: %v, %v; want within 5s", ttl, err)
	}
	// Another process's take is still refused.
	if err := feed.AcquireLeaseOnly(ctx, rdb, group, "r1", 5*time.Second); !errors.Is(err, feed.ErrConsumerTaken) {
		t.Fatalf("another process's take: %v, want ErrConsumerTaken", err)
	}
}
