package feed_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestAttemptsEachCallItsDeadline: the delivery counts of a batch back by
// the own pending list are read with one XPENDING per stream, each within
// a deadline of its own. Over a slow network (here 600 ms a call, for
// twelve games: more in all than the 5 s a call has) every entry is
// handled in that batch, and no stream is set aside. Until 7 Dec 2026 the
// calls shared one 5 s deadline: the streams after it failed at once and
// were set aside, their entries left pending for a later turn (on a
// cluster, every stream of their nodes with them).
func TestAttemptsEachCallItsDeadline(t *testing.T) {
	ctx := context.Background()
	srv, admin := mustStart(t)
	slow := &slowXPending{delay: 600 * time.Millisecond, consumer: "r1"}
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, ContextTimeoutEnabled: true})
	rdb.AddHook(slow)
	t.Cleanup(func() { rdb.Close() })

	const games = 12
	var keys, evts []string
	for i := range games {
		k := stream(fmt.Sprintf("slowattempts-%d", i))
		if err := admin.XGroupCreateMkStream(ctx, k, group, "0").Err(); err != nil {
			t.Fatal(err)
		}
		evts = append(evts, add(t, admin, k))
		readAs(t, admin, k, "r1", 1) // delivered to an r1 that died with it
		keys = append(keys, k)
	}
	var rec recorder
	cfg := baseConfig(t, rdb, "r1", keys...)
	cfg.Handler = rec.handler
	c := mustOpen(t, cfg)
	waitFor(t, 30*time.Second, "every entry handled", func() bool {
		for _, id := range evts {
			if rec.count(id) != 1 {
				return false
			}
		}
		return true
	})
	st := c.Stats()
	if st.LoopErrors != 0 {
		t.Errorf("%d loop errors (%+v); want none: no stream set aside", st.LoopErrors, st)
	}
	if n := slow.calls.Load(); n != games {
		t.Errorf("%d XPENDING calls for delivery counts; want one a game (%d)", n, games)
	}
}

// slowXPending is a go-redis hook that holds each extended XPENDING of
// consumer's (withAttempts' call) for delay before sending it, as a slow
// network holds a round trip, within the call's context.
type slowXPending struct {
	delay    time.Duration
	consumer string
	calls    atomic.Int64
}

func (h *slowXPending) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *slowXPending) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		args := cmd.Args()
		if cmd.Name() == "xpending" && len(args) > 0 && args[len(args)-1] == h.consumer {
			h.calls.Add(1)
			select {
			case <-time.After(h.delay):
			case <-ctx.Done():
				cmd.SetErr(ctx.Err())
				return ctx.Err()
			}
		}
		return next(ctx, cmd)
	}
}

func (h *slowXPending) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
