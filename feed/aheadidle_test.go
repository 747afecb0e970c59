package feed_test

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/feed"
	"github.com/codemojex/feed/internal/event"
)

// TestReadAheadPastMinIdle: a batch read ahead while the batch before it
// commits sits in this consumer's pending list, unhandled and not kept
// alive, for as long as that commit runs. When the commit outlasts
// MinIdle, a live peer's XAUTOCLAIM takes the read-ahead entries (their
// delivery count goes to 2) and handles them. The consumer that read them
// ahead must then not handle them again as new entries with Attempts 1
// (the server says 2, and the peer has them): each entry is handled once.
func TestReadAheadPastMinIdle(t *testing.T) {
	_, rdb := mustStart(t)
	key := stream("ahead-idle")
	const count = 5
	for range 2 * count {
		add(t, rdb, key)
	}

	var (
		mu        sync.Mutex
		handled   = map[string][]string{} // EVT id → who handled it, with which Attempts
		prepared  = make(chan struct{})
		prepOnce  sync.Once
		release   = make(chan struct{})
		firstOnce sync.Once
	)
	record := func(who string, m feed.Message) {
		mu.Lock()
		handled[m.ID] = append(handled[m.ID], who+":"+itoa(int(m.Attempts)))
		mu.Unlock()
	}
	handledBy := func(id string) int {
		mu.Lock()
		defer mu.Unlock()
		return len(handled[id])
	}

	cfgA := baseConfig(t, rdb, "a", key)
	cfgA.Count = count
	cfgA.MinIdle = time.Second
	cfgA.BatchHandler = func(ctx context.Context, ms []feed.Message) []error {
		first := false
		firstOnce.Do(func() { first = true })
		if first {
			// The first batch commits slowly: until the peer has
			// taken what was read ahead meanwhile.
			select {
			case <-release:
			case <-time.After(20 * time.Second):
			}
		}
		for _, m := range ms {
			record("a", m)
		}
		return make([]error, len(ms))
	}
	cfgA.Prepare = func(ctx context.Context, ms []feed.Message) func(context.Context) []error {
		prepOnce.Do(func() { close(prepared) })
		return func(ctx context.Context) []error {
			for _, m := range ms {
				record("a", m)
			}
			return make([]error, len(ms))
		}
	}
	mustOpen(t, cfgA)

	select {
	case <-prepared:
	case <-time.After(10 * time.Second):
		t.Fatal("nothing was read ahead")
	}
	// Everything is delivered to a now: the first batch in its handler
	// (kept alive), the second read ahead. A live peer claims what goes
	// idle: after 2 s, so that only a stall of 1.5 s in a's keep-alive
	// (every 500 ms) could let it take the first batch too.
	cfgB := baseConfig(t, rdb, "b", key)
	cfgB.MinIdle = 2 * time.Second
	cfgB.Handler = func(ctx context.Context, m feed.Message) error {
		record("b", m)
		return nil
	}
	b := mustOpen(t, cfgB)
	waitFor(t, 10*time.Second, "the peer claims the entries read ahead", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(handled) >= count
	})
	b.Close()
	close(release)

	// Only a reads now: once it has handled an entry written after, it
	// is done with the batch it read ahead.
	last := add(t, rdb, key)
	waitFor(t, 10*time.Second, "a handles the entry written last", func() bool { return handledBy(last) > 0 })
	waitFor(t, 10*time.Second, "nothing pending", func() bool { return pending(t, rdb, key) == 0 })

	mu.Lock()
	defer mu.Unlock()
	if len(handled) != 2*count+1 {
		t.Errorf("%d entries handled, want %d", len(handled), 2*count+1)
	}
	for id, by := range handled {
		if len(by) != 1 {
			t.Errorf("%s handled %d times (%v); want once", id, len(by), by)
		}
	}
}

// failNext is a go-redis hook that fails the next command match accepts,
// once armed, with a connection error (as a node that stopped answering
// would), and lets every other command through.
type failNext struct {
	armed atomic.Bool
	match func(redis.Cmder) bool
}

