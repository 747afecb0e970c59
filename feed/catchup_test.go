package feed_test

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/feed"
	"github.com/codemojex/feed/internal/event"
)

// TestCatchUpOnlyWhenMissing: a store behind its group only by entries a
// dead peer still holds pending (an ordinary crash under traffic) costs no
// catch-up: the reader law's claim brings each of them once. A store that
// lacks entries someone acked is still caught up, bar the dead letters
// among them, which it never hands to the handler.
func TestCatchUpOnlyWhenMissing(t *testing.T) {
	cases := []struct {
		name    string
		acked   int // of the 20 entries after the store's position, how many a peer acked
		dead    int // how many of those acked were dead letters
		catchUp bool
	}{
		{name: "behind by pending only", catchUp: false},
		{name: "behind by pending and dead letters", acked: 2, dead: 2, catchUp: false},
		{name: "acked entries missing", acked: 5, dead: 1, catchUp: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			_, rdb := mustStart(t)
			s := stream("pend")
			if err := rdb.XGroupCreateMkStream(ctx, s, group, "0").Err(); err != nil {
				t.Fatal(err)
			}
			var evts []string
			for range 30 {
				evts = append(evts, add(t, rdb, s))
			}
			// A peer read the first 10, stored and acked them: the store's
			// position is the 10th.
			stored := readAs(t, rdb, s, "peer", 10)
			ack(t, rdb, s, stored...)
			pos := stored[len(stored)-1]
			// Then it read 20 more and died with them in hand, having acked
			// tc.acked of them in another store (this one lacks them).
			held := readAs(t, rdb, s, "peer", 20)
			for _, id := range held[:tc.dead] {
				ms, _, _ := strings.Cut(id, "-")
				score, _ := strconv.ParseFloat(ms, 64)
				if err := rdb.ZAdd(ctx, event.DeadKeyOf(s)+":pos", redis.Z{Score: score, Member: id}).Err(); err != nil {
					t.Fatal(err)
				}
			}
			ack(t, rdb, s, held[:tc.acked]...)

			var rec recorder
			cfg := baseConfig(t, rdb, "r2", s)
			cfg.Handler = rec.handler
			cfg.Position = func(context.Context, string) (string, error) { return pos, nil }
			c := mustOpen(t, cfg)
			waitFor(t, 10*time.Second, "pending reclaimed and acked", func() bool {
				return pending(t, rdb, s) == 0 && len(rec.ids()) >= 20-tc.acked
			})
			st := c.Stats()
			if !tc.catchUp {
				if st.CaughtUp != 0 || st.CatchUpSkipped != 1 {
					t.Errorf("caught up %d entries (skipped %d), want 0 (1)", st.CaughtUp, st.CatchUpSkipped)
				}
				for i, id := range evts {
					want := 1
					if i < 10+tc.dead {
						want = 0 // in the store already, or a dead letter: never re-read
					}
					if n := rec.count(id); n != want {
						t.Errorf("entry %d handed %d times, want %d", i, n, want)
					}
				}
				return
			}
			if st.CaughtUp == 0 || st.CatchUpSkipped != 0 {
				t.Errorf("caught up %d entries (skipped %d), want > 0 (0)", st.CaughtUp, st.CatchUpSkipped)
			}
			// The dead letters are skipped by the catch-up too: acked
			// and never stored, and judged afresh some would pass
			// (e2e/TestCatchUpSkipsDeadLetteredPositions).
			for i, id := range evts[10:] {
				if n := rec.count(id); i < tc.dead && n != 0 {
					t.Errorf("entry %d, a dead letter, handed %d times; want none", i+10, n)
				} else if i >= tc.dead && n == 0 {
					t.Errorf("entry %d never handed", i+10)
				}
			}
		})
	}
}

// readAs reads n new entries of s as consumer name and returns their
// stream positions.
func readAs(tb testing.TB, rdb redis.UniversalClient, s, name string, n int64) []string {
	tb.Helper()
	res, err := rdb.XReadGroup(context.Background(), &redis.XReadGroupArgs{
		Group: group, Consumer: name, Streams: []string{s, ">"}, Count: n, Block: -1,
	}).Result()
	if err != nil {
		tb.Fatalf("xreadgroup %s: %v", s, err)
	}
	var ids []string
	for _, x := range res[0].Messages {
		ids = append(ids, x.ID)
	}
	if int64(len(ids)) != n {
		tb.Fatalf("read %d entries, want %d", len(ids), n)
	}
	return ids
}

