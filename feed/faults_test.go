package feed_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/feed"
	"github.com/codemojex/feed/internal/event"
)

// TestUnavailableHoldsWithoutPoison: while the handler says the
// infrastructure is down, the consumer holds its entries (pending, never
// dead-lettered however long it lasts), Ready says why, and once it is
// back every entry is acked and Ready is nil again.
func TestUnavailableHoldsWithoutPoison(t *testing.T) {
	_, rdb := mustStart(t)
	s := stream("full")
	var down atomic.Bool
	down.Store(true)
	var calls atomic.Int64
	var mu sync.Mutex
	stored := map[string]int{}
	cfg := baseConfig(t, rdb, "r1", s)
	cfg.PoisonAfter = 2
	cfg.PauseMax = 200 * time.Millisecond
	cfg.BatchHandler = func(ctx context.Context, ms []feed.Message) []error {
		calls.Add(1)
		out := make([]error, len(ms))
		for i, m := range ms {
			if down.Load() {
				out[i] = feed.Unavailable(errors.New("database or disk is full"))
				continue
			}
			mu.Lock()
			stored[m.ID]++
			mu.Unlock()
		}
		return out
	}
	c := mustOpen(t, cfg)
	var ids []string
	for range 20 {
		ids = append(ids, add(t, rdb, s))
	}
	waitFor(t, 5*time.Second, "paused", func() bool { return errors.Is(c.Ready(), feed.ErrUnavailable) })
	// Well past PoisonAfter × MinIdle of retries: still nothing dead.
	waitFor(t, 10*time.Second, "many retries", func() bool { return calls.Load() >= 15 })
	if st := c.Stats(); st.Dead != 0 || st.Failed != 0 {
		t.Fatalf("while unavailable: %d dead, %d failed; want 0 and 0", st.Dead, st.Failed)
	}
	if n, _ := rdb.XLen(context.Background(), event.DeadKey("full")).Result(); n != 0 {
		t.Fatalf("dead letters while unavailable: %d", n)
	}
	if p := pending(t, rdb, s); p == 0 {
		t.Fatalf("nothing pending while unavailable")
	}
	down.Store(false)
	waitFor(t, 10*time.Second, "every entry acked", func() bool {
		return c.Stats().Acked == 20 && pending(t, rdb, s) == 0
	})
	waitFor(t, 5*time.Second, "ready again", func() bool { return c.Ready() == nil })
	mu.Lock()
	defer mu.Unlock()
	for _, id := range ids {
		if stored[id] != 1 {
			t.Errorf("%s stored %d times, want 1", id, stored[id])
		}
	}
	if st := c.Stats(); st.Dead != 0 || st.Pauses != 1 {
		t.Errorf("after: %d dead, %d pauses; want 0 and 1", st.Dead, st.Pauses)
	}
}

