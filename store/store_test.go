package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/store"
)

var t0 = time.Date(2026, 11, 29, 19, 0, 0, 0, time.UTC)

// ids mints n increasing EVT ids.
func ids(n int) []string {
	m := event.NewMinter(1)
	out := make([]string, n)
	for i := range out {
		out[i] = m.Next(t0.Add(time.Duration(i) * time.Second))
	}
	return out
}

func TestUpsertVerdicts(t *testing.T) {
	ctx := context.Background()
	db := MustOpen(t, "")
	id := ids(5)
	a := mkEvent(t, id[0], "g", event.KindPlayerJoined, t0, "player", "ann", "avatar", "🦊")
	b := mkEvent(t, id[1], "g", event.KindGuess, t0, "player", "ann", "round", "1", "guess", "🍎🍌", "exact", "1", "near", "1")
	c := mkEvent(t, id[4], "g", event.KindGuess, t0, "player", "ann", "round", "1", "guess", "🍌🍎", "exact", "2", "near", "0")

	tests := []struct {
		name  string
		batch []store.Event
		want  []bool // Inserted per entry
		errs  []bool // Err != nil per entry
	}{
		{"first delivery", []store.Event{a}, []bool{true}, []bool{false}},
		{"redelivery is a no-op", []store.Event{a}, []bool{false}, []bool{false}},
		{"same id twice in a batch", []store.Event{b, b}, []bool{true, false}, []bool{false, false}},
		// One statement inserts both rows, and skips the first: the
		// second is a line of its own, and its guess counts.
		{"a redelivery beside a new line", []store.Event{a, c}, []bool{false, true}, []bool{false, false}},
		{"invalid entries fail alone", []store.Event{{Game: "g", Kind: "chat"}, {EvtID: id[2], Kind: "chat"},
			mkEvent(t, id[3], "g", event.KindChat, t0, "player", "ann", "text", "hi")},
			[]bool{false, false, true}, []bool{true, true, false}},
		{"empty batch", nil, []bool{}, []bool{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := db.Upsert(ctx, tc.batch)
			if err != nil {
				t.Fatal(err)
			}
			if len(res) != len(tc.batch) {
				t.Fatalf("%d results for %d events", len(res), len(tc.batch))
			}
			for i, r := range res {
				if r.Inserted != tc.want[i] || (r.Err != nil) != tc.errs[i] {
					t.Errorf("entry %d: %+v, want inserted=%v err=%v", i, r, tc.want[i], tc.errs[i])
				}
				if r.Err != nil && !errors.Is(r.Err, store.ErrInvalidEvent) {
					t.Errorf("entry %d: %v does not wrap ErrInvalidEvent", i, r.Err)
				}
				if r.Inserted != (r.Seq > 0) {
					t.Errorf("entry %d: Seq %d with Inserted %v", i, r.Seq, r.Inserted)
				}
			}
		})
	}
	sb, err := db.Scoreboard(ctx, "g")
	if err != nil {
		t.Fatal(err)
	}
	if len(sb.Players) != 1 || sb.Players[0].Guesses != 2 || sb.Game.Events != 4 {
		t.Errorf("scoreboard after duplicates: %+v", sb)
	}
}

// A batch prepared once (NewBatch, as the pipeline does while the batch
// before commits) and upserted twice, as a retry after an unavailable store
// would: the second time is the redelivery no-op, the invalid entry fails
// both times, and the stored payload is the event's.
func TestUpsertBatchAgain(t *testing.T) {
	ctx := context.Background()
	db := MustOpen(t, "")
	id := ids(2)
	evs := []store.Event{
		mkEvent(t, id[0], "g", event.KindChat, t0, "player", "ann", "text", `<b>"hi"</b>`),
		{EvtID: id[1], Kind: event.KindChat}, // no game
	}
	b := store.NewBatch(evs)
	for i, wantInserted := range []bool{true, false} {
		res, err := db.UpsertBatch(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		if res[0].Inserted != wantInserted || res[0].Err != nil {
			t.Errorf("upsert %d, entry 0: %+v, want inserted=%v", i+1, res[0], wantInserted)
		}
		if !errors.Is(res[1].Err, store.ErrInvalidEvent) {
			t.Errorf("upsert %d, entry 1: %+v, want ErrInvalidEvent", i+1, res[1])
		}
	}
	snap, err := db.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want, err := json.Marshal(evs[0].Payload)
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Lines) != 1 || snap.Lines[0].EvtID != id[0] || snap.Lines[0].Payload != string(want) {
		t.Fatalf("stored %+v, want the one line with payload %s", snap.Lines, want)
	}
}

