package main

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/internal/gamesim"
	"github.com/codemojex/feed/internal/testkit/redistest"
	"github.com/codemojex/feed/store"
)

// onPruneStep makes f run at the given step of each game's removal, in the
// moment between prune's plan and that deletion, for the rest of the test.
func onPruneStep(t *testing.T, step string, f func(game string)) {
	t.Helper()
	pruneStepHook = func(game, s string) {
		if s == step {
			f(game)
		}
	}
	t.Cleanup(func() { pruneStepHook = nil })
}

// storedLines returns how many lines of game the store at path holds.
func storedLines(t *testing.T, path, game string) int64 {
	t.Helper()
	db, err := store.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	g, err := db.Game(context.Background(), game)
	if errors.Is(err, store.ErrNotFound) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return g.Events
}

// TestPruneKeepsLineStoredSincePlan: a game that gets an event between
// prune's plan and the deletion of its store lines, and whose event the
// renderer stores first (the writer's registry score not there yet),
// lost that line with the others: prune deleted every line of the game,
// then found the registry score old and removed the game, the new line
// gone for good. Prune now deletes only while the game has no line stored
// after its plan (store.DeleteGameUpTo), and reports the game late.
func TestPruneKeepsLineStoredSincePlan(t *testing.T) {
	s := redistest.MustStart(t)
	rdb := s.Client(t)
	ctx := context.Background()
	const game = "old-1"
	evs, end := playToGameOver(t, game)
	m := event.NewMinter(1)
	if _, err := gamesim.Append(ctx, rdb, m, game, evs[:end+1]...); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "feed.db")
	mustRunCtl(t, s.Addr, "rebuild", "-db", path)
	register(t, rdb, game, twoDaysAgo())
	// Between the plan and the delete: a new match's first event, appended
	// and stored (a rebuild stands for the renderer).
	onPruneStep(t, stepStore, func(string) {
		if _, err := gamesim.Append(ctx, rdb, m, game, evs[end+1]); err != nil {
			t.Error(err)
		}
		if out, errOut, err := runCtl(t, s.Addr, "rebuild", "-db", path, "-yes"); err != nil {
			t.Errorf("rebuild: %v\n%s%s", err, out, errOut)
		}
	})
	out := mustRunCtl(t, s.Addr, "prune", "-older-than", "24h", "-db", path, "-yes")
	if n := storedLines(t, path, game); n != int64(end+2) {
		t.Errorf("store after prune: %d lines of %s, want its %d, the one stored since the plan with them\n%s", n, game, end+2, out)
	}
	if err := rdb.ZScore(ctx, event.RegistryKey, game).Err(); err != nil {
		t.Errorf("%s not registered after prune: %v\n%s", game, err, out)
	}
	if !strings.Contains(out, "late   "+game+": an event arrived since the plan (a line stored since): nothing of it removed") {
		t.Errorf("prune does not report %s late:\n%s", game, out)
	}
}

// TestPruneStreamsKeepsEntryAddedSincePlan: prune -streams deleted a
// game's streams whatever they held by then. An entry XADDed between the
// plan and the DEL (a writer's event, its registry score not there yet; a
// dead letter a renderer wrote) was deleted with them, and with the score
// still old the game left the registry too: the event was lost for good,
// and no line of it ever stored. Each key is now deleted only while
// nothing was added to it since the plan, in one script (keyMarkScript);
// otherwise it stays, with the keys after it, and the game stays
// registered and is reported late.
func TestPruneStreamsKeepsEntryAddedSincePlan(t *testing.T) {
	for _, tc := range []struct {
		name string
		key  func(game string) string // where the entry arrives
		kept int                      // keys of gameKeys kept, from the end
	}{
		{name: "event stream", key: event.StreamKey, kept: 3},
		{name: "dead-letter stream", key: event.DeadKey, kept: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := redistest.MustStart(t)
			rdb := s.Client(t)
			ctx := context.Background()
			const game = "old-1"
			handledWithDeadLetter(t, rdb, game)
			register(t, rdb, game, twoDaysAgo())
			var late string
			onPruneStep(t, stepStreams, func(string) {
				id, err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: tc.key(game), Values: []any{"kind", "chat", "player", "bob", "text", "rematch?"}}).Result()
				if err != nil {
					t.Error(err)
				}
				late = id
			})
			out := mustRunCtl(t, s.Addr, "prune", "-older-than", "24h", "-streams", "-yes")
			xs, err := rdb.XRange(ctx, tc.key(game), late, late).Result()
			if err != nil || len(xs) != 1 {
				t.Errorf("entry %s added to %s since the plan: %v, %v after prune; want it kept\n%s", late, tc.key(game), xs, err, out)
			}
			keys := gameKeys(game)
			for i, k := range keys {
				want := int64(0)
				if i >= len(keys)-tc.kept {
					want = 1
				}
				if n, err := rdb.Exists(ctx, k).Result(); err != nil || n != want {
					t.Errorf("after prune, %s: exists %d, %v; want %d\n%s", k, n, err, want, out)
				}
			}
			if err := rdb.ZScore(ctx, event.RegistryKey, game).Err(); err != nil {
				t.Errorf("%s not registered after prune: %v\n%s", game, err, out)
			}
			if !strings.Contains(out, "late   "+game+": an event arrived since the plan ("+tc.key(game)+": ") {
				t.Errorf("prune does not report %s late for %s:\n%s", game, tc.key(game), out)
			}
		})
	}
}
