package main

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/internal/testkit/redistest"
	"github.com/codemojex/feed/internal/testkit/storefile"
	"github.com/codemojex/feed/store"
)

// TestPruneDryRunWritesNothing: prune -db F -dry-run shows the plan and
// leaves F byte for byte as it was. It opened F with store.Open, which
// wrote it: on a file at an older schema it applied the pending
// migrations (under the older renderers that share the file), and on a
// file copied from another store it recorded the new identity and moved
// the positions back. Without -dry-run prune still opens F for writing,
// migrating it, and removes the game's lines.
func TestPruneDryRunWritesNothing(t *testing.T) {
	s := redistest.MustStart(t)
	rdb := s.Client(t)
	ctx := context.Background()
	const game = "old-1"
	old := time.Now().Add(-48 * time.Hour)

	t.Run("older schema", func(t *testing.T) {
		register(t, rdb, game, old)
		path := filepath.Join(t.TempDir(), "feed.db")
		schema3Store(t, path, game, old)
		if pruneDryRunWrote(t, s.Addr, path, "remove "+game+": registry, store (2 lines)") {
			t.Fatalf("prune -dry-run wrote the store file (version %d before): %s", 3, storeFacts(t, path))
		}

		mustRunCtl(t, s.Addr, "prune", "-older-than", "24h", "-db", path, "-yes")
		db, err := store.Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if _, err := db.Game(ctx, game); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("after prune -yes, Game(%s) = %v, want ErrNotFound", game, err)
		}
	})

	t.Run("copied file", func(t *testing.T) {
		const game = "old-2" // not registered
		dir := t.TempDir()
		orig, cp := filepath.Join(dir, "feed.db"), filepath.Join(dir, "copy.db")
		db, err := store.Open(ctx, orig)
		if err != nil {
			t.Fatal(err)
		}
		e := store.Event{EvtID: event.NewMinter(1).Next(old), Game: game, Kind: event.KindGameOver,
			Payload: map[string]string{"kind": event.KindGameOver, "winner": "ada"},
			HTML:    "x", StreamID: strconv.FormatInt(old.UnixMilli(), 10) + "-0", At: old}
		if _, err := db.Upsert(ctx, []store.Event{e}); err != nil {
			t.Fatal(err)
		}
		want, err := db.Position(ctx, game)
		if err != nil || want == "" {
			t.Fatalf("position %q, %v", want, err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		storefile.Copy(t, orig, cp)
		if pruneDryRunWrote(t, s.Addr, cp, "remove "+game+": store (1 lines)") {
			t.Fatalf("prune -dry-run wrote the copied store file (position was %s): %s", want, storeFacts(t, cp))
		}
	})
}

// pruneDryRunWrote runs prune -older-than 24h -db path -dry-run, fails
// the test unless it succeeds and its plan says plan, and reports whether
// it changed the file at path.
func pruneDryRunWrote(t *testing.T, addr, path, plan string) bool {
	t.Helper()
	before := mustRead(t, path)
	out := mustRunCtl(t, addr, "prune", "-older-than", "24h", "-db", path, "-dry-run")
	if !strings.Contains(out, plan) {
		t.Fatalf("prune -dry-run does not say %q:\n%s", plan, out)
	}
	return !bytes.Equal(mustRead(t, path), before)
}

// schema3Store writes a store file at path as a binary whose newest
// migration was 0003 left it (storefile.AtSchema), holding game, ended at
// at with two lines and a position, and the identity of another file (the
// store it was copied from).
func schema3Store(tb testing.TB, path, game string, at time.Time) {
	tb.Helper()
	storefile.AtSchema(tb, path, 3, func(exec storefile.Exec) {
		ns := at.UnixNano()
		exec(`INSERT INTO games (name, status, events, last_at, last_evt_id) VALUES (?, 'over', 2, ?, 'evt_b')`, game, ns)
		for _, id := range []string{"evt_a", "evt_b"} {
			exec(`INSERT INTO events (evt_id, game, kind, payload, html, stream_id, at, stored_at)
				VALUES (?, ?, 'chat', '{}', 'x', ?, ?, ?)`, id, game, strconv.FormatInt(at.UnixMilli(), 10)+"-0", ns, ns)
		}
		exec(`INSERT INTO positions (game, ms, seq) VALUES (?, ?, 0)`, game, at.UnixMilli())
		exec(`INSERT INTO meta (key, value) VALUES ('file', '1:2:3')`)
	})
}

func mustRead(tb testing.TB, path string) []byte {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// storeFacts says what a write to the store file changed: its newest
// migration, its recorded identity and its positions.
func storeFacts(tb testing.TB, path string) string {
	tb.Helper()
	raw, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		tb.Fatal(err)
	}
	defer raw.Close()
	var version int
	var file, pos string
	raw.QueryRow(`SELECT max(version) FROM schema_migrations`).Scan(&version)
	raw.QueryRow(`SELECT value FROM meta WHERE key = 'file'`).Scan(&file)
	raw.QueryRow(`SELECT group_concat(game || '@' || ms || '-' || seq) FROM positions`).Scan(&pos)
	return "schema version " + strconv.Itoa(version) + ", file " + file + ", positions " + pos
}

// TestPruneDeclinedWritesNothing: prune -db F without -yes, and no terminal
// to answer its question, refuses, and leaves F as it was. It opened F for
// writing before it showed the plan and asked, so a refused (or declined)
// run had already migrated F under the renderers sharing it.
func TestPruneDeclinedWritesNothing(t *testing.T) {
	s := redistest.MustStart(t)
	rdb := s.Client(t)
	const game = "old-1"
	old := time.Now().Add(-48 * time.Hour)
	register(t, rdb, game, old)
	path := filepath.Join(t.TempDir(), "feed.db")
	schema3Store(t, path, game, old)
	before := mustRead(t, path)
	out, errOut, err := runCtl(t, s.Addr, "prune", "-older-than", "24h", "-db", path)
	if err == nil || !strings.Contains(out, "remove "+game) {
		t.Fatalf("prune without -yes or a terminal: %v, want a refusal after the plan\n%s%s", err, out, errOut)
	}
	if !bytes.Equal(mustRead(t, path), before) {
		t.Fatalf("a refused prune wrote the store file: %s", storeFacts(t, path))
	}
}

// TestPruneOlderSchemaAsksFirst: prune -db F on a store older than the
// read-only open reads (schema 2, before 0003) must migrate F to read its
// plan, and asks before it does: without -yes and no terminal to answer,
// it refuses and leaves F as it was. It opened F for writing at once, so a
// refused run had already migrated F under the older renderers sharing it.
// With -yes it migrates F and prunes as before.
func TestPruneOlderSchemaAsksFirst(t *testing.T) {
	s := redistest.MustStart(t)
	rdb := s.Client(t)
	ctx := context.Background()
	const game = "old-1"
	old := time.Now().Add(-48 * time.Hour)
	register(t, rdb, game, old)
	path := filepath.Join(t.TempDir(), "feed.db")
	storefile.AtSchema(t, path, 2, func(exec storefile.Exec) {
		ns := old.UnixNano()
		exec(`INSERT INTO games (name, status, events, last_at, last_evt_id) VALUES (?, 'over', 2, ?, 'evt_b')`, game, ns)
		for _, id := range []string{"evt_a", "evt_b"} {
			exec(`INSERT INTO events (evt_id, game, kind, payload, html, stream_id, at, stored_at)
				VALUES (?, ?, 'chat', '{}', 'x', ?, ?, ?)`, id, game, strconv.FormatInt(old.UnixMilli(), 10)+"-0", ns, ns)
		}
	})
	before := mustRead(t, path)
	out, errOut, err := runCtl(t, s.Addr, "prune", "-older-than", "24h", "-db", path)
	if err == nil || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("prune of a schema-2 store without -yes or a terminal: %v, want a refusal\n%s%s", err, out, errOut)
	}
	if !bytes.Equal(mustRead(t, path), before) {
		t.Fatalf("a refused prune wrote the schema-2 store file: %s", storeFacts(t, path))
	}

	out = mustRunCtl(t, s.Addr, "prune", "-older-than", "24h", "-db", path, "-yes")
	if !strings.Contains(out, "remove "+game+": registry, store (2 lines)") || !strings.Contains(out, "pruned 1 games") {
		t.Fatalf("prune -yes of a schema-2 store:\n%s", out)
	}
	db, err := store.OpenReadOnly(ctx, path)
	if err != nil {
		t.Fatalf("after prune -yes: %v (not migrated?)", err)
	}
	defer db.Close()
	if _, err := db.Game(ctx, game); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("after prune -yes, Game(%s) = %v, want ErrNotFound", game, err)
	}
}

