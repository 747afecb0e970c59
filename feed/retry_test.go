package feed_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/feed"
	"github.com/codemojex/feed/internal/event"
)

// TestAttemptsPinned pins Message.Attempts to the server's delivery count:
// 1 on the first delivery (">"), +1 on each re-delivery by XAUTOCLAIM, and
// +1 on the own pending list's recovery at a restart.
func TestAttemptsPinned(t *testing.T) {
	_, rdb := mustStart(t)
	s := stream("attempts")
	var rec recorder
	fail := func(ctx context.Context, m feed.Message) error {
		rec.add(m)
		if m.Attempts < 3 {
			return errors.New("not yet")
		}
		return nil
	}
	cfg := baseConfig(t, rdb, "r1", s)
	cfg.Handler = fail
	c := mustOpen(t, cfg)
	id := add(t, rdb, s)
	waitFor(t, 5*time.Second, "three deliveries", func() bool { return rec.count(id) == 3 })
	waitFor(t, 10*time.Second, "acked", func() bool { return pending(t, rdb, s) == 0 })
	for i, m := range rec.all() {
		if m.Attempts != int64(i+1) {
			t.Errorf("delivery %d has attempts %d", i+1, m.Attempts)
		}
	}
	c.Close()

	// Restart path: first delivery fails, the consumer restarts with a long
	// MinIdle, and recovers its own pending entry with attempts 2.
	var rec2 recorder
	cfg.MinIdle = time.Minute
	cfg.Handler = func(ctx context.Context, m feed.Message) error {
		rec2.add(m)
		p, err := rdb.XPendingExt(ctx, &redis.XPendingExtArgs{Stream: s, Group: group, Start: m.Position, End: m.Position, Count: 1}).Result()
		if err != nil || len(p) != 1 || p[0].RetryCount != m.Attempts {
			t.Errorf("attempts %d, server says %v (%v)", m.Attempts, p, err)
		}
		if m.Attempts == 1 {
			return errors.New("first try fails")
		}
		return nil
	}
	c = mustOpen(t, cfg)
	id2 := add(t, rdb, s)
	waitFor(t, 5*time.Second, "first delivery", func() bool { return rec2.count(id2) == 1 })
	waitFor(t, 10*time.Second, "failure counted", func() bool { return c.Stats().Failed == 1 })
	c.Close()
	c = mustOpen(t, cfg)
	waitFor(t, 5*time.Second, "recovered", func() bool { return rec2.count(id2) == 2 })
	if got := rec2.all()[1].Attempts; got != 2 {
		t.Errorf("recovered with attempts %d, want 2", got)
	}
	if st := c.Stats(); st.Recovered != 1 {
		t.Errorf("stats %+v, want one recovered", st)
	}
	waitFor(t, 10*time.Second, "acked", func() bool { return pending(t, rdb, s) == 0 })
}

