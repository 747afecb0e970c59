package feed_test

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
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
	registerAt(tb, rdb, games, time.Now().Add(-time.Hour))
}

// registerAt is register with the games scored at.
func registerAt(tb testing.TB, rdb redis.UniversalClient, games []string, at time.Time) {
	tb.Helper()
	ctx := context.Background()
	old := float64(at.UnixMilli())
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

// TestPollBacklogPastCountFollows: a game out of the read set gets more
// entries than one read holds, with no score the beat sees (a writer
// resending old entries with their old times). The poll reads Count of
// them; the rest must follow at once, not wait for the sweep, an hour away
// here. They waited: the poll's full read left the stream due but out of
// the read set, where the drain does not look, and the poll skips due
// streams.
func TestPollBacklogPastCountFollows(t *testing.T) {
	_, rdb := mustStart(t)
	register(t, rdb, []string{"quiet"})
	rec := &recorder{}
	cfg := registryConfig(t, rdb, "c1")
	cfg.SweepEvery = time.Hour
	cfg.PollEvery = 100 * time.Millisecond
	cfg.Count = 10
	cfg.Handler = rec.handler
	c := mustOpen(t, cfg)
	waitFor(t, 20*time.Second, "the first entry handled", func() bool { return len(rec.ids()) == 1 })
	waitFor(t, 10*time.Second, "the game out of the read set", func() bool { return c.Stats().Working == 0 })
	for range 35 {
		add(t, rdb, stream("quiet"))
	}
	waitFor(t, 10*time.Second, "all 35 entries handled, past the poll's first read of 10", func() bool { return len(rec.ids()) == 36 })
	// Counted once the poll's batch is acked, after the handler saw it.
	waitFor(t, 5*time.Second, "a poll that found entries (else they came another way, and the test proves nothing)",
		func() bool { return c.Stats().Polled > 0 })
}

// TestManyHotGamesStillBlock: with more hot games than one read holds
// (700 > 500), the loop still blocks on the most recently active ones and
// wakes on their entries, instead of polling them once a beat. The beat
// and every other net are minutes away here, so an entry that waited for
// them would miss the deadline by far.
func TestManyHotGamesStillBlock(t *testing.T) {
	_, rdb := mustStart(t)
	var games []string
	for i := range 700 {
		games = append(games, fmt.Sprintf("hb-%03d", i))
	}
	registerAt(t, rdb, games, time.Now()) // hot
	rec := &recorder{}
	cfg := registryConfig(t, rdb, "c1")
	cfg.WakeEvery, cfg.ActiveWindow = 30*time.Second, 5*time.Minute
	cfg.Block = 5 * time.Second
	cfg.SweepEvery, cfg.PollEvery = time.Hour, time.Hour
	cfg.ClaimEvery, cfg.CensusEvery = time.Hour, time.Hour
	cfg.Handler = rec.handler
	c := mustOpen(t, cfg)
	waitFor(t, 60*time.Second, "every game's entry handled", func() bool { return len(rec.ids()) == len(games) })
	// One more entry makes the first game the most recently active (its
	// delivery renews its window), whatever order the others came in.
	first := add(t, rdb, stream(games[0]))
	waitFor(t, 60*time.Second, "the first game's next entry handled", func() bool { return rec.ids()[first] == 1 })
	// Stats publishes the hot count when the loop prunes its work set, at
	// most every 50 ms and only between reads: wait past one Block.
	waitFor(t, 2*cfg.Block, fmt.Sprintf("all %d streams hot (Stats().Hot)", len(games)),
		func() bool { return c.Stats().Hot == int64(len(games)) })
	for i := range 3 {
		id := add(t, rdb, stream(games[0]))
		waitFor(t, 2*time.Second, fmt.Sprintf("entry %d woke the blocking read", i), func() bool { return rec.ids()[id] == 1 })
	}
}

// TestKthLargest checks the selection that picks the blocking read's
// streams against a sort, on slices with and without repeated values.
func TestKthLargest(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for n := 1; n <= 64; n++ {
		for _, spread := range []int64{2, 5, 1000} {
			xs := make([]int64, n)
			for i := range xs {
				xs[i] = r.Int64N(spread)
			}
			want := slices.Clone(xs)
			slices.Sort(want)
			slices.Reverse(want)
			for k := 1; k <= n; k++ {
				ys := slices.Clone(xs)
				if got := feed.KthLargest(ys, k); got != want[k-1] {
					t.Fatalf("KthLargest(%v, %d) = %d, want %d", xs, k, got, want[k-1])
				}
			}
		}
	}
}

// TestByRecency checks the split of the hot read's streams into the k
// most recently active (read every hot tick on a cluster) and the others
// against a stable sort: those k first, then the others, each in the order
// it had, ties at the cut going to the earlier ones.
func TestByRecency(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for n := 0; n <= 40; n++ {
		for _, spread := range []int64{2, 7, 1000} {
			untils := make([]int64, n)
			for i := range untils {
				untils[i] = r.Int64N(spread)
			}
			for _, k := range []int{1, 3, n / 2, n, n + 5} {
				if k < 1 {
					continue
				}
				byTime := make([]int, n)
				for i := range byTime {
					byTime[i] = i
				}
				slices.SortStableFunc(byTime, func(a, b int) int { return cmp.Compare(untils[b], untils[a]) })
				top := byTime[:min(k, n)]
				slices.Sort(top)
				var want []int
				want = append(want, top...)
				for i := range n {
					if !slices.Contains(top, i) {
						want = append(want, i)
					}
				}
				got, lead := feed.ByRecency(untils, k)
				if lead != len(top) || !slices.Equal(got, want) {
					t.Fatalf("ByRecency(%v, %d) = %v, %d; want %v, %d", untils, k, got, lead, want, len(top))
				}
			}
		}
	}
}

// TestWorkSet: the work set lists each member once, in key order, through
// additions, removals, additions back before and after a listing, and a
// new state under a known key.
func TestWorkSet(t *testing.T) {
	for _, tc := range []struct {
		name string
		ops  []string
		want [][]string
	}{
		{"sorted", []string{"+c", "+a", "+b", "="}, [][]string{{"a", "b", "c"}}},
		{"added twice", []string{"+a", "+a", "=", "+a", "="}, [][]string{{"a"}, {"a"}}},
		{"removed", []string{"+a", "+b", "=", "-a", "=", "-b", "="}, [][]string{{"a", "b"}, {"b"}, nil}},
		{"back before a listing", []string{"+a", "+b", "=", "-a", "+a", "="}, [][]string{{"a", "b"}, {"a", "b"}}},
		{"back after a listing", []string{"+a", "+b", "=", "-a", "=", "+a", "="}, [][]string{{"a", "b"}, {"b"}, {"a", "b"}}},
		{"out and back unlisted", []string{"+a", "-a", "+a", "-a", "+a", "="}, [][]string{{"a"}}},
		{"new state", []string{"+a", "+b", "=", "!a", "="}, [][]string{{"a", "b"}, {"a", "b"}}},
		{"missing removed", []string{"-x", "+a", "-x", "="}, [][]string{{"a"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := feed.WorkSetOps(tc.ops); !slices.EqualFunc(got, tc.want, slices.Equal[[]string]) {
				t.Errorf("%v: got %q, want %q", tc.ops, got, tc.want)
			}
		})
	}
}

// TestBeatCoversAHeldUpLoop: the beat's floor is "the previous
// beat's time − WakeSlack" (docs/reader-law.md, "The read set"). When the
// loop was held up longer than that (a slow commit here; a pause, a Redis
// backoff), a quiet game that wrote meanwhile must still be woken by the
// next beat, not left for the poll or the sweep.
func TestBeatCoversAHeldUpLoop(t *testing.T) {
	ctx := context.Background()
	_, rdb := mustStart(t)
	register(t, rdb, []string{"rv-slow", "rv-quiet"})
	rec := &recorder{}
	started := make(chan struct{}, 1)
	cfg := registryConfig(t, rdb, "c1")
	cfg.SweepEvery = time.Hour
	cfg.PollEvery = time.Hour
	cfg.Handler = func(ctx context.Context, m feed.Message) error {
		if m.Payload["text"] == "slow" {
			started <- struct{}{}
			time.Sleep(3500 * time.Millisecond) // a commit longer than WakeEvery + WakeSlack: pacing, not waiting
		}
		rec.add(m)
		return nil
	}
	c := mustOpen(t, cfg)
	waitFor(t, 10*time.Second, "first entries handled", func() bool { return len(rec.ids()) == 2 })
	waitFor(t, 10*time.Second, "both games out of the hot read", func() bool { return c.Stats().Hot == 0 })

	write := func(game, text string) string {
		id := add(t, rdb, stream(game), "text", text)
		rdb.ZAdd(ctx, event.RegistryKey, redis.Z{Score: float64(time.Now().UnixMilli()), Member: game})
		return id
	}
	slow := write("rv-slow", "slow")
	<-started
	quiet := write("rv-quiet", "hi")
	waitFor(t, 6*time.Second, "slow entry handled", func() bool { return rec.count(slow) == 1 })
	waitFor(t, 2*time.Second, "the quiet game's entry, written while the loop was busy", func() bool { return rec.count(quiet) == 1 })
}

// TestPollFoundCountsOnlyMissedScores: Stats.Polled
// (codemojex_feed_polls_found_total) counts polls that found entries the
// registry beat missed, a sign of a writer that does not keep its game's
// score current. A live game whose writer scores every entry is read by
// the beat and the hot read; the poll also reads it (it skips only the due
// streams), and entries that landed while a batch committed are found
// there now and then. Those are no missed score, and must not be counted.
func TestPollFoundCountsOnlyMissedScores(t *testing.T) {
	ctx := context.Background()
	_, rdb := mustStart(t)
	game := "pf-live"
	rec := &recorder{}
	cfg := registryConfig(t, rdb, "c1")
	cfg.PollEvery = 20 * time.Millisecond
	cfg.ActiveWindow = time.Minute
	cfg.MinIdle = 10 * time.Second // batches of a few hundred ms: no claim
	cfg.Handler = func(ctx context.Context, m feed.Message) error {
		time.Sleep(3 * time.Millisecond) // a commit: pacing, not waiting
		rec.add(m)
		return nil
	}
	c := mustOpen(t, cfg)
	var ids []string
	for range 400 {
		// The writers' contract: XADD, then ZADD GT of the registry.
		ids = append(ids, add(t, rdb, stream(game)))
		if err := rdb.ZAddGT(ctx, event.RegistryKey, redis.Z{Score: float64(time.Now().UnixMilli()), Member: game}).Err(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Millisecond) // the writer's pace
	}
	waitFor(t, 20*time.Second, "every entry handled", func() bool {
		got := rec.ids()
		for _, id := range ids {
			if got[id] == 0 {
				return false
			}
		}
		return true
	})
	if n := c.Stats().Polled; n != 0 {
		t.Errorf("Stats().Polled = %d with a writer that scores every entry; want 0 (no score was missed)", n)
	}
}

// TestPollRoundOfExactPages: a poll reads up to 5,000 known streams, and
// with at most that many every poll reads every one (docs/reader-law.md,
// "Nets under the beat"). With exactly a page's worth (5,000, 10,000, …)
// the round did not end with its last full page, and the next poll read
// nothing: the net came every other PollEvery.
func TestPollRoundOfExactPages(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want []int
	}{
		{4999, []int{4999, 4999, 4999}},
		{5000, []int{5000, 5000, 5000}},
		{10000, []int{5000, 5000, 5000, 5000}},
		{6000, []int{5000, 1000, 5000, 1000}},
	} {
		if got := feed.PollPages(tc.n, len(tc.want)); !slices.Equal(got, tc.want) {
			t.Errorf("%d streams: polls read %v; want %v", tc.n, got, tc.want)
		}
	}
}
