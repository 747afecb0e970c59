package store_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/migrations"
	"github.com/codemojex/feed/store"
)

// TestIdentityIsGameAndEvtID: two games may carry one EVT id (both
// stored); a same-game copy with another payload is a conflict, in either
// path (whole batch or entry by entry) and within one batch, and the first
// line stays; an identical copy is a plain duplicate.
func TestIdentityIsGameAndEvtID(t *testing.T) {
	for _, slow := range []bool{false, true} {
		t.Run(fmt.Sprintf("entryByEntry=%v", slow), func(t *testing.T) {
			ctx := context.Background()
			db := mustOpenWith(t, store.Options{EntryByEntry: slow})
			at := time.Now()
			id := event.NewMinter(1).Next(at)
			a := mkEvent(t, id, "ga", "chat", at, "player", "ada", "text", "first")
			b := mkEvent(t, id, "gb", "chat", at, "player", "bob", "text", "other game")
			res := mustUpsert(t, db, []store.Event{a, b})
			if !res[0].Inserted || !res[1].Inserted {
				t.Fatalf("shared EVT id across games: %+v", res)
			}
			forged := mkEvent(t, id, "ga", "chat", at, "player", "ada", "text", "forged")
			res, err := db.Upsert(ctx, []store.Event{a, forged, forged})
			if err != nil {
				t.Fatal(err)
			}
			if res[0].Err != nil || res[0].Inserted {
				t.Errorf("identical copy: %+v, want a duplicate", res[0])
			}
			for _, r := range res[1:] {
				if !errors.Is(r.Err, store.ErrConflict) || r.Inserted {
					t.Errorf("conflicting copy: %+v, want ErrConflict", r)
				}
			}
			tl, _ := db.Timeline(ctx, "ga")
			if len(tl) != 1 || tl[0].HTML != a.HTML {
				t.Errorf("game ga after a conflict: %d lines", len(tl))
			}
		})
	}
}

// TestPosition: the store records per game the highest stream position it
// committed, in the transaction of the lines, and never moves it back.
func TestPosition(t *testing.T) {
	ctx := context.Background()
	db := MustOpen(t, "")
	if p, err := db.Position(ctx, "g"); err != nil || p != "" {
		t.Fatalf("new store: %q, %v", p, err)
	}
	m := event.NewMinter(2)
	ev := func(pos string) store.Event {
		e := mkEvent(t, m.Next(time.Now()), "g", "chat", time.Now(), "player", "ada", "text", "hi")
		e.StreamID = pos
		return e
	}
	mustUpsert(t, db, []store.Event{ev("100-1"), ev("100-3"), ev("99-7")})
	mustUpsert(t, db, []store.Event{ev("100-2")}) // older: no move back
	if p, _ := db.Position(ctx, "g"); p != "100-3" {
		t.Errorf("position %q, want 100-3", p)
	}
	mustUpsert(t, db, []store.Event{ev("1000-0")})
	if p, _ := db.Position(ctx, "g"); p != "1000-0" {
		t.Errorf("position %q, want 1000-0 (numeric order, not text)", p)
	}
	// One batch over several games (one statement for all of them): each
	// game moves to its own highest position, and g, behind, stays.
	var batch []store.Event
	for i, pos := range []string{"5-1", "7-0", "5-2", "999-9", "6-0"} {
		e := ev(pos)
		e.Game = []string{"a", "b", "a", "g", "c"}[i]
		batch = append(batch, e)
	}
	mustUpsert(t, db, batch)
	for game, want := range map[string]string{"a": "5-2", "b": "7-0", "c": "6-0", "g": "1000-0"} {
		if p, _ := db.Position(ctx, game); p != want {
			t.Errorf("game %s: position %q, want %s", game, p, want)
		}
	}
}

// TestPositionPassesNoFailedEntry: an entry of the batch that failed on
// its own (here a trigger refuses its line) is not stored, and the game's
// position does not move past it: a catch-up from the position would not
// read it again.
func TestPositionPassesNoFailedEntry(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "feed.db")
	db := MustOpen(t, path)
	m := event.NewMinter(3)
	ev := func(pos string) store.Event {
		e := mkEvent(t, m.Next(time.Now()), "g", "chat", time.Now(), "player", "ada", "text", "hi")
		e.StreamID = pos
		return e
	}
	stored, doomed := ev("5-0"), ev("9-0")
	raw := mustRaw(t, path)
	if _, err := raw.Exec(`CREATE TRIGGER doomed_line BEFORE INSERT ON events WHEN NEW.evt_id = '` + doomed.EvtID + `'
		BEGIN SELECT RAISE(ABORT, 'boom'); END`); err != nil {
		t.Fatal(err)
	}
	res, err := db.Upsert(ctx, []store.Event{stored, doomed})
	if err != nil {
		t.Fatal(err)
	}
	if !res[0].Inserted || res[1].Err == nil {
		t.Fatalf("verdicts %+v, want the first stored and the second failed", res)
	}
	if p, err := db.Position(ctx, "g"); err != nil || p != "5-0" {
		t.Errorf("position %q (%v), want 5-0: not past the entry that failed", p, err)
	}
}

// TestCheckFile: a deleted or replaced file is reported, and Upsert
// refuses to write into it with an Unavailable error.
func TestCheckFile(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "feed.db")
	db := MustOpen(t, path)
	if err := db.CheckFile(); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "other.db")
	if err := os.WriteFile(other, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(other, path); err != nil {
		t.Fatal(err)
	}
	if err := db.CheckFile(); !errors.Is(err, store.ErrReplaced) {
		t.Fatalf("replaced: %v", err)
	}
	os.Remove(path)
	if err := db.CheckFile(); !errors.Is(err, store.ErrReplaced) {
		t.Fatalf("deleted: %v", err)
	}
	e := mkEvent(t, event.NewMinter(3).Next(time.Now()), "g", "chat", time.Now(), "player", "ada", "text", "x")
	if _, err := db.Upsert(ctx, []store.Event{e}); !store.Unavailable(err) || !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("upsert into a deleted file: %v, want unavailable", err)
	}
}

