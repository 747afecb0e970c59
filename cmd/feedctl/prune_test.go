package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/feed"
	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/internal/gamesim"
	"github.com/codemojex/feed/internal/testkit/redistest"
	"github.com/codemojex/feed/internal/testkit/wait"
	"github.com/codemojex/feed/store"
)

// TestPruneStreamsLeavesNoKeys: prune -streams deletes every key of the
// game, the dead positions set of its dead letters included. That set is
// per game and never expires: left behind, each pruned game that ever had
// a dead letter kept up to 100,000 members in Redis for good, so memory
// grew with every game ever played.
func TestPruneStreamsLeavesNoKeys(t *testing.T) {
	s := redistest.MustStart(t)
	rdb := s.Client(t)
	ctx := context.Background()
	const game = "old-1"
	key := event.StreamKey(game)
	handledWithDeadLetter(t, rdb, game)
	posKey := feed.DeadPositionsKey(event.DeadKey(game))
	if n, err := rdb.Exists(ctx, posKey).Result(); err != nil || n != 1 {
		t.Fatalf("dead positions set %s: exists %d, %v", posKey, n, err)
	}
	register(t, rdb, game, twoDaysAgo())
	mustRunCtl(t, s.Addr, "prune", "-older-than", "24h", "-streams", "-yes")
	for _, k := range []string{event.RegistryKey, key, event.DeadKey(game), posKey} {
		if n, err := rdb.Exists(ctx, k).Result(); err != nil || n != 0 {
			t.Errorf("after prune -streams, %s: exists %d, %v", k, n, err)
		}
	}
}

// TestPrunePlanShowsStoreLines: a registered game that ended on its stream
// (a game_over among its last entries) is removed from the -db store too,
// whatever the store says of it; here the stream went on with a new match,
// so the store has it playing. The plan, -dry-run's whole answer, must
// name the store's lines: it said "registry" alone, and the run then
// deleted every line of the game from the store.
func TestPrunePlanShowsStoreLines(t *testing.T) {
	s := redistest.MustStart(t)
	rdb := s.Client(t)
	ctx := context.Background()
	const game = "old-1"
	evs, end := playToGameOver(t, game)
	if end+3 > len(evs) {
		t.Fatalf("no game_over followed by a new match in %d events", len(evs))
	}
	evs = evs[:end+3] // the game_over, then the next match's first entries
	if _, err := gamesim.Append(ctx, rdb, event.NewMinter(1), game, evs...); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "feed.db")
	mustRunCtl(t, s.Addr, "rebuild", "-db", path)
	lines := func() int64 {
		db, err := store.Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		g, err := db.Game(ctx, game)
		if errors.Is(err, store.ErrNotFound) {
			return 0
		}
		if err != nil {
			t.Fatal(err)
		}
		return g.Events
	}
	n := lines()
	if n != int64(len(evs)) {
		t.Fatalf("store holds %d lines of %s, want %d", n, game, len(evs))
	}
	// The rebuild made the group; the game's last event is two days old.
	register(t, rdb, game, twoDaysAgo())
	out := mustRunCtl(t, s.Addr, "prune", "-older-than", "24h", "-db", path, "-dry-run")
	want := fmt.Sprintf("remove %s: registry, store (%d lines)", game, n)
	if !strings.Contains(out, want) {
		t.Fatalf("prune -dry-run does not say %q:\n%s", want, out)
	}
	mustRunCtl(t, s.Addr, "prune", "-older-than", "24h", "-db", path, "-yes")
	if n := lines(); n != 0 {
		t.Fatalf("after prune, the store holds %d lines of %s", n, game)
	}
}