// A failure half-way through one entry (here: its side effect) rolls back
// that entry alone, line included, and the rest of the batch commits.
func TestUpsertEntryFailureIsItsOwn(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "feed.db")
	db := MustOpen(t, path)
	raw := mustRaw(t, path)
	for _, q := range []string{
		`CREATE TRIGGER doomed_ins BEFORE INSERT ON games WHEN NEW.name = 'doomed' BEGIN SELECT RAISE(ABORT, 'boom'); END`,
	} {
		if _, err := raw.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	id := ids(4)
	// A line stored before: redelivered in the batch below, it is a
	// no-op on the entry-by-entry path too, its points not counted twice.
	won := mkEvent(t, id[3], "g", event.KindRoundWon, t0, "player", "ann", "round", "1", "code", "🍎", "guesses", "1", "points", "10")
	mustUpsert(t, db, []store.Event{won})
	batch := []store.Event{
		mkEvent(t, id[0], "g", event.KindChat, t0, "player", "ann", "text", "one"),
		mkEvent(t, id[1], "doomed", event.KindChat, t0, "player", "ann", "text", "two"),
		mkEvent(t, id[2], "g", event.KindChat, t0, "player", "ann", "text", "three"),
	}
	res, err := db.Upsert(ctx, append(batch, won))
	if err != nil {
		t.Fatal(err)
	}
	if !res[0].Inserted || res[1].Err == nil || res[1].Inserted || !res[2].Inserted || res[3].Inserted || res[3].Err != nil {
		t.Fatalf("verdicts %+v", res)
	}
	if n, _ := db.Count(ctx); n != 3 {
		t.Errorf("Count = %d, want 3: the failed entry's line must roll back with it", n)
	}
	if sb, err := db.Scoreboard(ctx, "g"); err != nil || len(sb.Players) != 1 || sb.Players[0].Score != 10 || sb.Players[0].Wins != 1 {
		t.Errorf("scoreboard %+v (%v), want ann's 10 points and 1 win once", sb, err)
	}
	if _, err := raw.Exec(`DROP TRIGGER doomed_ins`); err != nil {
		t.Fatal(err)
	}
	// Left pending, the entry is retried and now goes in.
	res, err = db.Upsert(ctx, batch)
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Inserted || !res[1].Inserted || res[2].Inserted {
		t.Errorf("retry verdicts %+v", res)
	}
}

// TestBatchFailureOverridesEntryErrors: a batch that fails whole (here its
// COMMIT, on a deferred foreign key) after the entry-by-entry attempt pinned
// an error on one entry must give that entry the batch's error, as every
// other: nothing of the attempt was stored, and the entry's own failure
// belonged to an attempt rolled back (docs/store.md: only ErrInvalidEvent
// and ErrConflict verdicts are kept).
func TestBatchFailureOverridesEntryErrors(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "feed.db")
	db := MustOpen(t, path)
	raw := mustRaw(t, path)
	for _, q := range []string{
		// The entry's own failure, on both paths.
		`CREATE TRIGGER doomed_ins BEFORE INSERT ON games WHEN NEW.name = 'doomed' BEGIN SELECT RAISE(ABORT, 'boom'); END`,
		// The whole batch's: its line is left without its game, which
		// the deferred foreign key refuses at COMMIT.
		`CREATE TRIGGER orphan_ins AFTER INSERT ON players WHEN NEW.game = 'orphan' BEGIN DELETE FROM games WHERE name = 'orphan'; END`,
	} {
		if _, err := raw.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	id := ids(3)
	batch := []store.Event{
		mkEvent(t, id[0], "g", event.KindChat, t0, "player", "ann", "text", "one"),
		mkEvent(t, id[1], "doomed", event.KindChat, t0, "player", "ann", "text", "two"),
		mkEvent(t, id[2], "orphan", event.KindGuess, t0, "player", "ann", "round", "1", "guess", "🍎", "exact", "1", "near", "0"),
	}
	res, err := db.Upsert(ctx, batch)
	if err == nil {
		t.Fatalf("the batch committed: %+v", res)
	}
	for i, r := range res {
		if r.Err != err || r.Inserted {
			t.Errorf("entry %d: %+v, want the batch's error %q", i, r, err)
		}
	}
	if n, _ := db.Count(ctx); n != 0 {
		t.Errorf("Count = %d, want 0", n)
	}
}

