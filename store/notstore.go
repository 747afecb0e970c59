package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/codemojex/feed/internal/untrusted"
)

// ErrNotStore is what a NotStoreError is (errors.Is): the file at the path
// is something else than a store.
var ErrNotStore = errors.New("store: not a store")

// NotStoreError is returned by Open, OpenReadOnly and Probe for a file that
// is no store: not an SQLite database, or one that holds tables but not the
// store's (another program's database). Why says which, in an operator's
// words ("an SQLite database of other tables (notes)").
type NotStoreError struct {
	Why string
}

func (e *NotStoreError) Error() string { return e.Why + ": not a store" }

// Is makes a NotStoreError ErrNotStore.
func (e *NotStoreError) Is(target error) bool { return target == ErrNotStore }

// Probe says whether the file at path may be opened as a store without
// being another program's file: nil when it is missing, empty, an SQLite
// database without any table (a store being made by another process: its
// first migration makes every table at once), or a store (it records its
// migrations, at whatever version); a *NotStoreError otherwise. It only
// reads the file: feedctl asks before it offers to write into one, and
// Open asks before its first write.
//
// SQLite may create the -wal and -shm beside a WAL-mode file that has none,
// as OpenReadOnly may; the file itself is left byte for byte.
func Probe(ctx context.Context, path string) error {
	_, err := probe(ctx, path, Options{}.withDefaults().BusyTimeout)
	return err
}

// probe is Probe whose statement waits up to busy for another process's
// lock inside SQLite (Open's BusyTimeout; Open retries a busy probe). It
// also returns the store's schema version (the highest migration it
// records; 0 for a file that is not yet a store), so that Open refuses a
// newer release's file before it writes anything.
func probe(ctx context.Context, path string, busy time.Duration) (version int, err error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return 0, fmt.Errorf("store: probe %s: %w", path, err)
	}
	fi, err := os.Stat(abs)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("store: probe %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return 0, &NotStoreError{Why: "not a regular file"}
	}
	if fi.Size() == 0 {
		return 0, nil
	}
	r, err := sql.Open("sqlite", dsn(abs, busy, roleReadOnly))
	if err != nil {
		return 0, fmt.Errorf("store: probe %s: %w", path, err)
	}
	defer r.Close()
	r.SetMaxOpenConns(1)
	isStore, err := probeTables(ctx, r)
	if err != nil {
		var ns *NotStoreError
		if errors.As(err, &ns) {
			return 0, err
		}
		return 0, fmt.Errorf("store: probe %s: %w", path, err)
	}
	if !isStore {
		return 0, nil
	}
	if err := r.QueryRowContext(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&version); err != nil {
		return 0, fmt.Errorf("store: probe %s: schema version: %w", path, err)
	}
	return version, nil
}

// probeTables reads the tables of the database r is open on: true when it
// is a store (it has schema_migrations), false when it has no table at all,
// a *NotStoreError when it is no SQLite database or holds other tables.
func probeTables(ctx context.Context, r *sql.DB) (bool, error) {
	notDB := &NotStoreError{Why: "not an SQLite database"}
	rows, err := r.QueryContext(ctx, `SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name`)
	if err != nil {
		if notADatabase(err) {
			return false, notDB
		}
		return false, err
	}
	var tables []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			rows.Close()
			return false, err
		}
		if name == "schema_migrations" {
			rows.Close()
			return true, nil
		}
		// Another program's names, printed to an operator's terminal.
		tables = append(tables, untrusted.Escape(name))
	}
	// Err too: a failed Next closes the rows and leaves Close nil.
	if err := errors.Join(rows.Close(), rows.Err()); err != nil {
		if notADatabase(err) {
			return false, notDB
		}
		return false, err
	}
	if len(tables) == 0 {
		return false, nil
	}
	const shown = 5
	list := strings.Join(tables[:min(len(tables), shown)], ", ")
	if len(tables) > shown {
		list += fmt.Sprintf(" and %d more", len(tables)-shown)
	}
	return false, &NotStoreError{Why: fmt.Sprintf("an SQLite database of other tables (%s)", list)}
}

// notADatabase reports whether err is SQLite's "file is not a database".
func notADatabase(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_NOTADB
}
