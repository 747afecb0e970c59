package store_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/store"
)

func TestEndedAndDeleteGame(t *testing.T) {
	ctx := context.Background()
	db := MustOpen(t, "")
	evs := genGames(t, 7, 3)
	last := map[string]time.Time{}
	for _, e := range evs {
		last[e.Game] = e.At
	}
	// A game still being played is never a candidate, however old.
	playing := mkEvent(t, event.NewMinter(99).Next(evs[0].At), "still-on", event.KindGameStarted, evs[0].At,
		"title", "on", "rounds", "3", "code_length", "4", "palette", "🍎🍌")
	mustUpsert(t, db, append(evs, playing))

	names := func(gs []store.Game) map[string]bool {
		m := map[string]bool{}
		for _, g := range gs {
			m[g.Name] = true
		}
		return m
	}
	all, err := db.Ended(ctx, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if got := names(all); len(got) != 3 || got["still-on"] {
		t.Fatalf("Ended(now) = %v, want the 3 finished games", got)
	}
	// The cut is the last line's time: a game whose last line is at the
	// cut or after is kept.
	victim := all[0].Name
	some, err := db.Ended(ctx, last[victim].Add(time.Nanosecond))
	if err != nil {
		t.Fatal(err)
	}
	if !names(some)[victim] {
		t.Fatalf("Ended(just after %s's last line) misses it: %v", victim, names(some))
	}
	if none, _ := db.Ended(ctx, last[victim]); names(none)[victim] {
		t.Fatalf("Ended(at %s's last line) includes it", victim)
	}

	before, _ := db.Count(ctx)
	n, err := db.DeleteGame(ctx, victim)
	if err != nil {
		t.Fatal(err)
	}
	after, _ := db.Count(ctx)
	if n == 0 || before-after != n {
		t.Fatalf("DeleteGame removed %d lines; count went %d -> %d", n, before, after)
	}
	if _, err := db.Game(ctx, victim); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Game(%s) after delete: %v, want ErrNotFound", victim, err)
	}
	if tl, _ := db.Timeline(ctx, victim); len(tl) != 0 {
		t.Fatalf("timeline after delete: %d lines", len(tl))
	}
	if sb, _ := db.Scoreboard(ctx, victim); len(sb.Players) != 0 {
		t.Fatalf("scoreboard after delete: %d players", len(sb.Players))
	}
	for name := range names(all) {
		if name == victim {
			continue
		}
		if g, err := db.Game(ctx, name); err != nil || g.Events == 0 {
			t.Fatalf("other game %s after delete: %+v, %v", name, g, err)
		}
	}
	if n, err := db.DeleteGame(ctx, victim); err != nil || n != 0 {
		t.Fatalf("second delete: %d, %v; want 0, nil", n, err)
	}
	// A rebuild after the delete stores the game again, all of it.
	var again []store.Event
	for _, e := range evs {
		if e.Game == victim {
			again = append(again, e)
		}
	}
	for _, r := range mustUpsert(t, db, again) {
		if !r.Inserted {
			t.Fatal("a line of the deleted game was not inserted again")
		}
	}
}