// TestPruneKeepsGameWithoutTheGroup: prune keeps a game while the group it
// is given has not handled the game's stream; a stream on which that group
// does not exist has not been handled by it either. Here the renderers run
// as group host-a and hold an entry of an ended game pending, and the
// operator runs prune without -group (so "feed"): the check found no group
// "feed", took the game for handled, and -streams deleted its stream with
// the pending entry.
func TestPruneKeepsGameWithoutTheGroup(t *testing.T) {
	s := redistest.MustStart(t)
	rdb := s.Client(t)
	ctx := context.Background()
	const game = "old-1"
	key := event.StreamKey(game)
	evs, end := playToGameOver(t, game)
	if _, err := gamesim.Append(ctx, rdb, event.NewMinter(1), game, evs[:end+1]...); err != nil {
		t.Fatal(err)
	}
	// Group host-a read the stream and handled none of it yet.
	if err := rdb.XGroupCreate(ctx, key, "host-a", "0").Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "host-a", Consumer: "r1", Streams: []string{key, ">"}}).Err(); err != nil {
		t.Fatal(err)
	}
	register(t, rdb, game, twoDaysAgo())
	out := mustRunCtl(t, s.Addr, "prune", "-older-than", "24h", "-streams", "-yes")
	if n, err := rdb.Exists(ctx, key).Result(); err != nil || n != 1 {
		t.Fatalf("prune without group host-a's name deleted %s, whose entries host-a holds pending (exists %d, %v):\n%s", key, n, err, out)
	}
	if !strings.Contains(out, "keep   "+game) {
		t.Fatalf("prune does not say it keeps %s:\n%s", game, out)
	}
	// With the group's name it is kept for what that group still holds.
	out, errOut, err := runCtl(t, s.Addr, "-group", "host-a", "prune", "-older-than", "24h", "-streams", "-yes")
	if err != nil || !strings.Contains(out, "pending entries") {
		t.Fatalf("prune -group host-a: %v\n%s%s", err, out, errOut)
	}
}

// TestPruneKeepsStoreGameBackInRegistry: a game the store has ended before
// the cut, but which the registry scores after it (an event came since; here
// a malformed one the renderer dead-lettered, so the store did not move), is
// live by the registry's word and is kept. The store's candidates were
// meant for games another host's prune already took out of the registry,
// but the plan never looked at the registry for them: the run deleted the
// game's lines and, with -streams, its stream and the new dead letter, and
// left the game registered with no stream.
func TestPruneKeepsStoreGameBackInRegistry(t *testing.T) {
	s := redistest.MustStart(t)
	rdb := s.Client(t)
	ctx := context.Background()
	const game = "old-1"
	key := event.StreamKey(game)
	evs, end := playToGameOver(t, game)
	then := twoDaysAgo()
	m := event.NewMinter(1)
	items := make([]gamesim.Item, end+1)
	for i, e := range evs[:end+1] {
		items[i] = gamesim.Item{Game: game, ID: m.Next(then), Event: e}
	}
	if err := gamesim.AppendItems(ctx, rdb, then, items...); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "feed.db")
	mustRunCtl(t, s.Addr, "rebuild", "-db", path)
	// Today, a malformed entry (no id), scored as a writer does.
	if err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: key, Values: []any{"kind", "chat", "player", "ada", "text", "gg"}}).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.ZAddGT(ctx, event.RegistryKey, redis.Z{Score: float64(time.Now().UnixMilli()), Member: game}).Err(); err != nil {
		t.Fatal(err)
	}
	// The group handles the stream: every entry acked, the new one dead-lettered.
	c := openStreamConsumer(t, rdb, key)
	wait.For(t, 10*time.Second, "the stream handled, the new entry dead-lettered", func() bool {
		st := c.Stats()
		return st.Acked == int64(end+1) && st.Dead == 1
	})
	c.Close()
	out := mustRunCtl(t, s.Addr, "prune", "-older-than", "24h", "-db", path, "-streams", "-yes")
	for _, k := range []string{key, event.DeadKey(game)} {
		if n, err := rdb.Exists(ctx, k).Result(); err != nil || n != 1 {
			t.Errorf("prune deleted %s of a game the registry scores today (exists %d, %v)", k, n, err)
		}
	}
	db, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if g, err := db.Game(ctx, game); err != nil || g.Events != int64(end+1) {
		t.Errorf("store after prune: %+v, %v; want its %d lines", g, err, end+1)
	}
	if !strings.Contains(out, "keep   "+game) {
		t.Errorf("prune does not say it keeps %s:\n%s", game, out)
	}
}

