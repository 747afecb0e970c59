package feed_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/feed"
	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/internal/testkit/redistest"
)

// hangOnZMScore is a go-redis hook that, once armed, stops the real
// server (SIGSTOP) just before the next pipeline holding a ZMSCORE (the
// look at the dead positions) is sent, and continues it (SIGCONT) once
// that pipeline has failed by its own deadline: the look meets a server
// that does not answer, on a real connection, and nothing else does
// between the steps before it and the look.
type hangOnZMScore struct {
	srv   *redistest.Server
	armed atomic.Bool

	mu   sync.Mutex
	errs []error // the looks' errors, and the signals' own
}

func (h *hangOnZMScore) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (h *hangOnZMScore) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (h *hangOnZMScore) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			if cmd.Name() == "zmscore" && h.armed.CompareAndSwap(true, false) {
				if err := h.srv.Signal(syscall.SIGSTOP); err != nil {
					h.note(fmt.Errorf("SIGSTOP: %w", err))
					return next(ctx, cmds)
				}
				err := next(ctx, cmds)
				h.note(err)
				if serr := h.srv.Signal(syscall.SIGCONT); serr != nil {
					h.note(fmt.Errorf("SIGCONT: %w", serr))
				}
				return err
			}
		}
		return next(ctx, cmds)
	}
}

func (h *hangOnZMScore) note(err error) {
	h.mu.Lock()
	h.errs = append(h.errs, err)
	h.mu.Unlock()
}

func (h *hangOnZMScore) noted() []error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]error(nil), h.errs...)
}

// TestClaimLookupFailedLeavesPending: an entry back by the own pending
// list whose position is claimed in the dead positions set (its letter's
// single-key steps stopped after the claim) is settled as a dead letter
// only if the look at the set says so. When that look failed with a
// connection error (here the server hung, and the look ran out of its
// deadline), the entry was handed to the handler and judged afresh, as if
// unclaimed: one that passed was stored and acked, its claim left, and a
// take-over of the claim could then write its letter too (a line and a
// dead letter for one entry). Now the stream is set aside and the entry
// left pending, as skipDead leaves a re-read one; once the server answers
// it comes back, its claim is found, and it is settled by the steps with
// the reason claimed, never handed to the handler.
func TestClaimLookupFailedLeavesPending(t *testing.T) {
	ctx := context.Background()
	srv, rdb := mustStart(t)
	s := stream("lookfail")
	id := minter.Next(time.Now())
	pos := addRaw(t, rdb, s, "id", id, "kind", "chat", "at", time.Now().UTC().Format(time.RFC3339), "player", "ana", "text", "hi")
	pendingWith(t, rdb, s, "r1")
	claimAt(t, rdb, "lookfail", pos, 2*time.Minute) // stale: its writer stopped

	hang := &hangOnZMScore{srv: srv}
	hang.armed.Store(true)
	hooked := redis.NewClient(&redis.Options{Addr: srv.Addr, ContextTimeoutEnabled: true})
	hooked.AddHook(hang)
	t.Cleanup(func() { hooked.Close() })
	var rec recorder
	cfg := baseConfig(t, hooked, "r1", s)
	cfg.LeaseTTL = time.Minute // outlives the hang: the name is not the subject
	cfg.Handler = rec.handler  // it would take the entry
	c := mustOpen(t, cfg)
	// A letter is counted after its ack: wait for both, or the handler's take.
	waitFor(t, 30*time.Second, "the entry settled", func() bool {
		return pending(t, rdb, s) == 0 && (c.Stats().Dead > 0 || rec.count(id) > 0)
	})

	if hang.armed.Load() {
		t.Fatal("the look at the dead positions never ran; the test proves nothing")
	}
	errs := hang.noted()
	if len(errs) == 0 || errs[0] == nil {
		t.Fatalf("the look during the hang answered (%v); the test proves nothing", errs)
	}
	for _, err := range errs[1:] {
		t.Errorf("signalling the server: %v", err)
	}
	t.Logf("the look failed with: %v", errs[0])
	if n := rec.count(id); n != 0 {
		t.Errorf("the claimed entry was handed to the handler %d times; want none", n)
	}
	ds, err := feed.ListDead(ctx, rdb, event.DeadKeyOf(s), 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 1 || ds[0].StreamID != pos {
		t.Fatalf("letters %+v; want the one of %s", ds, pos)
	}
	if want := "dead letter under way (its position claimed)"; ds[0].Reason != want {
		t.Errorf("letter's reason %q, want %q", ds[0].Reason, want)
	}
	if n := feed.DeadOf(c, "claimed"); n != 1 {
		t.Errorf("%d letters counted under reason claimed, want 1", n)
	}
	if n := feed.LoopErrorsOf(c, "deadpos"); n == 0 {
		t.Error("the failed look was not counted (loop errors, op deadpos)")
	}
}
