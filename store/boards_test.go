package store_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/store"
)

// TestBoardCacheAgreesWithFile shares one file between two handles, as two
// renderer processes of a host do, and writes generated games through
// either, shuffled and duplicated, now and then deleting a game. After each
// batch, each handle's ScoreboardAt at the store's max seq must equal what
// a fresh read of the file says, and most of them must come from memory.
func TestBoardCacheAgreesWithFile(t *testing.T) {
	for _, seed := range []uint64{3, 17} {
		t.Run("seed="+strconv.FormatUint(seed, 10), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			path := filepath.Join(t.TempDir(), "feed.db")
			a := MustOpen(t, path)
			b := MustOpen(t, path)
			handles := []*store.DB{a, b}
			evs := genGames(t, seed, 3)
			games := gamesOf(evs)
			r := rand.New(rand.NewPCG(seed, 99))
			hits, asks := 0, 0
			for n, batch := range deliveries(evs, r, 20) {
				w := handles[r.IntN(2)]
				mustUpsert(t, w, batch)
				if n%97 == 96 {
					g := games[r.IntN(len(games))]
					if _, err := handles[r.IntN(2)].DeleteGame(ctx, g); err != nil {
						t.Fatal(err)
					}
				}
				max, err := a.MaxSeq(ctx)
				if err != nil {
					t.Fatal(err)
				}
				for _, h := range handles {
					for _, g := range games {
						want, err := h.Scoreboard(ctx, g)
						if err != nil {
							continue // deleted, or not started yet
						}
						asks++
						if store.BoardCached(h, g, max) {
							hits++
						}
						got, err := h.ScoreboardAt(ctx, g, max)
						if err != nil {
							t.Fatalf("batch %d: ScoreboardAt %s: %v", n, g, err)
						}
						if got.Game != want.Game || !slices.Equal(got.Players, want.Players) {
							t.Fatalf("batch %d, handle %p, game %s:\n got %+v\nwant %+v", n, h, g, got, want)
						}
					}
				}
			}
			// A handle's own writes keep its cache; the other's evict it.
			if hits < asks/4 {
				t.Errorf("the cache served %d of %d boards; want at least a quarter", hits, asks)
			}
		})
	}
}

// TestBoardCacheConcurrentReads reads boards while the same handle writes,
// for the race detector, then checks the cache against the file.
func TestBoardCacheConcurrentReads(t *testing.T) {
	ctx := context.Background()
	db := MustOpen(t, "")
	evs := genGames(t, 5, 2)
	games := gamesOf(evs)
	var wg sync.WaitGroup
	done := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			seq, err := db.MaxSeq(ctx)
			if err != nil {
				t.Error(err)
				return
			}
			db.ScoreboardAt(ctx, games[i%len(games)], seq) // may be not found yet
		}
	}()
	for _, batch := range inBatches(evs, 7) {
		mustUpsert(t, db, batch)
	}
	close(done)
	wg.Wait()
	max, err := db.MaxSeq(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range games {
		want, err := db.Scoreboard(ctx, g)
		if err != nil {
			t.Fatal(err)
		}
		got, err := db.ScoreboardAt(ctx, g, max)
		if err != nil {
			t.Fatal(err)
		}
		if got.Game != want.Game || !slices.Equal(got.Players, want.Players) {
			t.Fatalf("game %s:\n got %+v\nwant %+v", g, got, want)
		}
	}
}

