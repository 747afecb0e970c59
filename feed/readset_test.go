package feed_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/feed"
	"github.com/codemojex/feed/internal/event"
)

// registryConfig is baseConfig following the games registry instead of a
// static list.
func registryConfig(tb testing.TB, rdb redis.UniversalClient, name string) feed.Config {
	cfg := baseConfig(tb, rdb, name)
	cfg.Streams, cfg.Registry = nil, event.RegistryKey
	cfg.WakeEvery, cfg.ActiveWindow = 50*time.Millisecond, 300*time.Millisecond
	return cfg
}

// register writes one entry to each game's stream and scores the games
// an hour ago in the registry: known to the sweep, never hot.
func register(tb testing.TB, rdb redis.UniversalClient, games []string) {
	tb.Helper()
	ctx := context.Background()
	old := float64(time.Now().Add(-time.Hour).UnixMilli())
	for chunk := range slices.Chunk(games, 500) {
		pipe := rdb.Pipeline()
		for _, g := range chunk {
			pipe.XAdd(ctx, &redis.XAddArgs{Stream: stream(g), Values: []any{"id", minter.Next(time.Now()), "kind", "chat",
				"at", time.Now().UTC().Format(time.RFC3339), "player", "ana", "text", "hi"}})
			pipe.ZAdd(ctx, event.RegistryKey, redis.Z{Score: old, Member: g})
		}
		if _, err := pipe.Exec(ctx); err != nil {
			tb.Fatalf("register: %v", err)
		}
	}
}

// TestSweepCleansOnlyCrowdedGroups: the sweep's census of quiet games whose
// group has one consumer costs one XINFO GROUPS each and no cleanup script;
// a second, idle consumer on one game brings the script there, and it
// removes that consumer.
func TestSweepCleansOnlyCrowdedGroups(t *testing.T) {
	ctx := context.Background()
	_, rdb := mustStart(t)
	var games []string
	for i := range 50 {
		games = append(games, fmt.Sprintf("sw-%d", i))
	}
	register(t, rdb, games)
	rec := &recorder{}
	cfg := registryConfig(t, rdb, "c1")
	cfg.SweepEvery = 200 * time.Millisecond
	cfg.ConsumerMaxIdle = 100 * time.Millisecond
	cfg.LeaseTTL = time.Minute // no lease refresh (EVALSHA) in the window
	cfg.Handler = rec.handler
	c := mustOpen(t, cfg)
	waitFor(t, 20*time.Second, "every entry handled", func() bool { return len(rec.ids()) == len(games) })

	before := commandCalls(t, rdb)
	waitFor(t, 10*time.Second, "two sweep passes", func() bool {
		return commandCalls(t, rdb)["xinfo|groups"]-before["xinfo|groups"] >= 2*int64(len(games))
	})
	if n := commandCalls(t, rdb)["evalsha"] - before["evalsha"]; n != 0 || c.Stats().ConsumersDeleted != 0 {
		t.Errorf("sweeps of one-consumer groups ran the cleanup script %d times, removed %d consumers; want none",
			n, c.Stats().ConsumersDeleted)
	}

	if err := rdb.XGroupCreateConsumer(ctx, stream(games[7]), group, "ghost").Err(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "ghost removed", func() bool { return c.Stats().ConsumersDeleted == 1 })
	cs, err := rdb.XInfoConsumers(ctx, stream(games[7]), group).Result()
	if err != nil || len(cs) != 1 || cs[0].Name != "c1" {
		t.Errorf("consumers left: %+v (%v); want c1 alone", cs, err)
	}
}

// TestPollReachesEveryStreamPastOnePage: with more quiet games than one
// poll reads (5,000), entries the beat cannot see (no registry score
// moved) on games spread over the key range are all found by the poll's
// rounds, long before the sweep comes back to them.
func TestPollReachesEveryStreamPastOnePage(t *testing.T) {
	_, rdb := mustStart(t)
	var games []string
	for i := range 6000 {
		games = append(games, fmt.Sprintf("pl-%04d", i))
	}
	register(t, rdb, games)
	rec := &recorder{}
	cfg := registryConfig(t, rdb, "c1")
	cfg.SweepEvery = time.Hour // after the first pass, no page for minutes
	cfg.PollEvery = 100 * time.Millisecond
	cfg.Handler = rec.handler
	c := mustOpen(t, cfg)
	waitFor(t, 60*time.Second, "every entry handled", func() bool { return len(rec.ids()) == len(games) })
	waitFor(t, 10*time.Second, "the games out of the read set", func() bool { return c.Stats().Working == 0 })

	var want []string
	for _, g := range []string{games[0], games[2999], games[5999]} {
		want = append(want, add(t, rdb, stream(g)))
	}
	waitFor(t, 30*time.Second, "the poll finds the three entries", func() bool {
		ids := rec.ids()
		for _, id := range want {
			if ids[id] != 1 {
				return false
			}
		}
		return true
	})
	// The poll counts itself once its batch is handled and acked, after
	// the handler saw the entries: wait for the count, not just the ids.
	waitFor(t, 5*time.Second, "a poll that found entries (Stats().Polled > 0; else they came another way)",
		func() bool { return c.Stats().Polled > 0 })
}
