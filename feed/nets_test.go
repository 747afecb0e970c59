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
	// Within 15 polls: a starved poll waits as long as the backlog lasts,
	// which the writer keeps up until the test ends, so the margin only
	// spares a loaded host's slow turns.
	wait.Until(t, 15*cfg.PollEvery, func() bool { return rec.count(id) == 1 }, func() string {
		return fmt.Sprintf("the quiet game's entry handled within 15 polls (%d busy entries handled meanwhile, %d behind)",
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
	// A pass is three pages, a page every 2 s from pass 2 on (pass 1's
	// three at once): ZRANGE number 3k+1 is pass k+1's first. The moves
	// below are made between a pass's first page and its second, from
	// pass 2 on, and made again in the next pass if a loaded host let the
	// second page come first.
	var at int64 // the pass's first page, once the moves were made before its second
	for try := 0; at == 0; try++ {
		if try == 5 {
			t.Fatalf("no pass's second page came after the moves were made in five passes")
		}
		var p int64
		waitFor(t, 10*time.Second, "a pass's first page", func() bool { p = pages(); return p >= 4 && (p-1)%3 == 0 })
		for _, g := range games[:10] { // swept already; written now, as a writer does
			if err := rdb.ZAddGT(ctx, event.RegistryKey, redis.Z{Score: float64(time.Now().UnixMilli()), Member: g}).Err(); err != nil {
				t.Fatal(err)
			}
		}
		// The live game scored back behind the sweep's cursor by hand
		// (plain ZADD): no pass sees it this time, and it must not be
		// forgotten for that while it is hot.
		if err := rdb.ZAdd(ctx, event.RegistryKey, redis.Z{Score: float64(base - 1), Member: hot}).Err(); err != nil {
			t.Fatal(err)
		}
		if pages() == p {
			at = p
		}
	}
	waitFor(t, 10*time.Second, "the pass over", func() bool { return pages() >= at+2 })

	// A game that was behind the first page's end: an entry with no score
	// move is the poll's to find, long before the sweep comes back to it.
	id := add(t, rdb, stream(games[500]))
	waitFor(t, 10*time.Second, "the entry handled, or the next pass's first page", func() bool {
		return rec.count(id) == 1 || pages() >= at+3
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
