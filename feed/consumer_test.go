package feed_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/feed"
	"github.com/codemojex/feed/internal/event"
)

func TestConsumesAndAcks(t *testing.T) {
	_, rdb := mustStart(t)
	a, b := stream("a"), stream("b")
	var rec recorder
	cfg := baseConfig(t, rdb, "r1", a, b)
	cfg.Handler = rec.handler
	c := mustOpen(t, cfg)
	want := map[string]bool{}
	for i := range 20 {
		want[add(t, rdb, []string{a, b}[i%2])] = true
	}
	waitFor(t, 5*time.Second, "every entry handled", func() bool { return len(rec.ids()) == len(want) })
	for id, n := range rec.ids() {
		if !want[id] || n != 1 {
			t.Errorf("handled %s %d times (wanted: %v)", id, n, want[id])
		}
	}
	for _, m := range rec.all() {
		if m.Attempts != 1 || m.Group != group || m.Kind != "chat" || m.Payload["player"] != "ana" {
			t.Errorf("message %+v", m)
		}
	}
	waitFor(t, 10*time.Second, "everything acked", func() bool {
		return pending(t, rdb, a)+pending(t, rdb, b) == 0 && c.Stats().Acked == 20
	})
	if err := c.Ready(); err != nil {
		t.Errorf("Ready: %v", err)
	}
	st := c.Stats()
	if st.Delivered != 20 || st.Acked != 20 || st.Failed != 0 || st.Dead != 0 {
		t.Errorf("stats %+v", st)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := c.Ready(); !errors.Is(err, feed.ErrNotReady) || !errors.Is(err, feed.ErrClosed) {
		t.Errorf("Ready after Close = %v", err)
	}
	if n, _ := rdb.Exists(context.Background(), event.LeaseKey(group, "r1")).Result(); n != 0 {
		t.Error("lease not released by Close")
	}
}

func TestBatchHandlerVerdictsPerEntry(t *testing.T) {
	_, rdb := mustStart(t)
	s := stream("batch")
	var mu sync.Mutex
	var batches [][]string
	cfg := baseConfig(t, rdb, "r1", s)
	cfg.MinIdle = time.Minute // keep failed entries pending
	cfg.BatchHandler = func(ctx context.Context, ms []feed.Message) []error {
		errs := make([]error, len(ms))
		var ids []string
		for i, m := range ms {
			ids = append(ids, m.ID)
			switch m.Payload["verdict"] {
			case "fail":
				errs[i] = errors.New("try later")
			case "poison":
				errs[i] = feed.Poison(event.Validate("chat", map[string]string{}))
			}
		}
		mu.Lock()
		batches = append(batches, ids)
		mu.Unlock()
		return errs
	}
	// Written before Open so that one read returns them as one batch.
	okID := add(t, rdb, s)
	failID := add(t, rdb, s, "verdict", "fail")
	poisonID := add(t, rdb, s, "verdict", "poison")
	c := mustOpen(t, cfg)
	waitFor(t, 5*time.Second, "settled", func() bool { st := c.Stats(); return st.Acked == 1 && st.Dead == 1 && st.Failed == 1 })
	mu.Lock()
	if len(batches) != 1 || len(batches[0]) != 3 {
		t.Errorf("batches %v, want one of three", batches)
	}
	mu.Unlock()
	p, err := rdb.XPendingExt(context.Background(), &redis.XPendingExtArgs{Stream: s, Group: group, Start: "-", End: "+", Count: 10}).Result()
	if err != nil || len(p) != 1 {
		t.Fatalf("pending %v %v, want only the failed entry", p, err)
	}
	dead, err := feed.ListDead(context.Background(), rdb, event.DeadKey("batch"), 0)
	if err != nil || len(dead) != 1 {
		t.Fatalf("dead %v %v", dead, err)
	}
	if dead[0].EvtID != poisonID || !strings.Contains(dead[0].Reason, "poison") || !strings.Contains(dead[0].Reason, "missing field") {
		t.Errorf("dead letter %+v", dead[0])
	}
	_ = okID
	_ = failID
}

func TestMalformedEntriesDeadLetteredAtOnce(t *testing.T) {
	_, rdb := mustStart(t)
	s := stream("bad")
	var rec recorder
	cfg := baseConfig(t, rdb, "r1", s)
	cfg.Handler = rec.handler
	mustOpen(t, cfg)
	cases := []struct {
		vals   []any
		reason string
	}{
		{[]any{"kind", "chat", "player", "x"}, `missing field "id"`},
		{[]any{"player", "x"}, `missing fields "id", "kind"`},
		{[]any{"id", "evt_123", "kind", "chat"}, "invalid id"},
		{[]any{"id", minter.Next(time.Now())}, `missing field "kind"`},
		{[]any{"id", minter.Next(time.Now()), "kind", "chat", "text", strings.Repeat("x", 9000)}, "byte limit"},
		{[]any{"id", minter.Next(time.Now()), "kind", "chat", "text", "bad\xff"}, "UTF-8"},
	}
	for _, tc := range cases {
		addRaw(t, rdb, s, tc.vals...)
	}
	good := add(t, rdb, s)
	waitFor(t, 5*time.Second, "dead letters", func() bool {
		n, _ := rdb.XLen(context.Background(), event.DeadKey("bad")).Result()
		return n == int64(len(cases))
	})
	waitFor(t, 10*time.Second, "good entry", func() bool { return rec.count(good) == 1 })
	if len(rec.all()) != 1 {
		t.Errorf("handler saw %d entries, want only the good one", len(rec.all()))
	}
	dead, err := feed.ListDead(context.Background(), rdb, event.DeadKey("bad"), 0)
	if err != nil {
		t.Fatal(err)
	}
	for i, d := range dead {
		if !strings.Contains(d.Reason, cases[i].reason) {
			t.Errorf("dead %d reason %q, want %q", i, d.Reason, cases[i].reason)
		}
		if d.Attempts != 1 || d.Consumer != "r1" || d.StreamID == "" || d.At.IsZero() {
			t.Errorf("dead %d = %+v", i, d)
		}
		if len(d.Fields) != len(cases[i].vals)/2 {
			t.Errorf("dead %d keeps %d of %d original fields", i, len(d.Fields), len(cases[i].vals)/2)
		}
	}
	waitFor(t, 10*time.Second, "all acked", func() bool { return pending(t, rdb, s) == 0 })
}

func TestDiscoversNewStreams(t *testing.T) {
	ctx := context.Background()
	_, rdb := mustStart(t)
	var rec recorder
	cfg := baseConfig(t, rdb, "r1")
	cfg.Streams = feed.RegistryStreams(rdb)
	cfg.Handler = rec.handler
	mustOpen(t, cfg)
	for i := range 3 {
		game := fmt.Sprintf("g%d", i)
		rdb.ZAdd(ctx, event.RegistryKey, redis.Z{Score: float64(time.Now().UnixMilli()), Member: game})
		id := add(t, rdb, event.StreamKey(game))
		waitFor(t, 3*time.Second, "new game consumed", func() bool { return rec.count(id) == 1 })
	}
}

// TestShutdownNeverAcksUnfinished: Close lets the handler finish within
// the grace; an entry whose handler did not return nil stays pending.
func TestShutdownNeverAcksUnfinished(t *testing.T) {
	_, rdb := mustStart(t)
	s := stream("shut")
	inHand := make(chan struct{})
	cfg := baseConfig(t, rdb, "r1", s)
	cfg.ShutdownGrace = 100 * time.Millisecond
	cfg.Handler = func(ctx context.Context, m feed.Message) error {
		close(inHand)
		<-ctx.Done() // never finishes on its own
		return ctx.Err()
	}
	c := mustOpen(t, cfg)
	add(t, rdb, s)
	<-inHand
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if n := pending(t, rdb, s); n != 1 {
		t.Errorf("pending %d after Close, want the unfinished entry", n)
	}
	if st := c.Stats(); st.Acked != 0 || st.Failed != 1 {
		t.Errorf("stats %+v", st)
	}
}

func TestIdleConsumersRemoved(t *testing.T) {
	ctx := context.Background()
	_, rdb := mustStart(t)
	s := stream("idle")
	rdb.XGroupCreateMkStream(ctx, s, group, "0")
	// ghost has a pending entry and must stay; idler has none and goes.
	add(t, rdb, s)
	rdb.XReadGroup(ctx, &redis.XReadGroupArgs{Group: group, Consumer: "ghost", Streams: []string{s, ">"}, Count: 1, Block: -1})
	rdb.XGroupCreateConsumer(ctx, s, group, "idler")
	cfg := baseConfig(t, rdb, "r1", s)
	cfg.MinIdle = time.Minute
	cfg.ConsumerMaxIdle = 200 * time.Millisecond
	cfg.Handler = func(context.Context, feed.Message) error { return nil }
	c := mustOpen(t, cfg)
	waitFor(t, 5*time.Second, "idler removed", func() bool { return c.Stats().ConsumersDeleted == 1 })
	cs, _ := rdb.XInfoConsumers(ctx, s, group).Result()
	names := map[string]bool{}
	for _, x := range cs {
		names[x.Name] = true
	}
	if names["idler"] || !names["ghost"] || !names["r1"] {
		t.Errorf("consumers left: %v", names)
	}
}

// TestBatchPanicIsolated: a batch handler that panics on one entry does not
// fail its batch mates: the entries are handed over one by one.
func TestBatchPanicIsolated(t *testing.T) {
	_, rdb := mustStart(t)
	s := stream("isolate")
	cfg := baseConfig(t, rdb, "r1", s)
	cfg.MinIdle = time.Minute
	cfg.BatchHandler = func(ctx context.Context, ms []feed.Message) []error {
		for _, m := range ms {
			if m.Payload["verdict"] == "panic" {
				panic("bad entry " + m.ID)
			}
		}
		return make([]error, len(ms))
	}
	add(t, rdb, s)
	bad := add(t, rdb, s, "verdict", "panic")
	add(t, rdb, s)
	c := mustOpen(t, cfg)
	waitFor(t, 5*time.Second, "settled", func() bool { st := c.Stats(); return st.Acked == 2 && st.Failed == 1 })
	if st := c.Stats(); st.Panics != 1 {
		t.Errorf("stats %+v", st)
	}
	p, _ := rdb.XPendingExt(context.Background(), &redis.XPendingExtArgs{Stream: s, Group: group, Start: "-", End: "+", Count: 10}).Result()
	xs, _ := rdb.XRange(context.Background(), s, "-", "+").Result()
	if len(p) != 1 || p[0].ID != xs[1].ID {
		t.Errorf("pending %v, want only %s (%s)", p, xs[1].ID, bad)
	}
}

// TestWrongVerdictCountHandledOneByOne: a batch handler that returns too
// few verdicts for a batch (a bug) has failed as a whole: its entries are
// handed over one by one, each gets its own verdict, and nothing is lost
// or left pending.
func TestWrongVerdictCountHandledOneByOne(t *testing.T) {
	_, rdb := mustStart(t)
	s := stream("verdicts")
	const n = 5
	for range n {
		add(t, rdb, s)
	}
	cfg := baseConfig(t, rdb, "r1", s)
	logs := captureLogs(t, &cfg)
	cfg.MinIdle = time.Minute
	var mu sync.Mutex
	alone := map[string]int{} // entries handed over on their own
	cfg.BatchHandler = func(ctx context.Context, ms []feed.Message) []error {
		if len(ms) > 1 {
			return make([]error, len(ms)-1)
		}
		mu.Lock()
		alone[ms[0].ID]++
		mu.Unlock()
		return []error{nil}
	}
	c := mustOpen(t, cfg)
	waitFor(t, 10*time.Second, "every entry acked", func() bool {
		return c.Stats().Acked == n && pending(t, rdb, s) == 0
	})
	if logs.count("batch handler failed as a whole") == 0 {
		t.Errorf("the batch of %d was not reported as failed as a whole", n)
	}
	if st := c.Stats(); st.Failed != 0 || st.Dead != 0 {
		t.Errorf("stats: %d failed, %d dead; want 0 and 0", st.Failed, st.Dead)
	}
	mu.Lock()
	defer mu.Unlock()
	handledOnce(t, alone, n) // on their own
}

// TestCloseNeverDeadLettersUnhandled: at Close, the entries a
// per-entry Handler never got (its context was cancelled after the grace)
// must stay pending (docs/reader-law.md, "Shutdown"), not be dead-lettered,
// whatever their delivery count, and that delivery must not count toward
// -poison-after.
func TestCloseNeverDeadLettersUnhandled(t *testing.T) {
	_, rdb := mustStart(t)
	ctx := context.Background()
	s := stream("review-shut")
	slow := add(t, rdb, s)
	last := add(t, rdb, s)
	// Both delivered to r1 before; the second one four times already.
	if err := rdb.XGroupCreate(ctx, s, group, "0").Err(); err != nil {
		t.Fatal(err)
	}
	res, err := rdb.XReadGroup(ctx, &redis.XReadGroupArgs{Group: group, Consumer: "r1", Streams: []string{s, ">"}, Count: 10, Block: -1}).Result()
	if err != nil || len(res[0].Messages) != 2 {
		t.Fatalf("pre-read: %v %v", res, err)
	}
	lastPos := res[0].Messages[1].ID
	if err := rdb.Do(ctx, "XCLAIM", s, group, "r1", 0, lastPos, "RETRYCOUNT", 4, "JUSTID").Err(); err != nil {
		t.Fatal(err)
	}

	inHand := make(chan struct{})
	handled := map[string]bool{}
	cfg := baseConfig(t, rdb, "r1", s)
	cfg.MinIdle = time.Minute
	cfg.ShutdownGrace = 200 * time.Millisecond
	cfg.Handler = func(ctx context.Context, m feed.Message) error {
		if m.ID == slow {
			close(inHand)
			<-ctx.Done() // outlasts the grace
			return ctx.Err()
		}
		handled[m.ID] = true
		return nil
	}
	c := mustOpen(t, cfg)
	<-inHand
	c.Close()
	if handled[last] {
		t.Fatalf("%s handled: the test did not set up what it means to", last)
	}
	dead, err := feed.ListDead(ctx, rdb, event.DeadKeyOf(s), 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dead {
		t.Errorf("never handed to the handler, yet dead-lettered at Close: %s (%s)", d.EvtID, d.Reason)
	}
	if n := pending(t, rdb, s); n != 2 {
		t.Errorf("pending %d after Close, want 2 (neither entry got a nil verdict)", n)
	}
	// Never handed over, its delivery does not count: the next start
	// hands it to the handler rather than dead-lettering it as delivered
	// more than PoisonAfter times.
	p, err := rdb.XPendingExt(ctx, &redis.XPendingExtArgs{Stream: s, Group: group, Start: lastPos, End: lastPos, Count: 1}).Result()
	if err == nil && len(p) == 1 && p[0].RetryCount > 4 {
		t.Errorf("delivery count %d after a delivery the handler never saw, want 4", p[0].RetryCount)
	}
}
