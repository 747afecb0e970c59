package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/feed"
	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/internal/gamesim"
	"github.com/codemojex/feed/internal/testkit/redistest"
	"github.com/codemojex/feed/internal/testkit/wait"
)

// TestReplayWakesRenderers: a replayed game is re-delivered at the
// renderers' next beat, on a quiet game and on a game pruned from the
// registry alike (docs/operations.md, "Retention": a pruned game's
// retained stream can still be replayed into a live store). Renderers read
// a game when its registry score moves (docs/reader-law.md, "The read
// set"); a replay that only rewinds the group left a quiet game to the
// poll (here -poll-every stands for it at an hour) and a pruned one, which
// a renderer started since never knew, for good.
func TestReplayWakesRenderers(t *testing.T) {
	s := redistest.MustStart(t)
	rdb := s.Client(t)
	ctx := context.Background()
	const game = "quiet-1"
	var handled handledCount
	ids, err := gamesim.Append(ctx, rdb, event.NewMinter(1), game, gamesim.Play(game, 1, 3)...)
	if err != nil {
		t.Fatal(err)
	}
	c := openQuietConsumer(t, rdb, "r1", handled.handle)
	wait.For(t, 10*time.Second, "every entry handled once, the game quiet", func() bool {
		st := c.Stats()
		return handled.each(ids, 1)() && st.Known == 1 && st.Hot == 0 && st.Working == 0
	})
	// A quiet game.
	mustRunCtl(t, s.Addr, "replay", "-game", game, "-yes")
	wait.For(t, 5*time.Second, "the quiet game's replay handled", handled.each(ids, 2))
	wait.For(t, 5*time.Second, "the game quiet again", func() bool {
		st := c.Stats()
		return st.Hot == 0 && st.Working == 0
	})
	c.Close()
	// A game pruned from the registry, and a renderer started since.
	if err := rdb.ZRem(ctx, event.RegistryKey, game).Err(); err != nil {
		t.Fatal(err)
	}
	c = openQuietConsumer(t, rdb, "r2", handled.handle)
	wait.For(t, 10*time.Second, "the new consumer running, knowing no game", func() bool {
		st := c.Stats()
		return st.Known == 0 && c.Ready() == nil
	})
	mustRunCtl(t, s.Addr, "replay", "-game", game, "-yes")
	wait.For(t, 5*time.Second, "the pruned game's replay handled", handled.each(ids, 3))
}

// TestReplayTrimmedLagSettles: a replay of a stream the writer trimmed
// (MAXLEN) must leave the group's lag at 0 once every retained entry is
// handled again. The rewind said ENTRIESREAD 0, which counts the trimmed
// entries as still to be read: after the re-delivery the group's lag
// stayed at the number trimmed for good, so feedctl status and the lag
// gauge reported a backlog that did not exist, and the renderers' census
// marked the game due for a read at every beat.
func TestReplayTrimmedLagSettles(t *testing.T) {
	s := redistest.MustStart(t)
	rdb := s.Client(t)
	ctx := context.Background()
	const game = "trimmed-1"
	key := event.StreamKey(game)
	var handled handledCount
	ids, err := gamesim.Append(ctx, rdb, event.NewMinter(1), game, gamesim.Play(game, 1, 10)...)
	if err != nil {
		t.Fatal(err)
	}
	c, err := feed.Open(ctx, feed.Config{
		Client: rdb, Group: "feed", Consumer: "r1", Registry: event.RegistryKey,
		WakeEvery: 50 * time.Millisecond, CensusEvery: 100 * time.Millisecond,
		Handler: handled.handle,
		Logger:  discardLogger(),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	wait.For(t, 10*time.Second, "every entry handled once", handled.each(ids, 1))
	const keep = 4
	if err := rdb.XTrimMaxLen(ctx, key, keep).Err(); err != nil {
		t.Fatal(err)
	}
	mustRunCtl(t, s.Addr, "replay", "-game", game, "-yes")
	wait.For(t, 10*time.Second, "the retained entries handled again", handled.each(ids[len(ids)-keep:], 2))
	var g redis.XInfoGroup
	wait.For(t, 10*time.Second, "the group past the stream's last entry, nothing pending", func() bool {
		gs, err := rdb.XInfoGroups(ctx, key).Result()
		if err != nil || len(gs) != 1 {
			return false
		}
		g = gs[0]
		return g.Pending == 0 && g.LastDeliveredID == lastPos(t, rdb, key)
	})
	if g.Lag != 0 {
		t.Fatalf("after the replay was handled, group lag %d (entries-read %d), want 0: the %d trimmed entries counted as unread",
			g.Lag, g.EntriesRead, len(ids)-keep)
	}
}

// lastPos is the stream's last entry's position.
func lastPos(t *testing.T, rdb redis.UniversalClient, key string) string {
	t.Helper()
	xs, err := rdb.XRevRangeN(context.Background(), key, "+", "-", 1).Result()
	if err != nil || len(xs) != 1 {
		t.Fatalf("last entry of %s: %v %v", key, xs, err)
	}
	return xs[0].ID
}

// TestReplayRefusesWhatItCannotRewind: a replay of a game that has no
// stream (a mistyped -game, or one pruned with -streams), or whose stream
// the group does not read (a mistyped -group, or a game no renderer has
// found yet), is refused with what is wrong, the -dry-run as the run, and
// changes nothing. The dry run promised "would rewind group typo on g1 and
// re-deliver its 6 retained entries" (exit 0), and the run failed with
// Redis's NOGROUP, or for a missing stream with its advice to create the
// key with MKSTREAM.
func TestReplayRefusesWhatItCannotRewind(t *testing.T) {
	s := redistest.MustStart(t)
	rdb := s.Client(t)
	ctx := context.Background()
	if _, err := gamesim.Append(ctx, rdb, event.NewMinter(1), "g1", gamesim.Play("g1", 1, 6)...); err != nil {
		t.Fatal(err)
	}
	if _, err := gamesim.Append(ctx, rdb, event.NewMinter(2), "nogroup-1", gamesim.Play("nogroup-1", 2, 3)...); err != nil {
		t.Fatal(err)
	}
	if err := rdb.XGroupCreate(ctx, event.StreamKey("g1"), "feed", "$").Err(); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"no stream", []string{"replay", "-game", "nosuch-1"}, "no stream codemojex:{nosuch-1}:events"},
		{"another group", []string{"-group", "typo", "replay", "-game", "g1"}, "no group typo on codemojex:{g1}:events (groups: feed)"},
		{"no group yet", []string{"replay", "-game", "nogroup-1"}, "no group reads codemojex:{nogroup-1}:events yet"},
	} {
		for _, mode := range []string{"-dry-run", "-yes"} {
			out, errOut, err := runCtl(t, s.Addr, append(tt.args, mode)...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("%s, %s: %v, want an error saying %q\nstdout: %s\nstderr: %s", tt.name, mode, err, tt.want, out, errOut)
			}
		}
	}
	// The group on g1 was left where it was.
	groups, err := rdb.XInfoGroups(ctx, event.StreamKey("g1")).Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(groups) != 1 || groups[0].Lag != 0 {
		t.Errorf("groups on g1 after the refused replays: %+v, want feed alone with no lag", groups)
	}
	// And the replay that can be done still is.
	mustRunCtl(t, s.Addr, "replay", "-game", "g1", "-yes")
}
