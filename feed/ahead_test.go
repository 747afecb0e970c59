package feed_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/feed"
	"github.com/codemojex/feed/internal/event"
)

// overlapLog records, for TestPrepareOverlapsCommit, what a handler with
// Config.Prepare saw: the entries stored, in commit order, and whether a
// Prepare ever ran while a batch was committing. Until they have met once,
// a Prepare waits for a commit to be running and a commit for a Prepare
// (both within a shared budget), so that overlapping code meets at once
// and sequential code fails without a long wait.
type overlapLog struct {
	mu         sync.Mutex
	stored     []feed.Message
	seen       map[string]int
	preparing  int
	committing int
	met        bool
	budget     time.Time
	errs       []string
}

func (o *overlapLog) meet(self, other *int) {
	o.mu.Lock()
	*self++
	o.mu.Unlock()
	for {
		o.mu.Lock()
		if *other > 0 {
			o.met = true
		}
		done := o.met || time.Now().After(o.budget)
		o.mu.Unlock()
		if done {
			return
		}
		runtime.Gosched()
	}
}

func (o *overlapLog) leave(self *int) {
	o.mu.Lock()
	*self--
	o.mu.Unlock()
}

// store is the commit half: it checks that the batch is still pending (no
// ack before the commit), then stores it, poisoning entries that ask.
func (o *overlapLog) store(t *testing.T, rdb redis.UniversalClient, ms []feed.Message) []error {
	o.meet(&o.committing, &o.preparing)
	defer o.leave(&o.committing)
	errs := make([]error, len(ms))
	for i, m := range ms {
		p, err := rdb.XPendingExt(context.Background(), &redis.XPendingExtArgs{
			Stream: m.Stream, Group: group, Start: m.Position, End: m.Position, Count: 1,
		}).Result()
		if err != nil || len(p) != 1 {
			o.mu.Lock()
			o.errs = append(o.errs, fmt.Sprintf("%s %s not pending while committed (%v, %v)", m.Stream, m.Position, p, err))
			o.mu.Unlock()
		}
		if m.Payload["verdict"] == "poison" {
			errs[i] = feed.Poison(errors.New("asked to be poison"))
			continue
		}
		o.mu.Lock()
		o.stored = append(o.stored, m)
		o.seen[m.Stream+" "+m.Position]++
		o.mu.Unlock()
	}
	return errs
}

