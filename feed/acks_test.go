package feed_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/feed"
	"github.com/codemojex/feed/internal/event"
)

// TestFailedAcksRetried: an XACK that fails (here the server holds every
// write past the client's timeout, as it may in a failover) keeps its
// entries in hand, and a later turn acks them once the server answers
// (docs/reader-law.md): each entry is handled once, and nothing is left
// pending. The claim waits for MinIdle (5 s), well past the pause: an
// entry whose ack were lost would come back by it and be handled twice.
func TestFailedAcksRetried(t *testing.T) {
	srv, admin := mustStart(t)
	// Short timeouts and no retries inside go-redis: the ack fails while
	// the pause lasts rather than being carried across it by the client.
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, ReadTimeout: 500 * time.Millisecond, WriteTimeout: 500 * time.Millisecond, MaxRetries: -1})
	t.Cleanup(func() { rdb.Close() })
	s := stream("acks")
	const n = 10
	for range n {
		add(t, admin, s)
	}
	cfg := baseConfig(t, rdb, "r1", s)
	logs := captureLogs(t, &cfg)
	cfg.MinIdle = 5 * time.Second
	var paused atomic.Bool
	var mu sync.Mutex
	seen := map[string]int{}
	cfg.Handler = func(ctx context.Context, m feed.Message) error {
		mu.Lock()
		seen[m.ID]++
		mu.Unlock()
		if paused.CompareAndSwap(false, true) {
			// From here until the pause ends, writes wait: the batch's
			// XACK among them.
			if err := admin.Do(ctx, "client", "pause", 2000, "write").Err(); err != nil {
				t.Errorf("client pause: %v", err)
			}
		}
		return nil
	}
	c := mustOpen(t, cfg)
	waitFor(t, 15*time.Second, "every entry acked", func() bool {
		return c.Stats().Acked == n && pending(t, admin, s) == 0
	})
	if got := logs.count("ack failed; will retry"); got == 0 {
		t.Errorf("no ack failed while the server held writes: the retry was not exercised")
	}
	mu.Lock()
	defer mu.Unlock()
	handledOnce(t, seen, n)
}

// TestDeadLetterFailureLeavesPending: when the dead letter cannot be
// written (here its key holds a string, so the script's XADD fails with
// WRONGTYPE), the entry is not acked: it stays pending, and once the key
// is usable the claim brings it back and it is dead-lettered then, once,
// with its fields and its reason.
//
// A static stream is claimed at every beat; a game followed through the
// registry that went cold (out of the hot streams, no census due for an
// hour) is claimed only once the failed dead letter has marked its stream
// as one with entries pending.
func TestDeadLetterFailureLeavesPending(t *testing.T) {
	for _, registry := range []bool{false, true} {
		t.Run(fmt.Sprintf("registry=%v", registry), func(t *testing.T) { deadLetterFailureLeavesPending(t, registry) })
	}
}

