package feed_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/feed"
	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/internal/testkit/wait"
)

// TestPollNotStarvedByBacklog: a busy game whose writer outpaces a slow
// handler stays due turn after turn, so every turn's drain reads
// something. The poll must still run every PollEvery: a quiet game's
// entry that moved no registry score (a writer resending old entries, a
// group rewound by hand) is found by the poll alone here (the sweep is an
// hour away), and until 4 Dec 2026 it waited for as long as the backlog
// lasted.
func TestPollNotStarvedByBacklog(t *testing.T) {
	ctx := context.Background()
	_, rdb := mustStart(t)
	busy, quiet := "starve-busy", "starve-quiet"
	register(t, rdb, []string{quiet})
	rec := &recorder{}
	var busyDone atomic.Int64
	cfg := registryConfig(t, rdb, "c1")
	cfg.Count = 10
	cfg.PollEvery = 200 * time.Millisecond
	cfg.SweepEvery = time.Hour
	cfg.Handler = func(ctx context.Context, m feed.Message) error {
		rec.add(m)
		if m.Stream == stream(busy) {
			// The subject: a handler slower than its writer.
			time.Sleep(2 * time.Millisecond)
			busyDone.Add(1)
		}
		return nil
	}
	c := mustOpen(t, cfg)
	waitFor(t, 10*time.Second, "the quiet game's first entry handled", func() bool { return len(rec.ids()) == 1 })
	waitFor(t, 10*time.Second, "the quiet game out of the read set", func() bool { return c.Stats().Working == 0 })

	// The writer keeps the busy game at least backlog entries ahead of the
	// handler, scoring it as writers do, until the test ends.
	const backlog = 300
	stop := make(chan struct{})
	done := make(chan struct{})
	var added atomic.Int64
	go func() {
		defer close(done)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			if added.Load()-busyDone.Load() < backlog {
				pipe := rdb.Pipeline()
				for range 50 {
					pipe.XAdd(ctx, &redis.XAddArgs{Stream: stream(busy), Values: []any{"id", minter.Next(time.Now()), "kind", "chat",
						"at", time.Now().UTC().Format(time.RFC3339), "player", "ana", "text", "hi"}})
				}
				pipe.ZAddGT(ctx, event.RegistryKey, redis.Z{Score: float64(time.Now().UnixMilli()), Member: busy})
				if _, err := pipe.Exec(ctx); err != nil {
					return // the server is gone: the test is ending
				}
				added.Add(50)
				continue
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	t.Cleanup(func() { close(stop); <-done })
	waitFor(t, 10*time.Second, "the busy game's backlog under way", func() bool { return busyDone.Load() >= 100 })

	id := add(t, rdb, stream(quiet)) // no registry score moved
	start := time.Now()
	wait.Until(t, 5*cfg.PollEvery, func() bool { return rec.count(id) == 1 }, func() string {
		return fmt.Sprintf("the quiet game's entry handled within 5 polls (%d busy entries handled meanwhile, %d behind)",
			busyDone.Load(), added.Load()-busyDone.Load())
	})
	if behind := added.Load() - busyDone.Load(); behind < cfg.Count {
		t.Fatalf("the busy game's backlog ran out (%d behind): the test proved nothing", behind)
	}
	t.Logf("quiet entry handled after %v, %d busy entries behind", time.Since(start).Round(time.Millisecond), added.Load()-busyDone.Load())
}

// TestSweepSurvivesRegistryMoves: writes move games to the end of the
// registry's order while a sweep pass is under way. Until 4 Dec 2026 the
// sweep paged by rank, so the games behind a page's end slid into the
// part already swept, went unseen that pass, and were forgotten at its
// end ("games no longer in the registry") though still there: a quiet one
// was then out of the poll's reach until a later pass found it again.
func TestSweepSurvivesRegistryMoves(t *testing.T) {
	ctx := context.Background()
	_, rdb := mustStart(t)
	const n = 1100 // pages of 500, 500, 100
	games := make([]string, n)
	base := time.Now().Add(-time.Hour).UnixMilli()
	pipe := rdb.Pipeline()
	for i := range games {
		games[i] = fmt.Sprintf("rk-%04d", i)
		pipe.XAdd(ctx, &redis.XAddArgs{Stream: stream(games[i]), Values: []any{"id", minter.Next(time.Now()), "kind", "chat",
			"at", time.Now().UTC().Format(time.RFC3339), "player", "ana", "text", "hi"}})
		pipe.ZAdd(ctx, event.RegistryKey, redis.Z{Score: float64(base + int64(i)), Member: games[i]}) // rank i
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	cfg := registryConfig(t, rdb, "c1")
	logs := &logBuffer{}
	cfg.Logger = slog.New(slog.NewTextHandler(io.MultiWriter(logs, tbWriter{t}), &slog.HandlerOptions{Level: slog.LevelInfo}))
	cfg.SweepEvery = 6 * time.Second // pass 2 on: a page every 2s
	cfg.ActiveWindow = time.Minute   // written games stay hot for the test
	cfg.PollEvery = 100 * time.Millisecond
	cfg.Handler = rec.handler
	c := mustOpen(t, cfg)
	waitFor(t, 30*time.Second, "every entry handled", func() bool { return len(rec.ids()) == n })
	// A live game: written now, hot for the rest of the test.
	hot := "rk-live"
	first := add(t, rdb, stream(hot))
	if err := rdb.ZAddGT(ctx, event.RegistryKey, redis.Z{Score: float64(time.Now().UnixMilli()), Member: hot}).Err(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the live game's entry handled", func() bool { return rec.count(first) == 1 })

	pages := func() int64 { return commandCalls(t, rdb)["zrange"] }
	// Pass 1 is three pages at once; the 4th ZRANGE is pass 2's first.
	waitFor(t, 10*time.Second, "pass 2's first page", func() bool { return pages() >= 4 })
	if p := pages(); p != 4 {
		t.Fatalf("%d sweep pages already; want to act between pass 2's first and second", p)
	}
	for _, g := range games[:10] { // swept already; written now, as a writer does
		if err := rdb.ZAddGT(ctx, event.RegistryKey, redis.Z{Score: float64(time.Now().UnixMilli()), Member: g}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	// The live game scored back behind the sweep's cursor by hand (plain
	// ZADD): no pass sees it this time, and it must not be forgotten for
	// that while it is hot.
	if err := rdb.ZAdd(ctx, event.RegistryKey, redis.Z{Score: float64(base - 1), Member: hot}).Err(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "pass 2 over", func() bool { return pages() >= 6 })

	// A game that was behind the first page's end: an entry with no score
	// move is the poll's to find, long before the sweep comes back to it.
	id := add(t, rdb, stream(games[500]))
	waitFor(t, 10*time.Second, "the entry handled, or pass 3's first page", func() bool {
		return rec.count(id) == 1 || pages() >= 7
	})
	if rec.count(id) != 1 {
		t.Errorf("an entry of %s waited for the next sweep pass: the poll no longer read it", games[500])
	}
	if k := logs.count("games no longer in the registry; forgotten"); k != 0 {
		t.Errorf("%d passes forgot games that never left the registry", k)
	}
	if st := c.Stats(); st.Known != n+1 {
		t.Errorf("known games = %d, want %d", st.Known, n+1)
	}
	last := add(t, rdb, stream(hot)) // no score move: the hot read's
	waitFor(t, 2*time.Second, "the live game's next entry handled", func() bool { return rec.count(last) == 1 })
}
