package feed_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/codemojex/feed/feed"
	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/internal/testkit/wait"
)

// TestPrunedGamesForgotten: a renderer runs for weeks while games are
// played and pruned (feedctl prune takes them out of the registry, and
// with -streams deletes their streams first). What it holds per game, its
// stream's state and its pending and lag labels on /metrics, must go with
// the game, or both grow with every game ever played: a label per game
// for good is a cardinality no operator can keep. Each game here had
// entries pending (so its gauges carry its label) before it ended.
func TestPrunedGamesForgotten(t *testing.T) {
	for _, streams := range []bool{false, true} {
		t.Run(fmt.Sprintf("streams=%v", streams), func(t *testing.T) {
			ctx := context.Background()
			_, rdb := mustStart(t)
			var failing atomic.Bool
			failing.Store(true)
			cfg := registryConfig(t, rdb, "c1")
			cfg.SweepEvery = 500 * time.Millisecond // a pass ends, and forgets, within the wait
			cfg.PoisonAfter = 1000
			cfg.Handler = func(context.Context, feed.Message) error {
				if failing.Load() {
					return errors.New("not yet")
				}
				return nil
			}
			c := mustOpen(t, cfg)
			const n = 30
			games := make([]string, n)
			for i := range games {
				games[i] = fmt.Sprintf("pruned-%v-%02d", streams, i)
				add(t, rdb, stream(games[i]))
				if err := rdb.ZAdd(ctx, event.RegistryKey, redisZ(games[i])).Err(); err != nil {
					t.Fatal(err)
				}
			}
			labelled := func(name string) int {
				k := 0
				for _, g := range games {
					if !math.IsNaN(gauge(t, name, g)) {
						k++
					}
				}
				return k
			}
			waitFor(t, 20*time.Second, "every game's pending gauge", func() bool { return labelled("codemojex_feed_pending") == n })
			failing.Store(false)
			waitFor(t, 20*time.Second, "nothing pending", func() bool {
				for _, g := range games {
					if pending(t, rdb, stream(g)) != 0 {
						return false
					}
				}
				return true
			})
			// As feedctl prune does it: streams first, the registry last.
			for _, g := range games {
				if streams {
					if err := rdb.Del(ctx, stream(g)).Err(); err != nil {
						t.Fatal(err)
					}
				}
				if err := rdb.ZRem(ctx, event.RegistryKey, g).Err(); err != nil {
					t.Fatal(err)
				}
			}
			wait.Until(t, 20*time.Second, func() bool {
				return c.Stats().Known == 0 && labelled("codemojex_feed_pending") == 0 && labelled("codemojex_feed_lag") == 0
			}, func() string {
				return fmt.Sprintf("the %d pruned games forgotten: %d streams known, pending labels of %d of them, lag labels of %d",
					n, c.Stats().Known, labelled("codemojex_feed_pending"), labelled("codemojex_feed_lag"))
			})
		})
	}
}