func deadLetterFailureLeavesPending(t *testing.T, registry bool) {
	ctx := context.Background()
	_, rdb := mustStart(t)
	s, dk := stream("blocked"), event.DeadKey("blocked")
	if err := rdb.Set(ctx, dk, "not a stream", 0).Err(); err != nil {
		t.Fatal(err)
	}
	cfg := baseConfig(t, rdb, "r1", s)
	if registry {
		cfg.Streams, cfg.Registry = nil, event.RegistryKey
		cfg.WakeEvery, cfg.ActiveWindow = 50*time.Millisecond, time.Millisecond // cold at once
		cfg.SweepEvery, cfg.CensusEvery = time.Hour, time.Hour
	}
	logs := captureLogs(t, &cfg)
	cfg.Handler = func(context.Context, feed.Message) error { return nil }
	c := mustOpen(t, cfg)
	pos := addRaw(t, rdb, s, "kind", "chat", "text", "no id") // malformed: dead-lettered at once
	if registry {
		if err := rdb.ZAdd(ctx, event.RegistryKey, redisZ("blocked")).Err(); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 10*time.Second, "a failed dead letter", func() bool {
		return logs.count("dead-letter failed; entry left pending") >= 1
	})
	if p := pending(t, rdb, s); p != 1 {
		t.Fatalf("after the failed dead letter: %d pending, want the entry still pending", p)
	}
	if st := c.Stats(); st.Acked != 0 {
		t.Fatalf("%d acked while the dead letter could not be written", st.Acked)
	}
	if err := rdb.Del(ctx, dk).Err(); err != nil {
		t.Fatal(err)
	}
	// The counters move when the script's reply is back, a moment after
	// Redis shows its effects: wait for both.
	waitFor(t, 10*time.Second, "dead-lettered by the claim", func() bool {
		n, _ := rdb.XLen(ctx, dk).Result()
		return n == 1 && pending(t, rdb, s) == 0 && c.Stats().Dead+c.Stats().DeadDuplicates >= 1
	})
	if st := c.Stats(); st.Dead != 1 || st.DeadDuplicates != 0 {
		t.Errorf("stats: %d dead, %d taken for written already; want 1 and 0", st.Dead, st.DeadDuplicates)
	}
	letters, err := rdb.XRange(ctx, dk, "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	v := letters[0].Values
	if v["text"] != "no id" || v[feed.DeadStreamID] != pos || !strings.Contains(fmt.Sprint(v[feed.DeadReason]), `missing field "id"`) {
		t.Errorf("dead letter %v: want the entry's fields, its position %s and the reason", v, pos)
	}
}

// TestDeadLetterFailuresLogSampled: dead letters that cannot be written
// (the key holds a string) are logged at most once a LogEvery with the
// count held back, as written ones are: a flood of bad entries, every one
// tried again at each claim, wrote one ERROR line per entry and per try.
func TestDeadLetterFailuresLogSampled(t *testing.T) {
	ctx := context.Background()
	_, rdb := mustStart(t)
	s, dk := stream("blocked-flood"), event.DeadKey("blocked-flood")
	if err := rdb.Set(ctx, dk, "not a stream", 0).Err(); err != nil {
		t.Fatal(err)
	}
	const n = 200
	pipe := rdb.Pipeline()
	for range n {
		pipe.XAdd(ctx, &redis.XAddArgs{Stream: s, Values: []any{"kind", "chat", "text", "no id"}}) // malformed
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	cfg := baseConfig(t, rdb, "r1", s)
	cfg.LogEvery = time.Hour
	logs := captureLogs(t, &cfg)
	cfg.Handler = func(context.Context, feed.Message) error { return nil }
	c := mustOpen(t, cfg)
	waitFor(t, 20*time.Second, "every dead letter tried", func() bool { return c.Stats().LoopErrors >= n })
	if got := logs.count("dead-letter failed; entry left pending"); got != 1 {
		t.Fatalf("%d lines for %d failed dead letters, want 1 (LogEvery: 1h)", got, c.Stats().LoopErrors)
	}
	if p := pending(t, rdb, s); p != n {
		t.Fatalf("%d pending, want %d", p, n)
	}
}

// TestAckedCountsHandledOnRetry: a failed XACK that carried, besides a
// handled entry, the ids of entries deleted while pending (acked so they
// never come back, never handled) counts only the handled one in Acked
// once it is retried. The retry once counted every id it sent.
func TestAckedCountsHandledOnRetry(t *testing.T) {
	ctx := context.Background()
	srv, admin := mustStart(t)
	// As TestFailedAcksRetried: short timeouts, no retries in go-redis.
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, ReadTimeout: 500 * time.Millisecond, WriteTimeout: 500 * time.Millisecond, MaxRetries: -1})
	t.Cleanup(func() { rdb.Close() })
	s := stream("acks-trimmed")
	add(t, admin, s)
	gone := []string{addRaw(t, admin, s, "id", "x"), addRaw(t, admin, s, "id", "y")}
	if err := admin.XGroupCreateMkStream(ctx, s, group, "0").Err(); err != nil {
		t.Fatal(err)
	}
	// r1 read all three and died; two of them were deleted since.
	if err := admin.XReadGroup(ctx, &redis.XReadGroupArgs{Group: group, Consumer: "r1", Streams: []string{s, ">"}}).Err(); err != nil {
		t.Fatal(err)
	}
	if err := admin.XDel(ctx, s, gone...).Err(); err != nil {
		t.Fatal(err)
	}
	cfg := baseConfig(t, rdb, "r1", s)
	logs := captureLogs(t, &cfg)
	cfg.MinIdle = 5 * time.Second
	var paused atomic.Bool
	cfg.Handler = func(ctx context.Context, m feed.Message) error {
		if paused.CompareAndSwap(false, true) {
			// The batch's acks (handled and deleted) wait past the
			// client's timeout.
			if err := admin.Do(ctx, "client", "pause", 2000, "write").Err(); err != nil {
				t.Errorf("client pause: %v", err)
			}
		}
		return nil
	}
	c := mustOpen(t, cfg)
	waitFor(t, 15*time.Second, "the acks retried", func() bool {
		return c.Stats().Acked > 0 && pending(t, admin, s) == 0
	})
	if got := logs.count("ack failed; will retry"); got == 0 {
		t.Fatalf("no ack failed while the server held writes: the retry was not exercised")
	}
	if st := c.Stats(); st.Acked != 1 || st.Trimmed != 2 {
		t.Fatalf("Acked %d, Trimmed %d; want 1 handled and 2 deleted", st.Acked, st.Trimmed)
	}
}

// TestAckedCountsWhatXackAcked: Acked counts what XACK replied it
// acknowledged, not the ids sent. An entry someone else acked meanwhile
// (here the handler acks it itself, as a peer that claimed it and settled
// it would) is not counted again by this consumer; it once was.
func TestAckedCountsWhatXackAcked(t *testing.T) {
	_, rdb := mustStart(t)
	s := stream("acks-partial")
	cfg := baseConfig(t, rdb, "r1", s)
	cfg.MinIdle = time.Minute
	add(t, rdb, s, "verdict", "acked-elsewhere")
	add(t, rdb, s) // the same batch, the same XACK
	cfg.Handler = func(ctx context.Context, m feed.Message) error {
		if m.Payload["verdict"] == "acked-elsewhere" {
			if err := rdb.XAck(ctx, s, group, m.Position).Err(); err != nil {
				t.Errorf("xack: %v", err)
			}
		}
		return nil
	}
	c := mustOpen(t, cfg)
	waitFor(t, 10*time.Second, "the batch settled", func() bool {
		return c.Stats().Acked > 0 && pending(t, rdb, s) == 0
	})
	if st := c.Stats(); st.Acked != 1 {
		t.Fatalf("Acked %d; want 1: XACK acknowledged one of the two", st.Acked)
	}
}
