package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/feed"
	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/internal/testkit/redistest"
	"github.com/codemojex/feed/internal/testkit/wait"
)

// TestPruneFinishesGameLateAtItsDeadLetters: a prune -streams that finds
// a dead letter written to a game after its plan deletes the game's event
// stream (and its store lines), keeps the dead-letter stream and the
// dead positions set, and leaves the game registered, late. The next run
// never took it up again: its plan looks for a game_over on the event
// stream, which is gone, and the store no longer has the game, so the
// game was taken for a quiet one that never ended, left out of the plan
// without a word, registered with its dead letters for good. A later run
// now plans the keys that remain and unregisters the game, and what is
// added after its own plan still stays. A later run without -streams
// keeps it, saying why: unregistered, its dead letters would be found by
// no run after. A renderer started between the runs brings its event
// stream back, empty (its door, XGROUP CREATE … MKSTREAM): that is no
// stream to keep it for either.
func TestPruneFinishesGameLateAtItsDeadLetters(t *testing.T) {
	for _, tc := range []struct {
		name      string
		late      func(game string) string // where an entry arrives during the second run ("": none)
		noStreams bool                     // the second run is without -streams
		renderer  bool                     // a renderer starts between the runs
	}{
		{name: "finished"},
		{name: "a renderer started between the runs", renderer: true},
		{name: "without -streams", noStreams: true},
		{name: "an event since the second plan", late: event.StreamKey},
		{name: "a dead letter since the second plan", late: event.DeadKey},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := redistest.MustStart(t)
			rdb := s.Client(t)
			ctx := context.Background()
			const game = "old-1"
			handledWithDeadLetter(t, rdb, game)
			path := filepath.Join(t.TempDir(), "feed.db")
			mustRunCtl(t, s.Addr, "rebuild", "-db", path)
			register(t, rdb, game, twoDaysAgo())
			addLate := func(key string) string {
				id, err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: key, Values: []any{"kind", "chat", "player", "bob", "text", "rematch?"}}).Result()
				if err != nil {
					t.Error(err)
				}
				return id
			}
			// The first run: a dead letter arrives once the event stream is gone.
			onPruneStep(t, stepStreams, func(string) {
				addLate(event.DeadKey(game))
			})
			out := mustRunCtl(t, s.Addr, "prune", "-older-than", "24h", "-db", path, "-streams", "-yes")
			if !strings.Contains(out, "late   "+game+": an event arrived since the plan ("+event.DeadKey(game)+": ") {
				t.Fatalf("first prune does not report %s late at its dead letters:\n%s", game, out)
			}
			if n, err := rdb.Exists(ctx, event.StreamKey(game)).Result(); err != nil || n != 0 {
				t.Fatalf("first prune left %s: exists %d, %v\n%s", event.StreamKey(game), n, err, out)
			}
			pruneStepHook = nil
			if tc.renderer {
				// It meets the game as a new one and opens its door with
				// MKSTREAM: the event stream is back, empty.
				c := openQuietConsumer(t, rdb, "r9", func(context.Context, feed.Message) error { return nil })
				wait.For(t, 10*time.Second, "the renderer's door on "+event.StreamKey(game), func() bool {
					n, err := rdb.Exists(ctx, event.StreamKey(game)).Result()
					return err == nil && n == 1
				})
				c.Close()
			}

			dry := mustRunCtl(t, s.Addr, "prune", "-older-than", "24h", "-db", path, "-streams", "-dry-run")
			if !strings.Contains(dry, "remove "+game+": registry, streams") {
				t.Errorf("the dry run after it does not plan %s's removal:\n%s", game, dry)
			}
			if tc.noStreams {
				out := mustRunCtl(t, s.Addr, "prune", "-older-than", "24h", "-db", path, "-yes")
				if !strings.Contains(out, "keep   "+game+": its event stream is gone, but not "+event.DeadKey(game)) {
					t.Errorf("prune without -streams does not say why it keeps %s:\n%s", game, out)
				}
				for _, k := range append(gameKeys(game)[1:], event.RegistryKey) {
					if n, err := rdb.Exists(ctx, k).Result(); err != nil || n != 1 {
						t.Errorf("after prune without -streams, %s: exists %d, %v\n%s", k, n, err, out)
					}
				}
				return
			}
			var late, lateKey string
			if tc.late != nil {
				lateKey = tc.late(game)
				onPruneStep(t, stepStreams, func(string) { late = addLate(lateKey) })
			}
			out = mustRunCtl(t, s.Addr, "prune", "-older-than", "24h", "-db", path, "-streams", "-yes")
			_, regErr := rdb.ZScore(ctx, event.RegistryKey, game).Result()
			if tc.late == nil {
				for _, k := range append(gameKeys(game), event.RegistryKey) {
					if n, err := rdb.Exists(ctx, k).Result(); err != nil || n != 0 {
						t.Errorf("after the second prune, %s: exists %d, %v\n%s", k, n, err, out)
					}
				}
				if !strings.Contains(out, "remove "+game+": registry, streams") || !strings.Contains(out, "pruned 1 games") {
					t.Errorf("the second prune does not say it removed %s:\n%s", game, out)
				}
				return
			}
			if xs, err := rdb.XRange(ctx, lateKey, late, late).Result(); err != nil || len(xs) != 1 {
				t.Errorf("entry %s added to %s since the second plan: %v, %v; want it kept\n%s", late, lateKey, xs, err, out)
			}
			if regErr != nil {
				t.Errorf("%s not registered after an entry since the plan: %v\n%s", game, regErr, out)
			}
			if !strings.Contains(out, "late   "+game+": an event arrived since the plan ("+lateKey+": ") {
				t.Errorf("the second prune does not report %s late for %s:\n%s", game, lateKey, out)
			}
			// Its event stream was gone before this run: not one of the
			// keys it removed.
			if !strings.Contains(out, "; nothing from before the plan removed\n") {
				t.Errorf("the second prune does not say it removed nothing of %s:\n%s", game, out)
			}
		})
	}
}
