package feed_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/codemojex/feed/feed"
	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/internal/testkit/redistest"
)

// TestHotSlotsReadBetweenBeats: on a cluster, hot games spread over several
// hash slots (no single blocking read can cover them) are read between
// registry beats, not once a beat: with the beat, the poll, the census and
// Block all a minute apart, entries written to them arrive within seconds.
// With more hot games than are read every tick (feed.LiveKeys), the others
// are read between beats too.
func TestHotSlotsReadBetweenBeats(t *testing.T) {
	for _, games := range []int{12, feed.LiveKeys + 50} {
		t.Run(fmt.Sprintf("games=%d", games), func(t *testing.T) {
			hotSlotsBetweenBeats(t, games)
		})
	}
}

func hotSlotsBetweenBeats(t *testing.T, games int) {
	rc := redistest.MustStartCluster(t)
	rdb := rc.Client(t)
	name := func(i int) string { return fmt.Sprintf("hs-%d", i) }
	slots := map[int]bool{}
	var names []string
	for i := range games {
		names = append(names, name(i))
		slots[event.Slot(stream(name(i)))] = true
	}
	if len(slots) < 2 {
		t.Fatalf("the games share one slot; want several")
	}
	registerAt(t, rdb, names, time.Now())
	rec := &recorder{}
	cfg := registryConfig(t, rdb, "c1")
	cfg.WakeEvery, cfg.PollEvery, cfg.CensusEvery, cfg.Block = time.Minute, time.Minute, time.Minute, time.Minute
	cfg.ActiveWindow, cfg.SweepEvery = 5*time.Minute, time.Hour
	cfg.Handler = rec.handler
	c := mustOpen(t, cfg)
	waitFor(t, 30*time.Second, "the first entries handled, the games hot", func() bool {
		return len(rec.ids()) == games && c.Stats().Hot == int64(games)
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