// TestDeadLetterBounded: a 20 MB entry and one of thousands of fields both
// make a dead letter under 16 KiB that says what was cut; the dead-letter
// stream is capped; a truncated letter refuses a requeue.
func TestDeadLetterBounded(t *testing.T) {
	ctx := context.Background()
	_, rdb := mustStart(t)
	s, dk := stream("big"), event.DeadKey("big")
	cfg := baseConfig(t, rdb, "r1", s)
	cfg.DeadMaxLen = 10
	cfg.Handler = func(context.Context, feed.Message) error { return feed.Poison(errors.New("bad")) }
	c := mustOpen(t, cfg)

	huge := strings.Repeat("x", 20<<20)
	add(t, rdb, s, "blob", huge)
	many := []string{}
	for i := range 5000 {
		many = append(many, "f"+strings.Repeat("k", 10)+itoa(i), strings.Repeat("v", 30))
	}
	add(t, rdb, s, many...)
	waitFor(t, 60*time.Second, "two dead letters", func() bool { return c.Stats().Dead == 2 })
	xs, err := rdb.XRange(ctx, dk, "-", "+").Result()
	if err != nil || len(xs) != 2 {
		t.Fatalf("dead letters %d, %v", len(xs), err)
	}
	for _, x := range xs {
		size := 0
		for k, v := range x.Values {
			size += len(k) + len(v.(string))
		}
		if size >= 16<<10 {
			t.Errorf("dead letter %s is %d bytes, want < 16 KiB", x.ID, size)
		}
	}
	dead, _ := feed.ListDead(ctx, rdb, dk, 0)
	if _, ok := dead[0].Fields["blob"]; !ok {
		dead[0], dead[1] = dead[1], dead[0] // the big one may come second
	}
	if !strings.Contains(dead[0].Truncated, "blob 20971524 bytes sha256 ") || len(dead[0].Fields["blob"]) != 512 {
		t.Errorf("20 MB letter: truncated %q, blob %d bytes", dead[0].Truncated, len(dead[0].Fields["blob"]))
	}
	if !strings.Contains(dead[1].Dropped, "fields") {
		t.Errorf("5000-field letter: dropped %q", dead[1].Dropped)
	}
	if _, err := feed.RequeueDead(ctx, rdb, s, dk, dead[0].DeadID); err == nil || !strings.Contains(err.Error(), "truncated") {
		t.Errorf("requeue of a truncated letter: %v, want refused", err)
	}

	for range 300 {
		add(t, rdb, s)
	}
	waitFor(t, 60*time.Second, "302 dead-lettered", func() bool { return c.Stats().Dead == 302 })
	if n, _ := rdb.XLen(ctx, dk).Result(); n > 10+200 {
		t.Errorf("dead stream holds %d letters with a cap of ~10", n)
	}
}

// TestOneDeadLetterPerPosition: two groups and three replays of the same
// bad entries leave exactly one dead letter per stream position.
func TestOneDeadLetterPerPosition(t *testing.T) {
	ctx := context.Background()
	_, rdb := mustStart(t)
	s, dk := stream("dup"), event.DeadKey("dup")
	poison := func(context.Context, feed.Message) error { return feed.Poison(errors.New("bad")) }
	var cs []*feed.Consumer
	for _, g := range []string{"feed", "host2"} {
		cfg := baseConfig(t, rdb, "r-"+g, s)
		cfg.Group, cfg.Handler = g, poison
		cs = append(cs, mustOpen(t, cfg))
	}
	for range 7 {
		add(t, rdb, s)
	}
	settled := func(want int64) func() bool {
		return func() bool {
			var n int64
			for _, c := range cs {
				st := c.Stats()
				n += st.Dead + st.DeadDuplicates
			}
			return n == want
		}
	}
	waitFor(t, 10*time.Second, "both groups settled", settled(14))
	if n, _ := rdb.XLen(ctx, dk).Result(); n != 7 {
		t.Fatalf("two groups: %d dead letters for 7 bad entries", n)
	}
	for i := range 3 {
		if err := rdb.Do(ctx, "XGROUP", "SETID", s, "feed", "0").Err(); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 10*time.Second, "replay settled", settled(int64(14+7*(i+1))))
		if n, _ := rdb.XLen(ctx, dk).Result(); n != 7 {
			t.Fatalf("replay %d: %d dead letters, want 7", i+1, n)
		}
	}
}

