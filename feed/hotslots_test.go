package feed_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/internal/testkit/redistest"
)

// TestHotSlotsReadBetweenBeats: on a cluster, hot games spread over several
// hash slots (no single blocking read can cover them) are read between
// registry beats, not once a beat: with the beat, the poll, the census and
// Block all a minute apart, entries written to them arrive within seconds.
func TestHotSlotsReadBetweenBeats(t *testing.T) {
	ctx := context.Background()
	rc := redistest.MustStartCluster(t)
	rdb := rc.Client(t)
	const games = 12
	name := func(i int) string { return fmt.Sprintf("hs-%d", i) }
	slots := map[int]bool{}
	for i := range games {
		add(t, rdb, stream(name(i)))
		if err := rdb.ZAddGT(ctx, event.RegistryKey, redisZ(name(i))).Err(); err != nil {
			t.Fatal(err)
		}
		slots[event.Slot(stream(name(i)))] = true
	}
	if len(slots) < 2 {
		t.Fatalf("the games share one slot; want several")
	}
	rec := &recorder{}
	cfg := registryConfig(t, rdb, "c1")
	cfg.WakeEvery, cfg.PollEvery, cfg.CensusEvery, cfg.Block = time.Minute, time.Minute, time.Minute, time.Minute
	cfg.ActiveWindow, cfg.SweepEvery = 5*time.Minute, time.Hour
	cfg.Handler = rec.handler
	c := mustOpen(t, cfg)
	waitFor(t, 20*time.Second, "the first entries handled, the games hot", func() bool {
		return len(rec.ids()) == games && c.Stats().Hot == games
	})

	var want []string
	for i := range games {
		want = append(want, add(t, rdb, stream(name(i))))
	}
	waitFor(t, 10*time.Second, "entries of hot games handled before the next beat", func() bool {
		ids := rec.ids()
		for _, id := range want {
			if ids[id] != 1 {
				return false
			}
		}
		return true
	})
}
