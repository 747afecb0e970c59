package store_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/codemojex/feed/internal/testkit/storefile"
	"github.com/codemojex/feed/store"
)

// oldStore writes a store file at path as a binary whose newest migration
// was version left it (storefile.AtSchema), holding, from version 3, one
// ended game "g" of two lines with a position, and an identity recorded
// for another file (so that Open takes it for a copy).
func oldStore(tb testing.TB, path string, version int) {
	tb.Helper()
	storefile.AtSchema(tb, path, version, func(exec storefile.Exec) {
		if version < 3 {
			return // no positions, no identity: enough to be refused
		}
		old := time.Now().Add(-48 * time.Hour).UnixNano()
		exec(`INSERT INTO games (name, status, events, last_at, last_evt_id) VALUES ('g', 'over', 2, ?, 'evt_b')`, old)
		for _, id := range []string{"evt_a", "evt_b"} {
			exec(`INSERT INTO events (evt_id, game, kind, payload, html, stream_id, at, stored_at)
				VALUES (?, 'g', 'chat', '{}', 'x', '1700000000000-0', ?, ?)`, id, old, old)
		}
		exec(`INSERT INTO positions (game, ms, seq) VALUES ('g', 1700000000000, 1)`)
		exec(`INSERT INTO meta (key, value) VALUES ('file', '1:2:3')`)
	})
}

func readFile(tb testing.TB, path string) []byte {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// TestOpenReadOnlyWritesNothing: OpenReadOnly on a file at the oldest
// schema it reads, recorded as another file (a copy), answers every read
// and leaves the file byte for byte as it was: no migration applied, no
// identity recorded, the positions and store id where they were. Its
// writing methods refuse with ErrReadOnly. Open on the same file would do
// all three writes.
func TestOpenReadOnlyWritesNothing(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "feed.db")
	oldStore(t, path, store.ReadOnlyMinSchema)
	before := readFile(t, path)

	db, err := store.OpenReadOnly(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	ended, err := db.Ended(ctx, time.Now().Add(-24*time.Hour))
	if err != nil || len(ended) != 1 || ended[0].Name != "g" || ended[0].Events != 2 {
		t.Errorf("Ended = %+v, %v; want game g of 2 lines", ended, err)
	}
	if g, err := db.Game(ctx, "g"); err != nil || g.Events != 2 {
		t.Errorf("Game = %+v, %v", g, err)
	}
	if p, err := db.Page(ctx, "g", 10); err != nil || len(p.Lines) != 2 {
		t.Errorf("Page = %+v, %v", p, err)
	}
	if pos, err := db.Position(ctx, "g"); err != nil || pos != "1700000000000-1" {
		t.Errorf("Position = %q, %v; want 1700000000000-1", pos, err)
	}
	for name, read := range map[string]func() error{
		"ID":         func() error { _, err := db.ID(ctx); return err },
		"Games":      func() error { _, err := db.Games(ctx); return err },
		"Scoreboard": func() error { _, err := db.Scoreboard(ctx, "g"); return err },
		"Timeline":   func() error { _, err := db.Timeline(ctx, "g"); return err },
		"Since":      func() error { _, err := db.Since(ctx, 0, 10); return err },
		"Snapshot":   func() error { _, err := db.Snapshot(ctx); return err },
		"CheckFile":  db.CheckFile,
	} {
		if err := read(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := db.DeleteGame(ctx, "g"); !errors.Is(err, store.ErrReadOnly) {
		t.Errorf("DeleteGame = %v, want ErrReadOnly", err)
	}
	at := time.Now()
	e := mkEvent(t, "evt_01J00000000000000000000000", "g", "chat", at, "player", "ada", "text", "hi")
	if _, err := db.Upsert(ctx, []store.Event{e}); !errors.Is(err, store.ErrReadOnly) {
		t.Errorf("Upsert = %v, want ErrReadOnly", err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(readFile(t, path), before) {
		t.Fatal("OpenReadOnly changed the store file")
	}
	if wal, err := os.Stat(path + "-wal"); err == nil && wal.Size() != 0 {
		t.Errorf("OpenReadOnly left a -wal of %d bytes", wal.Size())
	}
}

// TestOpenReadOnlyRefuses: a file too old for the reads (it would need a
// migration), one migrated by a newer binary and a missing one are refused
// with their errors, and left as they were (the missing one not created).
func TestOpenReadOnlyRefuses(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()

	older := filepath.Join(dir, "older.db")
	oldStore(t, older, store.ReadOnlyMinSchema-1)
	before := readFile(t, older)
	if _, err := store.OpenReadOnly(ctx, older); !errors.Is(err, store.ErrSchemaOlder) ||
		!strings.Contains(err.Error(), "store: open read-only") {
		t.Errorf("OpenReadOnly of a version %d file = %v, want ErrSchemaOlder", store.ReadOnlyMinSchema-1, err)
	}
	if !bytes.Equal(readFile(t, older), before) {
		t.Error("a refused OpenReadOnly changed the file")
	}

	newer := filepath.Join(dir, "newer.db")
	MustOpen(t, newer).Close()
	raw := mustRaw(t, newer)
	if _, err := raw.Exec(`INSERT INTO schema_migrations VALUES (?, 'from_the_future.sql', 0)`, store.LatestSchema()+1); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	if _, err := store.OpenReadOnly(ctx, newer); !errors.Is(err, store.ErrSchemaNewer) {
		t.Errorf("OpenReadOnly of a newer file = %v, want ErrSchemaNewer", err)
	}

	missing := filepath.Join(dir, "missing.db")
	if db, err := store.OpenReadOnly(ctx, missing); err == nil {
		db.Close()
		t.Error("OpenReadOnly of a missing file succeeded")
	}
	if _, err := os.Stat(missing); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("OpenReadOnly of a missing file made one: %v", err)
	}
}