// TestCatchUp: a consumer whose store has nothing of a stream (a new or
// lost store) is handed every entry the group already delivered, without
// any ack or change to the group; a stream trimmed past the store's
// position is reported as a gap.
func TestCatchUp(t *testing.T) {
	ctx := context.Background()
	_, rdb := mustStart(t)
	s := stream("behind")
	var first recorder
	cfg := baseConfig(t, rdb, "r1", s)
	cfg.Handler = first.handler
	c1 := mustOpen(t, cfg)
	var ids []string
	for range 50 {
		ids = append(ids, add(t, rdb, s))
	}
	waitFor(t, 5*time.Second, "first store has all", func() bool { return len(first.ids()) == 50 })
	c1.Close()
	before, _ := rdb.XInfoGroups(ctx, s).Result()

	// A fresh store under another name joins the old group.
	var fresh recorder
	cfg = baseConfig(t, rdb, "r2", s)
	cfg.Handler = fresh.handler
	cfg.Position = func(context.Context, string) (string, error) { return "", nil }
	c2 := mustOpen(t, cfg)
	waitFor(t, 5*time.Second, "fresh store caught up", func() bool { return len(fresh.ids()) == 50 })
	for _, id := range ids {
		if n := fresh.count(id); n != 1 {
			t.Errorf("%s handed %d times, want 1", id, n)
		}
	}
	after, _ := rdb.XInfoGroups(ctx, s).Result()
	if before[0].LastDeliveredID != after[0].LastDeliveredID || after[0].Pending != 0 {
		t.Errorf("group moved: %+v → %+v", before[0], after[0])
	}
	waitFor(t, 5*time.Second, "caught-up count", func() bool { return c2.Stats().CaughtUp == 50 })
	if st := c2.Stats(); st.Acked != 0 || st.Gaps != 0 {
		t.Errorf("stats %+v", st)
	}
	c2.Close()

	// Trimmed past the store's position: a gap, reported.
	if err := rdb.XTrimMaxLen(ctx, s, 10).Err(); err != nil {
		t.Fatal(err)
	}
	var third recorder
	cfg = baseConfig(t, rdb, "r3", s)
	cfg.Handler = third.handler
	cfg.Position = func(context.Context, string) (string, error) { return "1-0", nil }
	c3 := mustOpen(t, cfg)
	waitFor(t, 5*time.Second, "gap reported", func() bool { return c3.Stats().Gaps == 1 })
	gap := false
	for _, n := range c3.Notes() {
		gap = gap || strings.HasPrefix(n.Text, "gap: behind")
	}
	if !gap {
		t.Errorf("notes %v, want a gap", c3.Notes())
	}
	waitFor(t, 5*time.Second, "the rest caught up", func() bool { return len(third.ids()) == 10 })
}

func itoa(i int) string { return fmtInt(i) }

func fmtInt(i int) string {
	if i == 0 {
		return "0"
	}
	var b []byte
	for ; i > 0; i /= 10 {
		b = append([]byte{byte('0' + i%10)}, b...)
	}
	return string(b)
}

var _ = redis.Nil

// TestUnavailableAcrossRestarts: an outage during which the process is
// restarted again and again (each restart re-delivers its pending list)
// still never counts toward poison: a held entry's delivery is taken back.
func TestUnavailableAcrossRestarts(t *testing.T) {
	_, rdb := mustStart(t)
	s := stream("restarts")
	var down atomic.Bool
	down.Store(true)
	handler := func(ctx context.Context, ms []feed.Message) []error {
		out := make([]error, len(ms))
		for i := range ms {
			if down.Load() {
				out[i] = feed.Unavailable(errors.New("disk I/O error"))
			}
		}
		return out
	}
	open := func() *feed.Consumer {
		cfg := baseConfig(t, rdb, "r1", s)
		cfg.PoisonAfter = 2
		cfg.BatchHandler = handler
		return mustOpen(t, cfg)
	}
	for range 5 {
		add(t, rdb, s)
	}
	for i := range 4 {
		c := open()
		waitFor(t, 10*time.Second, "paused", func() bool { return errors.Is(c.Ready(), feed.ErrUnavailable) })
		c.Close()
		if st := c.Stats(); st.Dead != 0 {
			t.Fatalf("restart %d: %d dead letters", i, st.Dead)
		}
	}
	down.Store(false)
	c := open()
	waitFor(t, 10*time.Second, "all acked", func() bool { return c.Stats().Acked == 5 })
	if n, _ := rdb.XLen(context.Background(), event.DeadKey("restarts")).Result(); n != 0 || c.Stats().Dead != 0 {
		t.Fatalf("%d dead letters after an outage across restarts", n)
	}
}