func ack(tb testing.TB, rdb redis.UniversalClient, s string, ids ...string) {
	tb.Helper()
	if len(ids) == 0 {
		return
	}
	if err := rdb.XAck(context.Background(), s, group, ids...).Err(); err != nil {
		tb.Fatalf("xack %s: %v", s, err)
	}
}

// TestCatchUpByPages: a store far behind on one stream is caught up a few
// pages per loop turn, so another stream, already caught, is read in
// between; and no new entry of the stream being caught up is handled
// before its catch-up ends (its store position would jump past a hole).
func TestCatchUpByPages(t *testing.T) {
	ctx := context.Background()
	_, rdb := mustStart(t)
	far, near := stream("far"), stream("near")
	for _, s := range []string{far, near} {
		if err := rdb.XGroupCreateMkStream(ctx, s, group, "0").Err(); err != nil {
			t.Fatal(err)
		}
	}
	const old = 3000
	pipe := rdb.Pipeline()
	for i := range old {
		pipe.XAdd(ctx, &redis.XAddArgs{Stream: far, Values: []any{
			"id", minter.Next(time.Now()), "kind", "chat", "at", time.Now().UTC().Format(time.RFC3339),
			"player", "ana", "text", itoa(i)}})
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	// A peer of this host read and acked them all into a store that is
	// lost; the new one has nothing.
	for got := 0; got < old; {
		ids := readAs(t, rdb, far, "peer", 500)
		ack(t, rdb, far, ids...)
		got += len(ids)
	}
	var fresh []string
	for range 5 {
		fresh = append(fresh, add(t, rdb, far))
	}
	other := add(t, rdb, near)

	var (
		mu    sync.Mutex
		order []feed.Message
	)
	seenOther := make(chan struct{})
	var once sync.Once
	stuck := false
	handler := func(ctx context.Context, m feed.Message) error {
		mu.Lock()
		order = append(order, m)
		n := len(order)
		mu.Unlock()
		if m.ID == other {
			once.Do(func() { close(seenOther) })
		}
		if m.Stream == far && n == old/2 {
			// Half way through the catch-up: the other stream must have
			// been read by now, between pages.
			select {
			case <-seenOther:
			case <-time.After(10 * time.Second):
				mu.Lock()
				stuck = true
				mu.Unlock()
			}
		}
		return nil
	}
	cfg := baseConfig(t, rdb, "r1", far, near)
	cfg.Handler = handler
	cfg.Position = func(context.Context, string) (string, error) { return "", nil }
	c := mustOpen(t, cfg)
	waitFor(t, 30*time.Second, "everything handled", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(order) >= old+len(fresh)+1
	})
	mu.Lock()
	defer mu.Unlock()
	if stuck {
		t.Fatalf("the other stream waited for the whole catch-up")
	}
	if st := c.Stats(); st.CaughtUp != old {
		t.Errorf("caught up %d entries, want %d", st.CaughtUp, old)
	}
	farSeen, otherAt, lastOld := 0, -1, -1
	freshAt := map[string]int{}
	for i, m := range order {
		switch {
		case m.ID == other:
			otherAt = i
		case m.Stream == far && slices.Contains(fresh, m.ID):
			freshAt[m.ID] = i
		case m.Stream == far:
			farSeen++
			lastOld = i
		}
	}
	if farSeen != old {
		t.Errorf("%d old entries handed, want %d", farSeen, old)
	}
	if otherAt < 0 || otherAt > lastOld {
		t.Errorf("other stream's entry handed at %d, catch-up ended at %d: want it in between", otherAt, lastOld)
	}
	for _, id := range fresh {
		if at, ok := freshAt[id]; !ok || at < lastOld {
			t.Errorf("new entry %s handed at %d (ok %v), before the catch-up ended at %d", id, at, ok, lastOld)
		}
	}
}