func TestReads(t *testing.T) {
	ctx := context.Background()
	db := MustOpen(t, "")
	id := ids(30)
	var evs []store.Event
	for i := range 20 {
		evs = append(evs, mkEvent(t, id[i], "a", event.KindChat, t0.Add(time.Duration(i)*time.Second), "player", "ann", "text", "x"))
	}
	for i := 20; i < 30; i++ {
		evs = append(evs, mkEvent(t, id[i], "b", event.KindRoundStarted, t0, "round", "1"))
	}
	// Deliver game a newest first, so seq order is the reverse of EVT-id order.
	slices.Reverse(evs[:20])
	mustUpsert(t, db, evs[:20])
	mustUpsert(t, db, evs[20:])

	p, err := db.Page(ctx, "a", 5)
	if err != nil {
		t.Fatal(err)
	}
	if p.Seq != 30 || len(p.Lines) != 5 || p.Board.Game.Events != 20 {
		t.Fatalf("page: seq %d, %d lines, board %+v", p.Seq, len(p.Lines), p.Board.Game)
	}
	for i, l := range p.Lines {
		if l.EvtID != id[19-i] {
			t.Errorf("page line %d = %s, want %s (newest first by EVT id)", i, l.EvtID, id[19-i])
		}
	}
	if !p.Lines[0].At.Equal(t0.Add(19 * time.Second)) {
		t.Errorf("At = %v", p.Lines[0].At)
	}
	older, err := db.Before(ctx, "a", p.Lines[4].EvtID, 100)
	if err != nil || len(older) != 15 || older[0].EvtID != id[14] || older[14].EvtID != id[0] {
		t.Errorf("Before: %d lines, %v", len(older), err)
	}
	after, err := db.After(ctx, "a", 10, 100)
	if err != nil || len(after) != 10 || after[0].Seq != 11 || after[9].Seq != 20 {
		t.Errorf("After: %d lines, %v", len(after), err)
	}
	for _, c := range []struct {
		game         string
		after, limit int
		want         int
	}{
		{"a", 10, 100, 10}, // seqs 11–20
		{"a", 10, 4, 4},    // counted no further than the limit
		{"a", 20, 100, 0},  // b's seqs 21–30 are not a's
		{"b", 0, 100, 10},
		{"nope", 0, 100, 0},
	} {
		if n, err := db.CountAfter(ctx, c.game, int64(c.after), c.limit); n != c.want || err != nil {
			t.Errorf("CountAfter(%s, %d, %d) = %d, %v; want %d", c.game, c.after, c.limit, n, err, c.want)
		}
	}
	since, err := db.Since(ctx, 15, 7)
	if err != nil || len(since) != 7 || since[0].Seq != 16 || since[6].Game != "b" {
		t.Errorf("Since: %+v, %v", since, err)
	}
	tl, err := db.Timeline(ctx, "a")
	if err != nil || len(tl) != 20 || tl[0].EvtID != id[0] || tl[19].EvtID != id[19] {
		t.Errorf("Timeline: %d lines, %v", len(tl), err)
	}
	if n, err := db.MaxSeq(ctx); n != 30 || err != nil {
		t.Errorf("MaxSeq = %d, %v", n, err)
	}
	if n, err := db.Count(ctx); n != 30 || err != nil {
		t.Errorf("Count = %d, %v", n, err)
	}
	gs, err := db.Games(ctx)
	if err != nil || len(gs) != 2 || gs[0].Name != "b" || gs[1].Status != event.StatusWaiting || gs[0].Status != event.StatusPlaying {
		t.Errorf("Games: %+v, %v", gs, err)
	}
	if _, err := db.Game(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Game(nope) = %v, want ErrNotFound", err)
	}
	if p, err := db.Page(ctx, "nope", 10); err != nil || len(p.Lines) != 0 || p.Seq != 30 || p.Board.Game.Name != "nope" {
		t.Errorf("Page(nope) = %+v, %v", p, err)
	}
}