func (h *failNext) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *failNext) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if h.match(cmd) && h.armed.CompareAndSwap(true, false) {
			err := &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
			cmd.SetErr(err)
			return err
		}
		return next(ctx, cmd)
	}
}

func (h *failNext) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestReadAheadCountsUnreadClaimed: a batch read ahead past MinIdle/4 has
// its delivery counts read (XPENDING) before it is handled. When that
// XPENDING fails with a connection error, the stream is set aside and the
// batch left pending, for the claim. A game out of the read set (cold, no
// census for an hour) is claimed only once its stream is marked as one
// with entries pending, as a failed handler or dead letter marks it:
// unmarked, the entries waited for the sweep's next pass (here an hour,
// 5 min by default), not MinIdle.
func TestReadAheadCountsUnreadClaimed(t *testing.T) {
	ctx := context.Background()
	srv, admin := mustStart(t)
	fail := &failNext{match: func(cmd redis.Cmder) bool {
		args := cmd.Args()
		// withAttempts' XPENDING: the extended form, by consumer.
		return cmd.Name() == "xpending" && len(args) > 0 && args[len(args)-1] == "a"
	}}
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, ContextTimeoutEnabled: true})
	rdb.AddHook(fail)
	t.Cleanup(func() { rdb.Close() })

	const game, count = "ahead-unread", 5
	key := stream(game)
	var ids []string
	for range 2 * count {
		ids = append(ids, add(t, admin, key))
	}
	xs, err := admin.XRange(ctx, key, "-", "+").Result()
	if err != nil || len(xs) != 2*count {
		t.Fatalf("xrange: %d entries, %v", len(xs), err)
	}
	second := xs[count].ID // the first entry of the batch read ahead
	if err := admin.ZAdd(ctx, event.RegistryKey, redisZ(game)).Err(); err != nil {
		t.Fatal(err)
	}

	rec := &recorder{}
	var firstOnce sync.Once
	cfg := baseConfig(t, rdb, "a")
	cfg.Streams, cfg.Registry = nil, event.RegistryKey
	cfg.WakeEvery, cfg.ActiveWindow = 50*time.Millisecond, time.Millisecond // cold at once
	cfg.SweepEvery, cfg.CensusEvery = time.Hour, time.Hour
	cfg.Count = count
	cfg.MinIdle = 2 * time.Second
	cfg.BatchHandler = func(ctx context.Context, ms []feed.Message) []error {
		first := false
		firstOnce.Do(func() { first = true })
		if first {
			// The first batch commits until the batch read ahead
			// meanwhile has been idle past MinIdle/4 (by the server's
			// clock): its counts are then read again, and that read
			// fails.
			fail.armed.Store(true)
			waitFor(t, 10*time.Second, "the batch read ahead idle past MinIdle/4", func() bool {
				p, err := admin.XPendingExt(ctx, &redis.XPendingExtArgs{Stream: key, Group: group, Consumer: "a",
					Start: second, End: "+", Count: 100, Idle: cfg.MinIdle/4 + 100*time.Millisecond}).Result()
				return err == nil && len(p) == count
			})
		}
		for _, m := range ms {
			rec.add(m)
		}
		return make([]error, len(ms))
	}
	cfg.Prepare = func(ctx context.Context, ms []feed.Message) func(context.Context) []error {
		return func(ctx context.Context) []error {
			for _, m := range ms {
				rec.add(m)
			}
			return make([]error, len(ms))
		}
	}
	c := mustOpen(t, cfg)
	waitFor(t, 10*time.Second, "the failed XPENDING", func() bool { return feed.LoopErrorsOf(c, "xpending") == 1 })
	// Claimed once idle past MinIdle, within a few claim beats.
	waitFor(t, 3*cfg.MinIdle, "the entries whose counts could not be read claimed and handled", func() bool {
		return len(rec.ids()) == 2*count
	})
	waitFor(t, 5*time.Second, "nothing pending", func() bool { return pending(t, admin, key) == 0 })
	handledOnce(t, rec.ids(), 2*count)
	for _, id := range ids {
		if rec.count(id) != 1 {
			t.Errorf("%s handled %d times", id, rec.count(id))
		}
	}
}