// TestBoardCacheDeleteByPeer deletes a game through one handle while the
// other holds its board in memory: once the other writes after it, it must
// not serve the deleted game's board.
func TestBoardCacheDeleteByPeer(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "feed.db")
	a, b := MustOpen(t, path), MustOpen(t, path)
	at := time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC)
	mint := event.NewMinter(1)
	join := func(game, player string) store.Event {
		return mkEvent(t, mint.Next(at), game, event.KindPlayerJoined, at, "player", player, "avatar", "🦊")
	}
	// "keep" holds the max seq, so the delete does not move it back.
	mustUpsert(t, a, []store.Event{join("gone", "ann"), join("keep", "cy")})
	seq, err := a.MaxSeq(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.ScoreboardAt(ctx, "gone", seq); err != nil {
		t.Fatal(err)
	}
	if !store.BoardCached(b, "gone", seq) {
		t.Fatal("b did not cache the board it read")
	}
	if _, err := a.DeleteGame(ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	// b's own write moves its cache past the delete, which left no line
	// in the gap of seqs to evict "gone" by.
	mustUpsert(t, b, []store.Event{join("other", "bob")})
	if seq, err = a.MaxSeq(ctx); err != nil {
		t.Fatal(err)
	}
	if sb, err := b.ScoreboardAt(ctx, "gone", seq); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("b served a deleted game's board: %+v, %v", sb, err)
	}
}

// TestBoardCacheOwnDeleteRacesRead: a process's own DeleteGame racing its
// own ScoreboardAt, whose read began before the delete, must not leave the
// deleted game's board in memory.
func TestBoardCacheOwnDeleteRacesRead(t *testing.T) {
	ctx := context.Background()
	db := MustOpen(t, "")
	mint := event.NewMinter(1)
	at := time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC)
	join := func(game, player string) store.Event {
		return mkEvent(t, mint.Next(at), game, event.KindPlayerJoined, at, "player", player, "avatar", "🦊")
	}
	mustUpsert(t, db, []store.Event{join("keep", "cy")})
	for i := range 3000 {
		mustUpsert(t, db, []store.Event{join("gone", "ann"), join("keep", "cy")})
		seq, err := db.MaxSeq(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); db.ScoreboardAt(ctx, "gone", seq) }()
		go func() {
			defer wg.Done()
			if _, err := db.DeleteGame(ctx, "gone"); err != nil {
				t.Error(err)
			}
		}()
		wg.Wait()
		if store.BoardCached(db, "gone", seq) {
			if _, err := db.Scoreboard(ctx, "gone"); errors.Is(err, store.ErrNotFound) {
				sb, _ := db.ScoreboardAt(ctx, "gone", seq)
				t.Fatalf("iteration %d: deleted game's board served from memory at seq %d: %+v", i, seq, sb)
			}
		}
	}
}

// TestBoardCacheDeleteByPeerBeforeBackfill: a web server's backfill reads
// MaxSeq and asks for the game's board at it. A board this process cached
// before another process deleted the game must not be served then, though
// this process has not written since; nor once a read of another board
// saw the deletion, when the deleted game held the newest lines and
// max(seq) went back.
func TestBoardCacheDeleteByPeerBeforeBackfill(t *testing.T) {
	for _, newest := range []bool{false, true} {
		t.Run("newest="+strconv.FormatBool(newest), func(t *testing.T) {
			ctx := context.Background()
			path := filepath.Join(t.TempDir(), "feed.db")
			a, b := MustOpen(t, path), MustOpen(t, path)
			at := time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC)
			mint := event.NewMinter(1)
			join := func(game, player string) store.Event {
				return mkEvent(t, mint.Next(at), game, event.KindPlayerJoined, at, "player", player, "avatar", "🦊")
			}
			evs := []store.Event{join("gone", "ann"), join("keep", "cy")}
			if newest {
				evs[0], evs[1] = evs[1], evs[0]
			}
			mustUpsert(t, a, evs)
			seq, err := a.MaxSeq(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, g := range []string{"gone", "keep"} {
				if _, err := a.ScoreboardAt(ctx, g, seq); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := b.DeleteGame(ctx, "gone"); err != nil {
				t.Fatal(err)
			}
			if newest {
				// A read of another board sees the deletion first.
				if _, err := a.ScoreboardAt(ctx, "keep", seq+1); err != nil {
					t.Fatal(err)
				}
				if store.BoardCached(a, "gone", seq) {
					t.Fatal("a read saw the deletion and kept the deleted game's board")
				}
			}
			max, err := a.MaxSeq(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if sb, err := a.ScoreboardAt(ctx, "gone", max); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("a served a deleted game's board at max seq %d: %+v, %v", max, sb, err)
			}
		})
	}
}