// TestPruneRefusesEmptyFile: prune -db F where F is an empty file (a
// mistyped path that something created, a store truncated by `: > F`) is
// refused, saying so, before anything is done, -yes or not: an empty file
// is not a store. The read-only open refused it too, but in SQLite's
// words, "schema: SQL logic error: no such table: schema_migrations (1)",
// which says nothing of an empty file.
func TestPruneRefusesEmptyFile(t *testing.T) {
	s := redistest.MustStart(t)
	rdb := s.Client(t)
	const game = "old-1"
	register(t, rdb, game, twoDaysAgo())
	addGameOver(t, rdb, game)
	for _, tt := range []struct {
		name string
		args []string
	}{
		{"dry run", []string{"-dry-run"}},
		{"yes", []string{"-yes"}},
		{"asked", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "feed.db")
			if err := os.WriteFile(path, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			out, errOut, err := runCtl(t, s.Addr, append([]string{"prune", "-older-than", "24h", "-db", path}, tt.args...)...)
			if err == nil || !strings.Contains(err.Error(), "-db "+path+": empty file (0 bytes): not a store") {
				t.Errorf("prune -db of an empty file: %v, want it refused as not a store\n%s%s", err, out, errOut)
			}
			if b := mustRead(t, path); len(b) != 0 {
				t.Errorf("prune wrote %d bytes into the empty file", len(b))
			}
			for _, suffix := range []string{"-wal", "-shm"} {
				if _, err := os.Stat(path + suffix); err == nil {
					t.Errorf("prune made %s%s", path, suffix)
				}
			}
			if _, err := rdb.ZScore(context.Background(), event.RegistryKey, game).Result(); err != nil {
				t.Errorf("%s left the registry: %v", game, err)
			}
		})
	}
}