// TestPruneStreamsRerunAfterFailure: a prune -streams that fails half-way
// (here Redis refuses its DEL: an ACL, standing for a connection lost or a
// Ctrl-C at that moment) must leave the game where a second run finds it.
// It took the game out of the registry first, and the registry is what the
// plan reads: the run after found nothing to remove, said so, and the
// game's streams stayed in Redis for good.
func TestPruneStreamsRerunAfterFailure(t *testing.T) {
	s := redistest.MustStart(t)
	rdb := s.Client(t)
	ctx := context.Background()
	const game = "old-1"
	key := event.StreamKey(game)
	addGameOver(t, rdb, game)
	register(t, rdb, game, twoDaysAgo())
	if err := rdb.Do(ctx, "ACL", "SETUSER", "nodel", "on", ">pw", "~*", "&*", "+@all", "-del").Err(); err != nil {
		t.Fatal(err)
	}
	var out, errb strings.Builder
	err := Run(ctx, []string{"-redis", "redis://nodel:pw@" + s.Addr, "prune", "-older-than", "24h", "-streams", "-yes"},
		strings.NewReader(""), &out, &errb)
	if err == nil || !strings.Contains(err.Error(), "delete streams") {
		t.Fatalf("prune without DEL: err %v, want the DEL refused\n%s%s", err, out.String(), errb.String())
	}
	o := mustRunCtl(t, s.Addr, "prune", "-older-than", "24h", "-streams", "-yes")
	for _, k := range []string{event.RegistryKey, key} {
		if n, err := rdb.Exists(ctx, k).Result(); err != nil || n != 0 {
			t.Errorf("after a failed prune -streams and a second one, %s: exists %d, %v\n%s", k, n, err, o)
		}
	}
}

// TestStrayArgumentRefused: a command's flags end at its first argument
// that is not a flag, and feedctl's commands take no such argument, so
// everything after one was dropped unread: "prune -older-than 24h -yes
// old-1 -dry-run" pruned for real, its -dry-run never seen, and "dead drop
// -id A B" dropped A alone without a word about B. A stray argument is
// refused before anything is done.
func TestStrayArgumentRefused(t *testing.T) {
	s := redistest.MustStart(t)
	rdb := s.Client(t)
	ctx := context.Background()
	const game = "old-1"
	key := event.StreamKey(game)
	addGameOver(t, rdb, game)
	register(t, rdb, game, twoDaysAgo())
	for _, args := range [][]string{
		{"prune", "-older-than", "24h", "-streams", "-yes", game, "-dry-run"},
		{"replay", "-game", game, "-yes", "now", "-dry-run"},
		{"rebuild", "-db", filepath.Join(t.TempDir(), "x.db"), "stray"},
		{"status", "stray"},
		{"dead", "list", "-game", game, "stray"},
		{"dead", "drop", "-game", game, "-id", "1-0", "2-0"},
	} {
		out, errOut, err := runCtl(t, s.Addr, args...)
		if err == nil || !strings.Contains(err.Error(), "unexpected argument") {
			t.Errorf("%q: err %v, want a stray argument refused\n%s%s", args, err, out, errOut)
		}
	}
	for _, k := range []string{event.RegistryKey, key} {
		if n, err := rdb.Exists(ctx, k).Result(); err != nil || n != 1 {
			t.Errorf("%s: exists %d, %v: a command with a stray argument acted", k, n, err)
		}
	}
	gs, err := rdb.XInfoGroups(ctx, key).Result()
	if err != nil || len(gs) != 0 {
		t.Errorf("groups on %s: %+v, %v: replay with a stray argument acted", key, gs, err)
	}
}
