package feed_test

import (
	"context"
	"sync"
	"testing"
	"time"
)

// TestCatchUpNotFooledByPeerCommit: a restart under traffic, where a peer
// of the host (sharing the store) commits and acks entries between the
// catch-up plan's read of the store's position and its reads of the
// group, re-reads nothing: those entries are acked, but the store has
// them. Until 7 Dec 2026 they looked acked without a line, and the whole
// lookback window was re-read (codemojex_feed_caught_up_total rose on an
// ordinary restart). A store that truly lacks acked entries is still
// caught up, also when a peer commits past the store's position meanwhile
// (a peer's own catch-up, which stores every entry in order).
func TestCatchUpNotFooledByPeerCommit(t *testing.T) {
	cases := []struct {
		name    string
		lacking int // entries after the store's position acked into another store (a lost file)
		catchUp bool
	}{
		{name: "ordinary restart", catchUp: false},
		{name: "store lacks acked entries", lacking: 3, catchUp: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			_, rdb := mustStart(t)
			s := stream("peer")
			if err := rdb.XGroupCreateMkStream(ctx, s, group, "0").Err(); err != nil {
				t.Fatal(err)
			}
			var evts []string
			for range 40 {
				evts = append(evts, add(t, rdb, s))
			}
			// The host's store: a peer read the first 10, committed and
			// acked them.
			var (
				mu       sync.Mutex
				storePos string
				plans    int
			)
			first := readAs(t, rdb, s, "peer", 10)
			ack(t, rdb, s, first...)
			storePos = first[len(first)-1]
			// The peer holds 10 more in flight.
			inFlight := readAs(t, rdb, s, "peer", 10)
			// A lost file's entries, after those: acked, never committed
			// here (a renderer that wrote another file, then a restored
			// backup).
			if tc.lacking > 0 {
				ack(t, rdb, s, readAs(t, rdb, s, "gone", int64(tc.lacking))...)
			}

			var rec recorder
			cfg := baseConfig(t, rdb, "r2", s)
			cfg.Handler = rec.handler
			cfg.Position = func(context.Context, string) (string, error) {
				mu.Lock()
				defer mu.Unlock()
				pos := storePos
				plans++
				if plans == 1 {
					// Right after the plan read the store, before it
					// reads the group: the peer commits 5 of its entries
					// (the store's position moves to the 5th) and acks
					// them. The lost entries are past them.
					storePos = inFlight[4]
					ack(t, rdb, s, inFlight[:5]...)
				}
				return pos, nil
			}
			c := mustOpen(t, cfg)
			waitFor(t, 10*time.Second, "the rest handled and nothing pending", func() bool {
				ids := rec.ids()
				return pending(t, rdb, s) == 0 && ids[evts[39]] >= 1 && ids[evts[19]] >= 1
			})
			st := c.Stats()
			if !tc.catchUp {
				if st.CaughtUp != 0 || st.CatchUpSkipped != 1 {
					t.Errorf("caught up %d entries (skipped %d), want 0 (1): a peer's commit under the plan looked like a gap", st.CaughtUp, st.CatchUpSkipped)
				}
				for i, id := range evts {
					want := 1 // the peer's other 5 in flight (claimed), and the new ones
					if i < 15 {
						want = 0 // in the store already: never re-read
					}
					if n := rec.count(id); n != want {
						t.Errorf("entry %d handed %d times, want %d", i, n, want)
					}
				}
				return
			}
			if st.CaughtUp == 0 || st.CatchUpSkipped != 0 {
				t.Errorf("caught up %d entries (skipped %d), want > 0 (0): the store lacks acked entries", st.CaughtUp, st.CatchUpSkipped)
			}
			for i := 20; i < 20+tc.lacking; i++ {
				if rec.count(evts[i]) == 0 {
					t.Errorf("entry %d, acked into a lost file, never handed", i)
				}
			}
		})
	}
}
