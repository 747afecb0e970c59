package store_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/codemojex/feed/store"
)

// TestNotAStoreRefused: Open, OpenReadOnly and Probe refuse a file that is
// no store (another program's SQLite database, a text file) with a
// NotStoreError saying what it is, and leave it byte for byte. Open added
// the store's tables to the database and failed on the text file in
// SQLite's words ("wal: file is not a database (26)"); OpenReadOnly
// failed on both in SQLite's words.
func TestNotAStoreRefused(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		name  string
		write func(t *testing.T, path string)
		why   string
	}{
		{"other tables", func(t *testing.T, path string) {
			rawExec(t, path, `CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)`, `INSERT INTO notes (body) VALUES ('keep me')`)
		}, "an SQLite database of other tables (notes)"},
		{"many tables", func(t *testing.T, path string) {
			for _, n := range []string{"a", "b", "c", "d", "e", "f", "g"} {
				rawExec(t, path, `CREATE TABLE `+n+` (x)`)
			}
		}, "an SQLite database of other tables (a, b, c, d, e and 2 more)"},
		{"hostile table name", func(t *testing.T, path string) {
			// Another program's names reach an operator's terminal.
			rawExec(t, path, "CREATE TABLE \"red\x1b[31m\u202e\" (x)")
		}, `an SQLite database of other tables (red\x1b[31m\u202e)`},
		{"text", func(t *testing.T, path string) {
			if err := os.WriteFile(path, []byte(strings.Repeat("not a database\n", 400)), 0o644); err != nil {
				t.Fatal(err)
			}
		}, "not an SQLite database"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "other.db")
			tt.write(t, path)
			before := readFile(t, path)
			opens := []struct {
				name string
				open func() error
			}{
				{"Probe", func() error { return store.Probe(ctx, path) }},
				{"OpenReadOnly", func() error {
					db, err := store.OpenReadOnly(ctx, path)
					if err == nil {
						db.Close()
					}
					return err
				}},
				{"Open", func() error {
					db, err := store.Open(ctx, path)
					if err == nil {
						db.Close()
					}
					return err
				}},
			}
			for _, o := range opens {
				err := o.open()
				var ns *store.NotStoreError
				if !errors.As(err, &ns) || ns.Why != tt.why || !errors.Is(err, store.ErrNotStore) {
					t.Errorf("%s: %v, want a NotStoreError %q", o.name, err, tt.why)
				}
				if !bytes.Equal(readFile(t, path), before) {
					t.Fatalf("%s changed the file", o.name)
				}
			}
		})
	}
}

// TestNotAStoreWhatOpenTakes: Open makes a store of a file that is empty
// or an SQLite database without a table (a store another process is
// making: its first migration makes every table at once), and Probe takes
// those, a store and a missing file; OpenReadOnly refuses the empty ones,
// which hold nothing to read.
func TestNotAStoreWhatOpenTakes(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		name  string
		write func(t *testing.T, path string)
	}{
		{"empty file", func(t *testing.T, path string) {
			if err := os.WriteFile(path, nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		{"database without tables", func(t *testing.T, path string) {
			// As a peer's Open leaves it between its switch to WAL and
			// its first migration.
			rawExec(t, path, `PRAGMA journal_mode = WAL`)
			if fi, err := os.Stat(path); err != nil || fi.Size() == 0 {
				t.Fatalf("database without tables: %v, size 0", err)
			}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "feed.db")
			tt.write(t, path)
			if err := store.Probe(ctx, path); err != nil {
				t.Errorf("Probe: %v", err)
			}
			if db, err := store.OpenReadOnly(ctx, path); !errors.Is(err, store.ErrNotStore) {
				if err == nil {
					db.Close()
				}
				t.Errorf("OpenReadOnly: %v, want ErrNotStore", err)
			}
			db, err := store.Open(ctx, path)
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			if err := store.Probe(ctx, path); err != nil {
				t.Errorf("Probe of the store Open made: %v", err)
			}
		})
	}
	if err := store.Probe(ctx, filepath.Join(t.TempDir(), "missing.db")); err != nil {
		t.Errorf("Probe of a missing file: %v", err)
	}
}

// rawExec runs statements on the SQLite file at path, outside the store.
func rawExec(tb testing.TB, path string, stmts ...string) {
	tb.Helper()
	raw, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		tb.Fatal(err)
	}
	defer raw.Close()
	for _, q := range stmts {
		if _, err := raw.Exec(q); err != nil {
			tb.Fatal(err)
		}
	}
}

// TestOpenWaitsOutLockedProbe: Open waits for a lock another process holds
// on a store in rollback mode (its write transaction in the middle), as its
// switch to WAL and its migrations do, and opens it once the lock is let
// go. Its probe failed with SQLITE_BUSY ("database is locked") after the
// busy timeout and Open gave up, where every other step retries.
func TestOpenWaitsOutLockedProbe(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	path := filepath.Join(t.TempDir(), "feed.db")
	rawExec(t, path, `CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)`)
	raw, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	holder, err := raw.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	for _, q := range []string{`BEGIN EXCLUSIVE`, `CREATE TABLE scratch (x)`} {
		if _, err := holder.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}

	retried := make(chan struct{}, 1)
	log := slog.New(&signalHandler{msg: "store busy, retrying", ch: retried})
	opened := make(chan error, 1)
	go func() {
		db, err := store.OpenWith(ctx, path, store.Options{BusyTimeout: 10 * time.Millisecond, Logger: log})
		if err == nil {
			err = db.Close()
		}
		opened <- err
	}()
	select {
	case err := <-opened:
		t.Fatalf("Open with the lock held: %v, want it to wait", err)
	case <-retried:
	}
	if _, err := holder.ExecContext(ctx, `COMMIT`); err != nil {
		t.Fatal(err)
	}
	if err := <-opened; err != nil {
		t.Fatalf("Open once the lock was let go: %v", err)
	}
	if err := store.Probe(ctx, path); err != nil {
		t.Fatalf("Probe of the store Open made: %v", err)
	}
}

// signalHandler is a slog handler that signals ch at a record of msg.
type signalHandler struct {
	msg string
	ch  chan struct{}
}

func (h *signalHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *signalHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Message == h.msg {
		select {
		case h.ch <- struct{}{}:
		default:
		}
	}
	return nil
}
func (h *signalHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *signalHandler) WithGroup(string) slog.Handler      { return h }