// notAStore writes at path a file that is no store, of the given kind: an
// SQLite database of another program's table ("sqlite"), or text
// ("text"), and returns its bytes.
func notAStore(tb testing.TB, path, kind string) []byte {
	tb.Helper()
	switch kind {
	case "sqlite":
		raw, err := sql.Open("sqlite", "file:"+path)
		if err != nil {
			tb.Fatal(err)
		}
		for _, q := range []string{`CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)`, `INSERT INTO notes (body) VALUES ('keep me')`} {
			if _, err := raw.Exec(q); err != nil {
				tb.Fatal(err)
			}
		}
		if err := raw.Close(); err != nil {
			tb.Fatal(err)
		}
	case "text":
		if err := os.WriteFile(path, []byte(strings.Repeat("not a database\n", 400)), 0o644); err != nil {
			tb.Fatal(err)
		}
	default:
		tb.Fatalf("notAStore: kind %q", kind)
	}
	return mustRead(tb, path)
}

// TestPruneRefusesNotAStore: prune -db F where F is a file but no store
// (another program's SQLite database, a text file) is refused as an empty
// file is, saying what F is, before anything is done, -yes or not, and F
// is left byte for byte. The database was taken for a store at version 0:
// a dry run said "database schema is older than a read-only open needs",
// and -yes migrated it, adding the store's tables to it; the text file got
// SQLite's "file is not a database".
func TestPruneRefusesNotAStore(t *testing.T) {
	s := redistest.MustStart(t)
	rdb := s.Client(t)
	const game = "old-1"
	register(t, rdb, game, twoDaysAgo())
	addGameOver(t, rdb, game)
	for _, tt := range []struct {
		kind, why string
	}{
		{"sqlite", "an SQLite database of other tables (notes)"},
		{"text", "not an SQLite database"},
	} {
		for _, args := range [][]string{{"-dry-run"}, {"-yes"}, nil} {
			t.Run(fmt.Sprintf("%s %v", tt.kind, args), func(t *testing.T) {
				path := filepath.Join(t.TempDir(), "other.db")
				before := notAStore(t, path, tt.kind)
				out, errOut, err := runCtl(t, s.Addr, append([]string{"prune", "-older-than", "24h", "-db", path}, args...)...)
				if want := "-db " + path + ": " + tt.why + ": not a store"; err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("prune -db of a file that is no store: %v, want %q\n%s%s", err, want, out, errOut)
				}
				if !bytes.Equal(mustRead(t, path), before) {
					t.Errorf("prune changed the file")
				}
				if _, err := rdb.ZScore(context.Background(), event.RegistryKey, game).Result(); err != nil {
					t.Errorf("%s left the registry: %v", game, err)
				}
			})
		}
	}
}