// TestPrepareOverlapsCommit: with Config.Prepare, a backlog is read and
// prepared ahead while the batch before it commits, and still every entry
// is committed once, each stream in order, no ack comes before its commit,
// malformed entries and poison verdicts go to the dead letters, and
// everything else is acked.
func TestPrepareOverlapsCommit(t *testing.T) {
	_, rdb := mustStart(t)
	keys := []string{stream("ov-a"), stream("ov-b"), stream("ov-c")}
	const per = 60
	valid, poison, malformed := 0, 0, 0
	for i := range per {
		for _, k := range keys {
			switch {
			case i%17 == 5:
				addRaw(t, rdb, k, "id", minter.Next(time.Now()), "player", "ana") // no kind
				malformed++
			case i%13 == 7:
				add(t, rdb, k, "verdict", "poison")
				poison++
			default:
				add(t, rdb, k)
				valid++
			}
		}
	}
	o := &overlapLog{seen: map[string]int{}, budget: time.Now().Add(3 * time.Second)}
	var prepared, unprepared sync.Map
	cfg := baseConfig(t, rdb, "r1", keys...)
	cfg.Count = 7
	cfg.BatchHandler = func(ctx context.Context, ms []feed.Message) []error {
		unprepared.Store(ms[0].Stream+ms[0].Position, true)
		return o.store(t, rdb, ms)
	}
	cfg.Prepare = func(ctx context.Context, ms []feed.Message) func(context.Context) []error {
		o.meet(&o.preparing, &o.committing)
		o.leave(&o.preparing)
		prepared.Store(ms[0].Stream+ms[0].Position, true)
		return func(context.Context) []error { return o.store(t, rdb, ms) }
	}
	c := mustOpen(t, cfg)
	waitFor(t, 20*time.Second, "every entry settled", func() bool {
		st := c.Stats()
		return st.Acked == int64(valid) && st.Dead == int64(poison+malformed)
	})
	deadLetters := 0
	for i, k := range keys {
		if n := pending(t, rdb, k); n != 0 {
			t.Errorf("%s: %d entries still pending", k, n)
		}
		dead, err := feed.ListDead(context.Background(), rdb, event.DeadKey([]string{"ov-a", "ov-b", "ov-c"}[i]), 0)
		if err != nil {
			t.Fatal(err)
		}
		deadLetters += len(dead)
	}
	if deadLetters != poison+malformed {
		t.Errorf("%d dead letters, want %d", deadLetters, poison+malformed)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, e := range o.errs {
		t.Error(e)
	}
	if !o.met {
		t.Error("no batch was prepared while another committed")
	}
	if len(o.stored) != valid {
		t.Errorf("stored %d entries, want %d", len(o.stored), valid)
	}
	for k, n := range o.seen {
		if n != 1 {
			t.Errorf("%s stored %d times", k, n)
		}
	}
	last := map[string]string{}
	for _, m := range o.stored {
		if p, ok := last[m.Stream]; ok && cmpPos(p, m.Position) >= 0 {
			t.Errorf("%s: %s stored after %s", m.Stream, m.Position, p)
		}
		last[m.Stream] = m.Position
	}
	nPrep := 0
	prepared.Range(func(any, any) bool { nPrep++; return true })
	if nPrep == 0 {
		t.Error("no batch went through Prepare")
	}
	st := c.Stats()
	if st.Malformed != int64(malformed) || st.Delivered != int64(valid+poison+malformed) {
		t.Errorf("stats %+v: want %d malformed, %d delivered", st, malformed, valid+poison+malformed)
	}
}

// TestPreparePanicFallsBack: a Prepare that panics leaves its batch to
// the batch handler, which settles it as usual.
func TestPreparePanicFallsBack(t *testing.T) {
	_, rdb := mustStart(t)
	keys := []string{stream("pp-a"), stream("pp-b")}
	want := map[string]bool{}
	for i := range 40 {
		want[add(t, rdb, keys[i%2])] = true
	}
	var rec recorder
	var panics sync.Map
	cfg := baseConfig(t, rdb, "r1", keys...)
	cfg.Count = 5
	cfg.BatchHandler = func(ctx context.Context, ms []feed.Message) []error {
		for _, m := range ms {
			rec.add(m)
		}
		return make([]error, len(ms))
	}
	cfg.Prepare = func(ctx context.Context, ms []feed.Message) func(context.Context) []error {
		panics.Store(ms[0].ID, true)
		panic("prepare failed")
	}
	c := mustOpen(t, cfg)
	waitFor(t, 10*time.Second, "every entry acked", func() bool { return c.Stats().Acked == int64(len(want)) })
	for id, n := range rec.ids() {
		if !want[id] || n != 1 {
			t.Errorf("handled %s %d times (wanted: %v)", id, n, want[id])
		}
	}
	if len(rec.ids()) != len(want) {
		t.Errorf("handled %d entries, want %d", len(rec.ids()), len(want))
	}
	n := 0
	panics.Range(func(any, any) bool { n++; return true })
	if n == 0 {
		t.Error("Prepare was never called: the fallback was not exercised")
	}
}

func TestPrepareNeedsBatchHandler(t *testing.T) {
	_, rdb := mustStart(t)
	cfg := baseConfig(t, rdb, "r1", stream("x"))
	cfg.Handler = func(context.Context, feed.Message) error { return nil }
	cfg.Prepare = func(context.Context, []feed.Message) func(context.Context) []error { return nil }
	if _, err := feed.Open(context.Background(), cfg); !errors.Is(err, feed.ErrConfig) {
		t.Fatalf("Open = %v, want ErrConfig", err)
	}
}

// cmpPos compares stream positions "ms-seq" numerically.
func cmpPos(a, b string) int {
	var am, as, bm, bs uint64
	fmt.Sscanf(a, "%d-%d", &am, &as)
	fmt.Sscanf(b, "%d-%d", &bm, &bs)
	switch {
	case am != bm:
		if am < bm {
			return -1
		}
		return 1
	case as < bs:
		return -1
	case as > bs:
		return 1
	}
	return 0
}