func TestNewerWins(t *testing.T) {
	id := ids(4)
	joined := func(i int, avatar string) store.Event {
		return mkEvent(t, id[i], "g", event.KindPlayerJoined, t0, "player", "ann", "avatar", avatar)
	}
	left := func(i int) store.Event { return mkEvent(t, id[i], "g", event.KindPlayerLeft, t0, "player", "ann") }
	tests := []struct {
		name        string
		order       []store.Event
		wantAvatar  string
		wantPresent bool
	}{
		{"in order", []store.Event{joined(0, "🦊"), left(1), joined(2, "🐼")}, "🐼", true},
		{"rejoin arrives first", []store.Event{joined(2, "🐼"), left(1), joined(0, "🦊")}, "🐼", true},
		{"re-claimed leave after a newer join", []store.Event{joined(0, "🦊"), joined(2, "🐼"), left(1)}, "🐼", true},
		{"leave is newest", []store.Event{left(3), joined(0, "🦊"), joined(2, "🐼")}, "🐼", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			db := MustOpen(t, "")
			for _, e := range tc.order {
				mustUpsert(t, db, []store.Event{e})
			}
			sb, err := db.Scoreboard(context.Background(), "g")
			if err != nil {
				t.Fatal(err)
			}
			if len(sb.Players) != 1 || sb.Players[0].Avatar != tc.wantAvatar || sb.Players[0].Present != tc.wantPresent {
				t.Errorf("players = %+v, want avatar %s present %v", sb.Players, tc.wantAvatar, tc.wantPresent)
			}
		})
	}
}

func TestClosedAndCancelled(t *testing.T) {
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "feed.db"))
	if err != nil {
		t.Fatal(err)
	}
	e := mkEvent(t, ids(1)[0], "g", event.KindChat, t0, "player", "ann", "text", "hi")
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if res, err := db.Upsert(cctx, []store.Event{e}); err == nil || res[0].Err == nil {
		t.Errorf("Upsert with a cancelled ctx = %+v, %v; want an error", res, err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := db.Upsert(ctx, []store.Event{e}); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Upsert after Close = %v, want ErrClosed", err)
	}
	if _, err := db.MaxSeq(ctx); !errors.Is(err, store.ErrClosed) {
		t.Errorf("MaxSeq after Close = %v, want ErrClosed", err)
	}
}

func TestCompare(t *testing.T) {
	ctx := context.Background()
	a, b := MustOpen(t, ""), MustOpen(t, "")
	id := ids(3)
	evs := []store.Event{
		mkEvent(t, id[0], "g", event.KindRoundWon, t0, "player", "ann", "round", "1", "code", "🍎", "guesses", "3", "points", "10"),
		mkEvent(t, id[1], "h", event.KindChat, t0, "player", "bob", "text", "hi"),
	}
	mustUpsert(t, a, evs)
	mustUpsert(t, b, []store.Event{evs[1], evs[0], evs[1]})
	if d, err := store.Compare(ctx, a, b, 0); err != nil || len(d) != 0 {
		t.Fatalf("equal stores: %v, %v", d, err)
	}
	mustUpsert(t, b, []store.Event{mkEvent(t, id[2], "h", event.KindRoundWon, t0, "player", "bob", "round", "1",
		"code", "🍎", "guesses", "1", "points", "5")})
	if d, err := store.Compare(ctx, a, b, 0); err != nil || len(d) == 0 {
		t.Errorf("stores differ in game h, Compare found nothing (%v)", err)
	}
	if d, err := store.Compare(ctx, a, b, 0, "g"); err != nil || len(d) != 0 {
		t.Errorf("game g is equal in both: %v, %v", d, err)
	}
	s, err := b.Snapshot(ctx, "h")
	if err != nil || len(s.Lines) != 2 || len(s.Games) != 1 || s.Players["h"][0].Score != 5 {
		t.Errorf("Snapshot(h) = %+v, %v", s, err)
	}
}

