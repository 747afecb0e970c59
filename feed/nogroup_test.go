package feed_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/codemojex/feed/feed"
)

// TestNoGroupJudgedPerStream: feedctl prune -streams deletes one game
// after another. Each deletion under the blocking read is met by a read's
// NOGROUP, which names the deleted stream; the read's streams go through
// the group door and are read on without the loop's backoff. The guard
// against a NOGROUP the door cannot cure counted every stream of the
// read: the others, which answered BUSYGROUP at the door, stayed marked
// until their next read returned, so a second deletion met in the
// blocking read that followed the first backed the whole loop off (one
// "consumer loop error; backing off" a deletion after the first). Now
// only the stream a NOGROUP names counts, when it meets NOGROUP again
// without having been read since.
func TestNoGroupJudgedPerStream(t *testing.T) {
	for _, tt := range []struct {
		name     string
		registry bool
	}{
		{"static", false},
		{"registry", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			_, rdb := mustStart(t)
			games := []string{"pr1", "pr2", "pr3", "pr4"}
			var streams []string
			for _, g := range games {
				streams = append(streams, stream(g))
			}
			cfg := baseConfig(t, rdb, "r1", streams...)
			if tt.registry {
				cfg = registryConfig(t, rdb, "r1")
				cfg.ActiveWindow = time.Minute // every game stays hot
				cfg.WakeEvery = 2 * time.Second
				registerAt(t, rdb, games, time.Now())
			}
			// Nothing cuts the blocking read short while the test deletes
			// a stream under it: the mark a NOGROUP left on the read's
			// streams lasts until a read of them returns. (Close waits for
			// that read to end: each case takes about 2 s.)
			cfg.Block, cfg.ClaimEvery, cfg.CensusEvery, cfg.StreamsEvery = 2*time.Second, 2*time.Second, 2*time.Second, 2*time.Second
			cfg.MinIdle = 2 * time.Second
			// Debug: the NOGROUP taken and the loop's quiet backoffs are
			// logged at that level.
			logs := &logBuffer{}
			cfg.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
			var mu sync.Mutex
			seen := map[string]int{}
			cfg.Handler = func(_ context.Context, m feed.Message) error {
				mu.Lock()
				seen[m.ID]++
				mu.Unlock()
				return nil
			}
			handled := func(id string) bool {
				mu.Lock()
				defer mu.Unlock()
				return seen[id] > 0
			}
			mustOpen(t, cfg)
			var ids []string
			for _, s := range streams {
				ids = append(ids, add(t, rdb, s))
			}
			waitFor(t, 10*time.Second, "every game read", func() bool {
				for _, id := range ids {
					if !handled(id) {
						return false
					}
				}
				return true
			})
			blocked := func() bool { return readBlocked(ctx, rdb) }
			const met = "read refused with NOGROUP; its streams go through the group door"
			const backoff = "consumer loop error; backing off"
			// Delete all games but the last, one after another, each under
			// the blocking read that follows the previous one's door.
			for i, s := range streams[:len(streams)-1] {
				waitFor(t, 10*time.Second, "the blocking read", blocked)
				if err := rdb.Del(ctx, s).Err(); err != nil {
					t.Fatal(err)
				}
				waitFor(t, 10*time.Second, fmt.Sprintf("a read to meet deletion %d's NOGROUP", i+1), func() bool {
					return logs.count(met)+logs.count(backoff) > i
				})
			}
			last := add(t, rdb, streams[len(streams)-1])
			waitFor(t, 10*time.Second, "the last game's entry handled", func() bool { return handled(last) })
			t.Logf("reads that met NOGROUP: %d; loop backoffs: %d", logs.count(met), logs.count(backoff))
			if n := logs.count(backoff); n != 0 {
				t.Errorf("the loop backed off %d times while %d games were deleted one after another, want none", n, len(streams)-1)
			}
			if n := logs.count(met); n != len(streams)-1 {
				t.Errorf("%d reads met NOGROUP, want one a deletion (%d)", n, len(streams)-1)
			}
		})
	}
}
