package feed_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/feed"
	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/internal/testkit/redistest"
)

// TestLingerMergesSmallReads: with Linger, a small batch is handed over
// at once, and the entries written in the linger after it come in one
// batch; without it, the entries written together may come one by one. On
// a cluster, with the streams in two slots, the reads of the hot tick
// linger too.
func TestLingerMergesSmallReads(t *testing.T) {
	for _, tt := range []struct {
		name    string
		linger  time.Duration
		cluster bool
	}{
		{"linger", time.Second, false},
		{"no linger", 0, false},
		{"linger on a cluster", time.Second, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := stream("linger")
			var rdb redis.UniversalClient
			streams := []string{s}
			if tt.cluster {
				rdb = redistest.MustStartCluster(t).Client(t)
				// A second stream in another slot: no read can block
				// on both, so they go through the hot tick.
				for i := 0; ; i++ {
					if o := stream(fmt.Sprintf("linger-%d", i)); event.Slot(o) != event.Slot(s) {
						streams = append(streams, o)
						break
					}
				}
			} else {
				_, rdb = mustStart(t)
			}
			var mu sync.Mutex
			var batches [][]string
			cfg := baseConfig(t, rdb, "r1", streams...)
			cfg.Linger = tt.linger
			cfg.BatchHandler = func(ctx context.Context, ms []feed.Message) []error {
				var ids []string
				for _, m := range ms {
					ids = append(ids, m.ID)
				}
				mu.Lock()
				batches = append(batches, ids)
				mu.Unlock()
				return make([]error, len(ms))
			}
			c := mustOpen(t, cfg)
			waitFor(t, 5*time.Second, "the consumer reading", func() bool { return c.Ready() == nil })
			// The linger follows a batch of the blocking read only; a
			// census that finds the group lagging can have a
			// non-blocking read take an entry instead, and handle it
			// alone at once. Such a round is done again, up to five
			// times: a linger that does not merge fails all five.
			var first, second, third string
			for round := 0; ; round++ {
				mu.Lock()
				batches = nil
				mu.Unlock()
				first = add(t, rdb, s)
				// Seen by the handler, not counted in Stats().Acked: the
				// ack of the round before may be counted after its batch
				// was recorded, which would make any count off by one.
				waitFor(t, 5*time.Second, "the first entry handled", func() bool {
					mu.Lock()
					defer mu.Unlock()
					return len(slices.Concat(batches...)) == 1
				})
				// Counted when a linger ends: the one of the round before
				// ended before the first entry was read.
				lingered := c.Stats().Lingered
				second, third = add(t, rdb, s), add(t, rdb, s)
				waitFor(t, 5*time.Second, "all three acked", func() bool {
					mu.Lock()
					defer mu.Unlock()
					return len(slices.Concat(batches...)) == 3
				})
				// On a cluster the two may also come in one read of the
				// hot tick by chance; only a merge across a linger counts.
				mu.Lock()
				merged := len(batches) == 2 && c.Stats().Lingered > lingered
				mu.Unlock()
				if tt.linger == 0 || merged || round == 4 {
					break
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if all := slices.Concat(batches...); !slices.Equal(all, []string{first, second, third}) {
				t.Fatalf("handled %v, want %s %s %s in order", batches, first, second, third)
			}
			if len(batches[0]) != 1 {
				t.Errorf("batches %v: the first entry should go alone, before the others were written", batches)
			}
			if tt.linger > 0 {
				if len(batches) != 2 {
					t.Errorf("batches %v: the two entries written during the linger were not merged", batches)
				}
				if c.Stats().Lingered == 0 {
					t.Error("Stats.Lingered is 0")
				}
			}
		})
	}
}

func TestLingerBounds(t *testing.T) {
	_, rdb := mustStart(t)
	for _, d := range []time.Duration{-time.Millisecond, 2 * time.Second} {
		cfg := baseConfig(t, rdb, "r1", stream("x"))
		cfg.Handler = func(context.Context, feed.Message) error { return nil }
		cfg.Linger = d
		if _, err := feed.Open(context.Background(), cfg); !errors.Is(err, feed.ErrConfig) {
			t.Errorf("Linger %v: Open = %v, want ErrConfig", d, err)
		}
	}
}