// TestDeleteGameUpToKeepsLaterLine: feedctl prune decides from a read of
// the store and deletes later; a line of the game stored in between (the
// game got an event) was deleted with the rest, for good. DeleteGameUpTo
// deletes only while every line of the game is at or below the seq read
// before the decision, and otherwise leaves the game whole: its lines,
// the new one with them, its scoreboard and its state.
func TestDeleteGameUpToKeepsLaterLine(t *testing.T) {
	ctx := context.Background()
	db := MustOpen(t, "")
	evs := genGames(t, 11, 2)
	mustUpsert(t, db, evs)
	victim, other := evs[0].Game, ""
	for _, e := range evs {
		if e.Game != victim {
			other = e.Game
			break
		}
	}
	bound, err := db.HighSeq(ctx)
	if err != nil {
		t.Fatal(err)
	}
	board, err := db.Scoreboard(ctx, victim)
	if err != nil {
		t.Fatal(err)
	}
	before, err := db.Timeline(ctx, victim)
	if err != nil {
		t.Fatal(err)
	}
	// The event that arrives between the decision and the delete.
	at := evs[len(evs)-1].At.Add(time.Minute)
	late := mkEvent(t, event.NewMinter(12).Next(at), victim, event.KindChat, at, "player", "ann", "text", "rematch?")
	mustUpsert(t, db, []store.Event{late})

	n, err := db.DeleteGameUpTo(ctx, victim, bound)
	if !errors.Is(err, store.ErrNewerLines) || n != 0 {
		t.Fatalf("DeleteGameUpTo(%s, %d) with a line stored since: %d, %v; want 0, ErrNewerLines", victim, bound, n, err)
	}
	tl, err := db.Timeline(ctx, victim)
	if err != nil || len(tl) != len(before)+1 {
		t.Fatalf("timeline of %s after the refused delete: %d lines, %v; want %d", victim, len(tl), err, len(before)+1)
	}
	if tl[len(tl)-1].EvtID != late.EvtID {
		t.Fatalf("the late line %s is not the timeline's last: %s", late.EvtID, tl[len(tl)-1].EvtID)
	}
	after, err := db.Scoreboard(ctx, victim)
	if err != nil || len(after.Players) != len(board.Players) || after.Game.Status != board.Game.Status {
		t.Fatalf("scoreboard of %s after the refused delete: %+v, %v; want %+v", victim, after, err, board)
	}
	for i, p := range board.Players {
		if after.Players[i] != p {
			t.Fatalf("player %d of %s after the refused delete: %+v, want %+v", i, victim, after.Players[i], p)
		}
	}
	// A game with nothing stored since goes, as with DeleteGame.
	if n, err := db.DeleteGameUpTo(ctx, other, bound); err != nil || n == 0 {
		t.Fatalf("DeleteGameUpTo(%s, %d): %d, %v", other, bound, n, err)
	}
	if _, err := db.Game(ctx, other); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Game(%s) after DeleteGameUpTo: %v, want ErrNotFound", other, err)
	}
	// With a bound read after the late line, the victim goes whole.
	if bound, err = db.HighSeq(ctx); err != nil {
		t.Fatal(err)
	}
	if n, err := db.DeleteGameUpTo(ctx, victim, bound); err != nil || n != int64(len(before)+1) {
		t.Fatalf("DeleteGameUpTo(%s, %d): %d, %v; want %d lines", victim, bound, n, err, len(before)+1)
	}
}

// TestDeleteAbsentGameKeepsBoards: feedctl prune deletes every planned
// game from its host's store, most of them, on a host that never
// consumed them, with no line there. Each such delete still committed a
// write and counted a deletion, and every process sharing the file (the
// host's renderers) dropped every board it held in memory on seeing the
// count move: a prune of N games absent from the store emptied the
// renderers' board caches N times. A delete that finds nothing writes
// nothing.
func TestDeleteAbsentGameKeepsBoards(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "feed.db")
	a, b := MustOpen(t, path), MustOpen(t, path)
	at := time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC)
	mint := event.NewMinter(1)
	mustUpsert(t, a, []store.Event{mkEvent(t, mint.Next(at), "keep", event.KindPlayerJoined, at, "player", "cy", "avatar", "🦊")})
	seq, err := a.MaxSeq(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.ScoreboardAt(ctx, "keep", seq); err != nil {
		t.Fatal(err)
	}
	if !store.BoardCached(b, "keep", seq) {
		t.Fatal("b did not cache the board it read")
	}
	for _, del := range []func() (int64, error){
		func() (int64, error) { return a.DeleteGame(ctx, "absent") },
		func() (int64, error) { return a.DeleteGameUpTo(ctx, "absent", seq) },
	} {
		if n, err := del(); err != nil || n != 0 {
			t.Fatalf("delete of a game the store does not hold: %d, %v", n, err)
		}
	}
	// A line of another game, and b reads that game's board: its cache
	// catches up with the file, evicting the game of that line alone.
	mustUpsert(t, a, []store.Event{mkEvent(t, mint.Next(at), "other", event.KindPlayerJoined, at, "player", "bo", "avatar", "🦉")})
	if seq, err = a.MaxSeq(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := b.ScoreboardAt(ctx, "other", seq); err != nil {
		t.Fatal(err)
	}
	if !store.BoardCached(b, "keep", seq) {
		t.Error("b dropped its boards for the deletion of a game the store did not hold")
	}
}
