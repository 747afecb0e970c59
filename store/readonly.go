package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// readOnlyMinSchema is the oldest schema version OpenReadOnly accepts: the
// first that has every table the read methods query (0003 made positions;
// 0004 only dropped an index). A migration that adds a table or column a
// read needs must raise it.
const readOnlyMinSchema = 3

// OpenReadOnly opens the existing store at path for reading only: a look
// that leaves the file as it found it, even under renderers of another
// version that share it (feedctl prune -dry-run). Unlike Open it applies
// no migration, records no file identity (a copy's positions stay where
// they are, its store id too), never switches the journal mode and runs no
// checkpointer; its connections are SQLite read-only (mode=ro, query_only).
// It fails when path does not exist (it is never created), with
// ErrSchemaNewer when the file records a migration this binary does not
// know, with ErrSchemaOlder when the file predates the tables the reads
// query, and with a *NotStoreError (ErrNotStore) when it is no store at
// all: no SQLite database, one without tables, or another program's. The
// read methods work as on a DB from Open; Upsert, UpsertBatch and
// DeleteGame fail with ErrReadOnly.
//
// SQLite may still create the -wal and -shm beside a WAL-mode file that
// has none (a reader needs the shared-memory index): empty companions that
// change no line, and that the next process to open the file takes over.
func OpenReadOnly(ctx context.Context, path string) (*DB, error) {
	db, err := openReadOnly(ctx, path)
	if err != nil {
		return nil, explainOpen(path, err)
	}
	return db, nil
}

// openReadOnly is OpenReadOnly without the look at the filesystem that
// explains its failures (explainOpen).
func openReadOnly(ctx context.Context, path string) (*DB, error) {
	opts := Options{}.withDefaults()
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("store: open read-only %s: %w", path, err)
	}
	// As Probe refuses it: SQLite's answer for a directory, say, was
	// "disk I/O error", which said nothing of the path
	// (cmd/feedctl TestPruneRefusesDirectory).
	if fi, err := os.Stat(abs); err == nil && !fi.Mode().IsRegular() {
		return nil, &NotStoreError{Why: "not a regular file"}
	}
	db := newDB(abs, opts)
	db.r, err = sql.Open("sqlite", dsn(abs, opts.BusyTimeout, roleReadOnly))
	if err != nil {
		return nil, fmt.Errorf("store: open read-only %s: %w", path, err)
	}
	db.r.SetMaxOpenConns(opts.ReadConns)
	db.r.SetMaxIdleConns(opts.ReadConns)
	if err := db.checkSchema(ctx); err != nil {
		db.r.Close()
		return nil, fmt.Errorf("store: open read-only %s: %w", path, err)
	}
	if err := db.statFiles(); err != nil {
		db.r.Close()
		return nil, fmt.Errorf("store: open read-only %s: %w", path, err)
	}
	return db, nil
}

// readOnlyOpen reports whether db came from OpenReadOnly: it has no
// writer connection (nor checkpointer), and the writing methods fail with
// ErrReadOnly.
func (db *DB) readOnlyOpen() bool { return db.w == nil }

// readOnly reports whether err is SQLite's refusal to write the file.
func readOnly(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_READONLY
}