func TestUnavailable(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{errors.New("database or disk is full (13)"), true},
		{errors.New("disk I/O error"), true},
		{errors.New("attempt to write a readonly database (8)"), true},
		{fmt.Errorf("x: %w", context.DeadlineExceeded), true},
		{store.ErrClosed, true},
		{fmt.Errorf("x: %w", store.ErrConflict), false},
		{store.ErrInvalidEvent, false},
		{sql.ErrNoRows, false},
	} {
		if got := store.Unavailable(tt.err); got != tt.want {
			t.Errorf("Unavailable(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}

// TestMigration0003KeepsSeqs: a file written before 0003 (UNIQUE evt_id)
// keeps its lines and seqs, and new lines continue above them.
func TestMigration0003KeepsSeqs(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "feed.db")
	db := MustOpen(t, path)
	m := event.NewMinter(4)
	var evs []store.Event
	for range 5 {
		evs = append(evs, mkEvent(t, m.Next(time.Now()), "g", "chat", time.Now(), "player", "ada", "text", "hi"))
	}
	mustUpsert(t, db, evs)
	before, _ := db.Timeline(ctx, "g")
	// The migration ran on a file with lines only if it runs on reopen:
	// take the file back to version 2 with the old table and reopen.
	db.Close()
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`DELETE FROM schema_migrations WHERE version = 3`,
		`DROP TABLE positions`,
		`CREATE TABLE events_old AS SELECT * FROM events`,
		`DROP TABLE events`,
		`CREATE TABLE events (seq INTEGER PRIMARY KEY AUTOINCREMENT, evt_id TEXT NOT NULL UNIQUE, game TEXT NOT NULL, kind TEXT NOT NULL,
			payload TEXT NOT NULL, html TEXT NOT NULL, stream_id TEXT NOT NULL DEFAULT '', renderer TEXT NOT NULL DEFAULT '',
			attempts INTEGER NOT NULL DEFAULT 0, at INTEGER, stored_at INTEGER NOT NULL)`,
		`INSERT INTO events SELECT * FROM events_old`,
		`DROP TABLE events_old`,
		`CREATE INDEX events_game_seq ON events (game, seq)`,
	} {
		if _, err := raw.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	raw.Close()
	db = MustOpen(t, path)
	after, _ := db.Timeline(ctx, "g")
	if len(after) != len(before) {
		t.Fatalf("%d lines after the migration, want %d", len(after), len(before))
	}
	for i := range before {
		if before[i].Seq != after[i].Seq || before[i].EvtID != after[i].EvtID {
			t.Errorf("line %d: %d %s → %d %s", i, before[i].Seq, before[i].EvtID, after[i].Seq, after[i].EvtID)
		}
	}
	res := mustUpsert(t, db, []store.Event{mkEvent(t, m.Next(time.Now()), "g", "chat", time.Now(), "player", "ada", "text", "new")})
	if res[0].Seq <= before[len(before)-1].Seq {
		t.Errorf("new seq %d not above %d", res[0].Seq, before[len(before)-1].Seq)
	}
}

// TestMigration0003KeepsSeqCounter: a pre-0003 file whose newest lines were
// deleted (a pruned game) has an AUTOINCREMENT counter above max(seq). After
// the upgrade, new lines must still get seqs above every seq ever handed out:
// a browser may hold a cursor at one of the deleted lines.
func TestMigration0003KeepsSeqCounter(t *testing.T) {
	path := filepath.Join(t.TempDir(), "feed.db")
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	raw.SetMaxOpenConns(1)
	mustExec := func(q string, args ...any) {
		t.Helper()
		if _, err := raw.Exec(q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	// A file as a version-2 binary left it.
	mustExec(`CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)`)
	for v, name := range map[int]string{1: "0001_init.sql", 2: "0002_meta.sql"} {
		b, err := migrations.FS.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		mustExec(string(b))
		mustExec(`INSERT INTO schema_migrations VALUES (?, ?, 0)`, v, name)
	}
	// Lines 1..3 of game "keep", 4..5 of game "gone"; then "gone" is pruned.
	for i := 1; i <= 5; i++ {
		g := "keep"
		if i > 3 {
			g = "gone"
		}
		mustExec(`INSERT OR IGNORE INTO games (name) VALUES (?)`, g)
		mustExec(`INSERT INTO events (evt_id, game, kind, payload, html, stored_at) VALUES (?, ?, 'chat', '{}', 'x', 1)`,
			"EVT_"+string(rune('a'+i)), g)
	}
	mustExec(`DELETE FROM events WHERE game = 'gone'`)
	mustExec(`DELETE FROM games WHERE name = 'gone'`)
	var seqCounter int64
	if err := raw.QueryRow(`SELECT seq FROM sqlite_sequence WHERE name = 'events'`).Scan(&seqCounter); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	if seqCounter != 5 {
		t.Fatalf("counter %d, want 5", seqCounter)
	}

	db := MustOpen(t, path)
	m := event.NewMinter(9)
	at := time.Now()
	res := mustUpsert(t, db, []store.Event{mkEvent(t, m.Next(at), "keep", "chat", at, "player", "ada", "text", "new")})
	if res[0].Seq <= seqCounter {
		t.Errorf("new line got seq %d, which was already handed out (counter was %d): a cursor at %d misses it",
			res[0].Seq, seqCounter, seqCounter)
	}
}