// TestFailuresRetriedThenDeadNoHotLoop is proof 3: errors and panics leave
// the entry pending, it comes back no sooner than MinIdle, after
// PoisonAfter deliveries it is dead-lettered with its reason and acked, and
// the read and claim calls stay bounded meanwhile.
func TestFailuresRetriedThenDeadNoHotLoop(t *testing.T) {
	for _, mode := range []string{"error", "panic"} {
		t.Run(mode, func(t *testing.T) {
			_, rdb := mustStart(t)
			s := stream("fail")
			type call struct {
				at       time.Time
				attempts int64
			}
			var mu sync.Mutex
			var calls []call
			cfg := baseConfig(t, rdb, "r1", s)
			cfg.PoisonAfter = 4
			cfg.Handler = func(ctx context.Context, m feed.Message) error {
				at, err := deliveredAt(ctx, rdb, m)
				if err != nil {
					t.Error(err)
				}
				mu.Lock()
				calls = append(calls, call{at, m.Attempts})
				mu.Unlock()
				if mode == "panic" {
					panic("boom")
				}
				return errors.New("boom")
			}
			before := commandCalls(t, rdb)
			start := time.Now()
			c := mustOpen(t, cfg)
			add(t, rdb, s)
			dk := event.DeadKey("fail")
			waitFor(t, 10*time.Second, "dead letter", func() bool { n, _ := rdb.XLen(context.Background(), dk).Result(); return n == 1 })
			elapsed := time.Since(start)
			after := commandCalls(t, rdb)
			mu.Lock()
			defer mu.Unlock()
			if len(calls) != 4 {
				t.Fatalf("handler called %d times, want 4", len(calls))
			}
			for i, cl := range calls {
				if cl.attempts != int64(i+1) {
					t.Errorf("call %d attempts %d", i, cl.attempts)
				}
				// When the server delivered it, by its clock, to the
				// millisecond each (deliveredAt).
				if i > 0 && cl.at.Sub(calls[i-1].at) < cfg.MinIdle-2*time.Millisecond {
					t.Errorf("retry %d after %v, sooner than MinIdle %v", i, cl.at.Sub(calls[i-1].at), cfg.MinIdle)
				}
			}
			if p := pending(t, rdb, s); p != 0 {
				t.Errorf("pending %d after dead-letter", p)
			}
			dead, _ := feed.ListDead(context.Background(), rdb, dk, 0)
			if len(dead) != 1 || dead[0].Attempts != 4 || !strings.Contains(dead[0].Reason, "failed 4 times") || !strings.Contains(dead[0].Reason, "boom") {
				t.Errorf("dead letter %+v", dead)
			}
			waitFor(t, 10*time.Second, "dead counted", func() bool { return c.Stats().Dead == 1 })
			st := c.Stats()
			if st.Failed != 3 || (mode == "panic" && st.Panics != 3) {
				t.Errorf("stats %+v", st)
			}
			// Bounded: a read per Block and a claim per ClaimEvery, with
			// room for the turns that handling cut short; a hot loop makes
			// thousands in this time.
			reads := after["xreadgroup"] - before["xreadgroup"]
			claims := after["xautoclaim"] - before["xautoclaim"]
			maxReads := int64(elapsed/cfg.Block)*2 + 20
			maxClaims := int64(elapsed/cfg.ClaimEvery)*2 + 20
			t.Logf("%v: %d XREADGROUP (max %d), %d XAUTOCLAIM (max %d)", elapsed, reads, maxReads, claims, maxClaims)
			if reads > maxReads || claims > maxClaims {
				t.Errorf("hot loop: %d XREADGROUP, %d XAUTOCLAIM in %v", reads, claims, elapsed)
			}
		})
	}
}

// TestTrimmedWhilePending is proof 4 on both paths: an entry deleted while
// pending is acked and counted by the own pending list's recovery, and
// dropped and counted by XAUTOCLAIM.
func TestTrimmedWhilePending(t *testing.T) {
	ctx := context.Background()
	_, rdb := mustStart(t)
	s := stream("trim")
	failAll := func(context.Context, feed.Message) error { return errors.New("later") }

	// Leave three entries pending with r1, then delete two of them.
	cfg := baseConfig(t, rdb, "r1", s)
	cfg.MinIdle = time.Minute
	cfg.Handler = failAll
	c := mustOpen(t, cfg)
	var pos []string
	for range 3 {
		add(t, rdb, s)
	}
	waitFor(t, 5*time.Second, "three failures", func() bool { return c.Stats().Failed == 3 })
	c.Close()
	xs, _ := rdb.XRange(ctx, s, "-", "+").Result()
	for _, x := range xs {
		pos = append(pos, x.ID)
	}
	rdb.XDel(ctx, s, pos[0], pos[1])

	t.Run("pending path", func(t *testing.T) {
		var rec recorder
		cfg.Handler = rec.handler
		c := mustOpen(t, cfg)
		waitFor(t, 5*time.Second, "recovered", func() bool { return c.Stats().Recovered == 1 && len(rec.all()) == 1 })
		st := c.Stats()
		if st.Trimmed != 2 || len(rec.all()) != 1 || rec.all()[0].Position != pos[2] {
			t.Errorf("stats %+v, handled %v", st, rec.all())
		}
		waitFor(t, 10*time.Second, "acked", func() bool { return pending(t, rdb, s) == 0 })
		c.Close()
	})

	t.Run("claim path", func(t *testing.T) {
		// A dead peer leaves two entries pending; one is trimmed away.
		cfg := baseConfig(t, rdb, "peer", s)
		cfg.MinIdle = time.Minute
		cfg.Handler = failAll
		peer := mustOpen(t, cfg)
		add(t, rdb, s)
		add(t, rdb, s)
		waitFor(t, 5*time.Second, "peer failures", func() bool { return peer.Stats().Failed == 2 })
		peer.Close()
		p, _ := rdb.XPendingExt(ctx, &redis.XPendingExtArgs{Stream: s, Group: group, Start: "-", End: "+", Count: 10}).Result()
		if len(p) != 2 {
			t.Fatalf("pending %v", p)
		}
		if err := rdb.XTrimMaxLen(ctx, s, 1).Err(); err != nil {
			t.Fatal(err)
		}
		var rec recorder
		cfg = baseConfig(t, rdb, "survivor", s)
		cfg.Handler = rec.handler
		c := mustOpen(t, cfg)
		waitFor(t, 5*time.Second, "claimed", func() bool { return c.Stats().Acked == 1 })
		waitFor(t, 10*time.Second, "deleted id counted", func() bool { return c.Stats().ClaimDeleted == 1 })
		if got := rec.all(); len(got) != 1 || got[0].Position != p[1].ID || got[0].Attempts != 2 {
			t.Errorf("handled %+v", got)
		}
		// Redis 7 XAUTOCLAIM removed the deleted id from the pending list
		// itself: nothing is left to ack.
		if n := pending(t, rdb, s); n != 0 {
			t.Errorf("pending %d", n)
		}
	})
}