// TestCompareSharedEvtID: two games may carry the same EVT id (each game's
// server mints its own). Two stores that took such lines in opposite orders
// hold the same lines, so their snapshots must be equal: Snapshot orders
// its lines by EVT id, then game, not by EVT id alone (ties then came out
// in each store's seq order, and Diff reported both lines as differences).
func TestCompareSharedEvtID(t *testing.T) {
	ctx := context.Background()
	a, b := MustOpen(t, ""), MustOpen(t, "")
	id := ids(1)
	x := mkEvent(t, id[0], "ga", event.KindChat, t0, "player", "ann", "text", "in ga")
	y := mkEvent(t, id[0], "gb", event.KindChat, t0, "player", "bob", "text", "in gb")
	mustUpsert(t, a, []store.Event{x, y})
	mustUpsert(t, b, []store.Event{y, x})
	if d, err := store.Compare(ctx, a, b, 0); err != nil || len(d) != 0 {
		t.Fatalf("stores holding the same lines differ (%v):\n%s", err, strings.Join(d, "\n"))
	}
}

// The WAL is checkpointed in the background, not by a commit: the
// writer's own threshold (64 MiB) is far above what is written here, yet
// the main database file grows soon after the batches.
func TestBackgroundCheckpoint(t *testing.T) {
	path := filepath.Join(t.TempDir(), "feed.db")
	db := MustOpen(t, path)
	size := func() int64 {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	before := size()
	for _, b := range inBatches(genGames(t, 5, 2), 100) {
		mustUpsert(t, db, b)
	}
	waitFor(t, 10*time.Second, func() bool { return size() > before+100_000 })
}

// Page reads its lines and its seq in one snapshot: while a writer keeps
// adding lines, no line on a page is newer than the seq it came with, so a
// browser resuming from Page.Seq never gets a line twice or misses one.
func TestPageIsOneSnapshot(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "feed.db")
	db := MustOpen(t, path)
	evs := genGames(t, 11, 2)
	game := evs[0].Game
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, b := range inBatches(evs, 10) {
			if _, err := db.Upsert(ctx, b); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	pages := 0
	for running := true; running; pages++ {
		select {
		case <-done:
			running = false
		default:
		}
		p, err := db.Page(ctx, game, 1000)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range p.Lines {
			if l.Seq > p.Seq {
				t.Fatalf("page at seq %d holds line %s at seq %d", p.Seq, l.EvtID, l.Seq)
			}
		}
		if int64(len(p.Lines)) != p.Board.Game.Events {
			t.Fatalf("page has %d lines, its scoreboard counts %d", len(p.Lines), p.Board.Game.Events)
		}
	}
	t.Logf("%d pages read while writing", pages)
}

// A game's stream may hold match after match: a new game_started takes
// the round back to 0 (not "round 5/4" under the new match's 4 rounds),
// newer-wins like every state, so an older game_started delivered late
// changes nothing, on the file and in the board cache alike.
func TestGameStartedResetsRound(t *testing.T) {
	ctx := context.Background()
	db := MustOpen(t, "")
	id := ids(4)
	started := func(i int, rounds string) store.Event {
		return mkEvent(t, id[i], "g", event.KindGameStarted, t0, "title", "t", "rounds", rounds, "code_length", "4", "palette", "🍎🍌")
	}
	round := func() (int, int) {
		t.Helper()
		b, err := db.Scoreboard(ctx, "g")
		if err != nil {
			t.Fatal(err)
		}
		c, err := db.ScoreboardAt(ctx, "g", 0)
		if err != nil {
			t.Fatal(err)
		}
		if c.Game.Round != b.Game.Round || c.Game.Rounds != b.Game.Rounds {
			t.Fatalf("the board cache says round %d/%d, the file %d/%d", c.Game.Round, c.Game.Rounds, b.Game.Round, b.Game.Rounds)
		}
		return b.Game.Round, b.Game.Rounds
	}
	mustUpsert(t, db, []store.Event{started(0, "5"),
		mkEvent(t, id[1], "g", event.KindRoundWon, t0, "player", "ann", "round", "5", "points", "10")})
	if r, n := round(); r != 5 || n != 5 {
		t.Fatalf("after the first match: round %d/%d, want 5/5", r, n)
	}
	mustUpsert(t, db, []store.Event{started(3, "4")})
	if r, n := round(); r != 0 || n != 4 {
		t.Fatalf("after the second match's start: round %d/%d, want 0/4", r, n)
	}
	mustUpsert(t, db, []store.Event{mkEvent(t, id[2], "g", event.KindRoundStarted, t0, "round", "2")})
	if r, n := round(); r != 0 || n != 4 {
		t.Fatalf("an older round_started delivered late: round %d/%d, want 0/4", r, n)
	}
}

// TestLastAt: the line of a game with the greatest seq at or below a seq,
// by seq (store order), not by EVT id: an older event re-delivered late is
// the last line at its seq. Page reads it at its own max seq.
func TestLastAt(t *testing.T) {
	ctx := context.Background()
	db := MustOpen(t, "")
	m := event.NewMinter(7)
	at := time.Now()
	chat := func(id, game string) store.Event {
		return mkEvent(t, id, game, event.KindChat, at, "player", "ada", "text", "hi")
	}
	old, a, b := m.Next(at), m.Next(at), m.Next(at)
	r := mustUpsert(t, db, []store.Event{chat(a, "g1"), chat(b, "g2")})
	late := mustUpsert(t, db, []store.Event{chat(old, "g1")}) // its EVT id is the smallest
	tests := []struct {
		game   string
		seq    int64
		want   string
		wantOK bool
	}{
		{"g1", 0, "", false},
		{"g1", r[0].Seq, a, true},
		{"g1", r[1].Seq, a, true},
		{"g1", late[0].Seq, old, true},
		{"g1", late[0].Seq + 100, old, true},
		{"g2", r[0].Seq, "", false},
		{"g2", late[0].Seq, b, true},
		{"none", late[0].Seq, "", false},
	}
	for _, tt := range tests {
		id, ok, err := db.LastAt(ctx, tt.game, tt.seq)
		if err != nil || id != tt.want || ok != tt.wantOK {
			t.Errorf("LastAt(%s, %d) = %q, %v, %v; want %q, %v", tt.game, tt.seq, id, ok, err, tt.want, tt.wantOK)
		}
	}
	p, err := db.Page(ctx, "g1", 1)
	if err != nil {
		t.Fatal(err)
	}
	if p.Last != old || len(p.Lines) != 1 || p.Lines[0].EvtID != a {
		t.Fatalf("Page: last %q, lines %v; want last %q (the greatest seq), line %s (the greatest EVT id)", p.Last, p.Lines, old, a)
	}
}

// TestRecentGames: the n most recently active games, newest first (ties by
// name), with the count of every game; n ≤ 0 lists them all.
func TestRecentGames(t *testing.T) {
	ctx := context.Background()
	db := MustOpen(t, "")
	id := ids(6)
	// One batch per game but the last, which holds two: its games share
	// the store's clock and are ordered by name.
	for i, batch := range [][]string{{"c"}, {"a"}, {"e"}, {"b"}, {"d", "a2"}} {
		var evs []store.Event
		for j, g := range batch {
			evs = append(evs, mkEvent(t, id[i+j], g, event.KindChat, t0, "player", "ann", "text", "hi"))
		}
		if _, err := db.Upsert(ctx, evs); err != nil {
			t.Fatal(err)
		}
	}
	names := func(gs []store.Game) []string {
		var out []string
		for _, g := range gs {
			out = append(out, g.Name)
		}
		return out
	}
	for _, tc := range []struct {
		n    int
		want []string
	}{
		{1, []string{"a2"}},
		{3, []string{"a2", "d", "b"}},
		{6, []string{"a2", "d", "b", "e", "a", "c"}},
		{9, []string{"a2", "d", "b", "e", "a", "c"}},
		{0, []string{"a2", "d", "b", "e", "a", "c"}},
	} {
		gs, total, err := db.RecentGames(ctx, tc.n)
		if err != nil || total != 6 || !slices.Equal(names(gs), tc.want) {
			t.Errorf("RecentGames(%d) = %v, %d, %v; want %v, 6", tc.n, names(gs), total, err, tc.want)
		}
	}
	if gs, total, err := MustOpen(t, "").RecentGames(ctx, 3); err != nil || total != 0 || len(gs) != 0 {
		t.Errorf("RecentGames of an empty store = %v, %d, %v", gs, total, err)
	}
}
