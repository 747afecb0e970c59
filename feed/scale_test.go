package feed_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/internal/event"
)

// TestBeatCostIgnoresFutureScores: games whose registry score is far
// ahead of the clock (a writer whose clock runs a day ahead, or one that
// scored in microseconds) must not be listed again by every beat: an idle
// beat is one command whatever the registry holds. Their entries are the
// poll's and the sweep's, as for any writer the beat cannot trust.
func TestBeatCostIgnoresFutureScores(t *testing.T) {
	_, rdb := mustStart(t)
	var games []string
	for i := range 20000 {
		games = append(games, fmt.Sprintf("fut-%05d", i))
	}
	registerAt(t, rdb, games, time.Now().Add(24*time.Hour))
	rec := &recorder{}
	cfg := registryConfig(t, rdb, "c1")
	cfg.Handler = rec.handler
	c := mustOpen(t, cfg)
	waitFor(t, 25*time.Second, "every game known and out of the read set", func() bool {
		s := c.Stats()
		return s.Known == int64(len(games)) && s.Working == 0
	})
	before := commandCalls(t, rdb)
	start := time.Now()
	waitFor(t, 10*time.Second, "ten beats", func() bool {
		return time.Since(start) > 10*cfg.WakeEvery
	})
	beats := time.Since(start) / cfg.WakeEvery
	after := commandCalls(t, rdb)
	n := after["zrangebyscore"] - before["zrangebyscore"]
	if max := 2 * int64(beats+1); n > max {
		t.Errorf("%d ZRANGEBYSCORE in %d beats with %d games scored a day ahead; want at most %d (one a beat)", n, beats, len(games), max)
	}
}

// TestBeatAfterScoreLowered: a game once scored far ahead (a writer's
// clock a day ahead), whose score an operator then set back by hand
// (ZADD GT cannot lower it), must be woken by the beat again as soon as
// its score rises from there, not only once it passes the old one.
func TestBeatAfterScoreLowered(t *testing.T) {
	ctx := context.Background()
	_, rdb := mustStart(t)
	game := "lowered"
	registerAt(t, rdb, []string{game}, time.Now().Add(24*time.Hour))
	rec := &recorder{}
	cfg := registryConfig(t, rdb, "c1")
	cfg.SweepEvery, cfg.PollEvery = time.Hour, time.Hour // the beat alone
	cfg.Handler = rec.handler
	c := mustOpen(t, cfg)
	waitFor(t, 10*time.Second, "the first entry handled", func() bool { return len(rec.ids()) == 1 })
	// The operator's fix, seen by a beat.
	if err := rdb.ZAdd(ctx, event.RegistryKey, redis.Z{Score: float64(time.Now().UnixMilli()), Member: game}).Err(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the game out of the read set", func() bool { return c.Stats().Working == 0 })

	id := add(t, rdb, stream(game))
	if err := rdb.ZAddGT(ctx, event.RegistryKey, redis.Z{Score: float64(time.Now().UnixMilli()), Member: game}).Err(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the entry written after the fix, woken by the beat", func() bool { return rec.count(id) == 1 })
}