// TestSlowHandlerNotStolen is proof 7: a handler slower than MinIdle keeps
// its entries (their idle time is refreshed), so a live peer does not
// re-deliver them.
func TestSlowHandlerNotStolen(t *testing.T) {
	_, rdb := mustStart(t)
	s := stream("slow")
	started := make(chan struct{})
	var once sync.Once
	// The peer claims what has been idle 1 s; the slow side refreshes its
	// entry every 150 ms (its MinIdle / 2), so only a stall of 850 ms on
	// a loaded host, not one of 150 ms, lets the peer in while the
	// refreshes work. Without them the entry idles the handler's 4 s.
	var peerRec recorder
	pcfg := baseConfig(t, rdb, "peer", s)
	pcfg.Handler = peerRec.handler
	pcfg.MinIdle = time.Second
	cfg := baseConfig(t, rdb, "slow", s)
	var slowRec recorder
	cfg.Handler = func(ctx context.Context, m feed.Message) error {
		slowRec.add(m)
		once.Do(func() { close(started) })
		select { // the work under test takes 4× the peer's MinIdle
		case <-time.After(4 * pcfg.MinIdle):
		case <-ctx.Done():
			return ctx.Err()
		}
		return nil
	}
	slow := mustOpen(t, cfg)
	id := add(t, rdb, s)
	<-started
	peer := mustOpen(t, pcfg)
	waitFor(t, 20*time.Second, "slow handler done", func() bool { return slow.Stats().Acked == 1 })
	if n := peerRec.count(id); n != 0 {
		t.Errorf("peer handled the entry in progress %d times", n)
	}
	if st := peer.Stats(); st.Claimed != 0 {
		t.Errorf("peer claimed %d entries", st.Claimed)
	}
	if st := slow.Stats(); st.KeptAlive < 2 {
		t.Errorf("kept alive %d times, want at least 2", st.KeptAlive)
	}
	if slowRec.count(id) != 1 {
		t.Errorf("slow handler ran %d times", slowRec.count(id))
	}
}