// TestRebuildRefusesNotAStore: rebuild -db F where F is a file but no
// store is refused before its plan and its question, and F is left byte
// for byte. The dry run offered to rebuild "into the existing file", and
// -yes added the store's tables to another program's database.
func TestRebuildRefusesNotAStore(t *testing.T) {
	s := redistest.MustStart(t)
	rdb := s.Client(t)
	register(t, rdb, "g-1", time.Now())
	addGameOver(t, rdb, "g-1")
	for _, tt := range []struct {
		kind, why string
	}{
		{"sqlite", "an SQLite database of other tables (notes)"},
		{"text", "not an SQLite database"},
	} {
		for _, args := range [][]string{{"-dry-run"}, {"-yes"}} {
			t.Run(fmt.Sprintf("%s %v", tt.kind, args), func(t *testing.T) {
				path := filepath.Join(t.TempDir(), "other.db")
				before := notAStore(t, path, tt.kind)
				out, errOut, err := runCtl(t, s.Addr, append([]string{"rebuild", "-db", path}, args...)...)
				if want := "-db " + path + ": " + tt.why + ": not a store"; err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("rebuild -db of a file that is no store: %v, want %q\n%s%s", err, want, out, errOut)
				}
				if !bytes.Equal(mustRead(t, path), before) {
					t.Errorf("rebuild changed the file")
				}
			})
		}
	}
}

// TestPruneRefusesDirectory: prune -db D where D is a directory (the
// store's directory given for its file, say) is refused as rebuild -db D
// is, "not a regular file: not a store", before anything is done, -yes or
// not. The read-only open gave SQLite's "schema: disk I/O error (10)",
// which says nothing of what is wrong with the path.
func TestPruneRefusesDirectory(t *testing.T) {
	s := redistest.MustStart(t)
	rdb := s.Client(t)
	const game = "old-1"
	register(t, rdb, game, twoDaysAgo())
	addGameOver(t, rdb, game)
	for _, tt := range []struct {
		name string
		args []string
	}{
		{"dry run", []string{"-dry-run"}},
		{"yes", []string{"-yes"}},
		{"asked", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			out, errOut, err := runCtl(t, s.Addr, append([]string{"prune", "-older-than", "24h", "-db", dir}, tt.args...)...)
			if want := "-db " + dir + ": not a regular file: not a store"; err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("prune -db of a directory: %v, want %q\n%s%s", err, want, out, errOut)
			}
			if ents, err := os.ReadDir(dir); err != nil || len(ents) != 0 {
				t.Errorf("prune wrote into the directory: %v, %v", ents, err)
			}
			if _, err := rdb.ZScore(context.Background(), event.RegistryKey, game).Result(); err != nil {
				t.Errorf("%s left the registry: %v", game, err)
			}
		})
	}
}

// TestRebuildRefusesNewerSchema: rebuild -db F where F is a store of a
// newer release (its schema has a migration this feedctl does not know) is
// refused before its dry run and its question, as the open refuses it, and
// F is left byte for byte. The dry run promised to rebuild "into the
// existing file", and the question was asked, for a run that the open then
// refused.
func TestRebuildRefusesNewerSchema(t *testing.T) {
	s := redistest.MustStart(t)
	rdb := s.Client(t)
	register(t, rdb, "g-1", time.Now())
	addGameOver(t, rdb, "g-1")
	for _, tt := range []struct {
		name string
		args []string
	}{
		{"dry run", []string{"-dry-run"}},
		{"yes", []string{"-yes"}},
		{"asked", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "feed.db")
			storefile.AtSchema(t, path, 99, func(exec storefile.Exec) {
				exec(`INSERT INTO schema_migrations VALUES (99, '0099_future.sql', 0)`)
			})
			before := mustRead(t, path)
			out, errOut, err := runCtl(t, s.Addr, append([]string{"rebuild", "-db", path}, tt.args...)...)
			if err == nil || !errors.Is(err, store.ErrSchemaNewer) || !strings.Contains(err.Error(), "-db "+path) {
				t.Errorf("rebuild -db of a newer store: %v, want it refused, naming -db, with store.ErrSchemaNewer\n%s%s", err, out, errOut)
			}
			if strings.Contains(out, "would rebuild") {
				t.Errorf("the dry run promised a rebuild the run refuses:\n%s", out)
			}
			if !bytes.Equal(mustRead(t, path), before) {
				t.Errorf("rebuild changed the file")
			}
		})
	}
}
