package feed_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestCatchUpOnlyWhenMissing: a store behind its group only by entries a
// dead peer still holds pending (an ordinary crash under traffic) costs no
// catch-up: the reader law's claim brings each of them once. A store that
// lacks entries someone acked is still caught up.
func TestCatchUpOnlyWhenMissing(t *testing.T) {
	cases := []struct {
		name    string
		acked   int // of the 20 entries after the store's position, how many a peer acked
		catchUp bool
	}{
		{name: "behind by pending only", acked: 0, catchUp: false},
		{name: "acked entries missing", acked: 5, catchUp: true},
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
			ack(t, rdb, s, held[:tc.acked]...)

			var rec recorder
			cfg := baseConfig(t, rdb, "r2", s)
			cfg.Handler = rec.handler
			cfg.Position = func(context.Context, string) (string, error) { return pos, nil }
			c := mustOpen(t, cfg)
			waitFor(t, 10*time.Second, "pending reclaimed and acked", func() bool {
				return pending(t, rdb, s) == 0 && len(rec.ids()) >= 20
			})
			st := c.Stats()
			if !tc.catchUp {
				if st.CaughtUp != 0 || st.CatchUpSkipped != 1 {
					t.Errorf("caught up %d entries (skipped %d), want 0 (1)", st.CaughtUp, st.CatchUpSkipped)
				}
				for i, id := range evts {
					want := 1
					if i < 10 {
						want = 0 // in the store already: never re-read
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
			for i, id := range evts[10:] {
				if rec.count(id) == 0 {
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