// TestWrongTypeIsLoudOthersGoOn is proof 8.
func TestWrongTypeIsLoudOthersGoOn(t *testing.T) {
	ctx := context.Background()
	_, rdb := mustStart(t)
	good1, bad, good2 := stream("good1"), stream("bad"), stream("good2")
	rdb.Set(ctx, bad, "not a stream", 0)
	var rec recorder
	cfg := baseConfig(t, rdb, "r1", good1, bad, good2)
	cfg.Handler = rec.handler
	c := mustOpen(t, cfg)
	a, b := add(t, rdb, good1), add(t, rdb, good2)
	waitFor(t, 5*time.Second, "good streams consumed", func() bool { return rec.count(a) == 1 && rec.count(b) == 1 })
	if st := c.Stats(); st.GroupErrors < 1 {
		t.Errorf("group errors %d", st.GroupErrors)
	}
	if err := c.Ready(); err != nil {
		t.Errorf("one bad game made the consumer unready: %v", err)
	}
	st, err := feed.Inspect(ctx, rdb, group, []string{good1, bad, good2}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(st.Streams[1].Err, "WRONGTYPE") || st.Streams[0].Err != "" || st.Streams[2].Err != "" {
		t.Errorf("inspect errors: %q %q %q", st.Streams[0].Err, st.Streams[1].Err, st.Streams[2].Err)
	}
	// Retried with backoff, not every turn.
	creates := commandCalls(t, rdb)["xgroup|create"]
	if creates > 10 {
		t.Errorf("%d XGROUP CREATE calls: the failing door is retried too often", creates)
	}
	// Fixed: the key becomes a stream again and is picked up on a retry.
	rdb.Del(ctx, bad)
	fixed := add(t, rdb, bad)
	waitFor(t, 5*time.Second, "fixed stream consumed", func() bool { return rec.count(fixed) == 1 })
}

// TestCrashLoopEntryDeadLettered: an entry delivered more than PoisonAfter
// times without any verdict (its handler kept killing the process) is
// dead-lettered without being handled again.
func TestCrashLoopEntryDeadLettered(t *testing.T) {
	ctx := context.Background()
	_, rdb := mustStart(t)
	s := stream("crashloop")
	rdb.XGroupCreateMkStream(ctx, s, group, "0")
	id := add(t, rdb, s)
	res, _ := rdb.XReadGroup(ctx, &redis.XReadGroupArgs{Group: group, Consumer: "gone", Streams: []string{s, ">"}, Count: 1, Block: -1}).Result()
	pos := res[0].Messages[0].ID
	// Five deliveries so far, as if five processes died handling it.
	if err := rdb.Do(ctx, "XCLAIM", s, group, "gone", 0, pos, "RETRYCOUNT", 5, "JUSTID").Err(); err != nil {
		t.Fatal(err)
	}
	var rec recorder
	cfg := baseConfig(t, rdb, "r1", s)
	cfg.Handler = rec.handler
	c := mustOpen(t, cfg)
	waitFor(t, 5*time.Second, "dead letter", func() bool { return c.Stats().Dead == 1 })
	if rec.count(id) != 0 {
		t.Error("handled again")
	}
	dead, _ := feed.ListDead(ctx, rdb, event.DeadKey("crashloop"), 0)
	if len(dead) != 1 || dead[0].Attempts != 6 || !strings.Contains(dead[0].Reason, "delivered 6 times without a verdict") {
		t.Errorf("dead %+v", dead)
	}
	if n := pending(t, rdb, s); n != 0 {
		t.Errorf("pending %d", n)
	}
}

// TestRecoveredFailureWaitsMinIdle: an entry of the own pending list that
// fails again when it is recovered at a restart stays behind the
// recovery's cursor, and comes back by a claim no sooner than MinIdle
// later; it is not read again at once by the same recovery, every read
// one more delivery, until it is dead-lettered in a hot loop.
func TestRecoveredFailureWaitsMinIdle(t *testing.T) {
	ctx := context.Background()
	_, rdb := mustStart(t)
	s := stream("recfail")
	add(t, rdb, s)
	// This consumer's earlier life read the entry and died with it.
	pendingWith(t, rdb, s, "r1")
	var mu sync.Mutex
	var at []time.Time
	cfg := baseConfig(t, rdb, "r1", s)
	cfg.PoisonAfter = 4
	cfg.Handler = func(ctx context.Context, m feed.Message) error {
		when, err := deliveredAt(ctx, rdb, m)
		if err != nil {
			t.Error(err)
		}
		mu.Lock()
		at = append(at, when)
		mu.Unlock()
		return errors.New("boom")
	}
	mustOpen(t, cfg)
	dk := event.DeadKey("recfail")
	waitFor(t, 10*time.Second, "dead letter", func() bool { n, _ := rdb.XLen(ctx, dk).Result(); return n == 1 })
	mu.Lock()
	defer mu.Unlock()
	if len(at) != 3 { // deliveries 2 (the recovery), 3 and 4 (claims)
		t.Errorf("handler called %d times, want 3", len(at))
	}
	for i := 1; i < len(at); i++ {
		// When the server delivered it, by its clock, to the
		// millisecond each (deliveredAt).
		if d := at[i].Sub(at[i-1]); d < cfg.MinIdle-2*time.Millisecond {
			t.Errorf("retry %d after %v, sooner than MinIdle %v", i, d, cfg.MinIdle)
		}
	}
}

// TestFailedEntryOfColdGameRetried: an entry that failed is claimed again
// MinIdle later also in a game followed through the registry that went
// cold meanwhile (out of the hot streams, no census due for an hour): the
// failure itself marks its stream as one with entries pending.
func TestFailedEntryOfColdGameRetried(t *testing.T) {
	_, rdb := mustStart(t)
	cfg := baseConfig(t, rdb, "r1")
	cfg.Streams, cfg.Registry = nil, event.RegistryKey
	cfg.WakeEvery, cfg.ActiveWindow = 50*time.Millisecond, time.Millisecond // cold at once
	cfg.SweepEvery, cfg.CensusEvery = time.Hour, time.Hour
	var rec recorder
	cfg.Handler = func(ctx context.Context, m feed.Message) error {
		rec.add(m)
		if m.Attempts < 2 {
			return errors.New("not yet")
		}
		return nil
	}
	c := mustOpen(t, cfg)
	registerAt(t, rdb, []string{"cold-1"}, time.Now()) // its one entry
	waitFor(t, 10*time.Second, "the failed entry claimed and handled", func() bool { return c.Stats().Acked == 1 })
	for id, n := range rec.ids() {
		if n != 2 {
			t.Errorf("%s handled %d times, want 2", id, n)
		}
	}
}
