package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"modernc.org/sqlite" // also registers the "sqlite" driver
	sqlite3 "modernc.org/sqlite/lib"
)

// Options tune Open. The zero value is what production uses.
type Options struct {
	// BusyTimeout is how long one statement waits for another process's
	// lock inside SQLite before the store's own retry loop (with backoff
	// and jitter) takes over. Default 5s; the writer's waits are capped at
	// 250ms, so that a batch's ended context is seen that soon (see
	// Upsert). Tests set it tiny to exercise the retry loop.
	BusyTimeout time.Duration
	// LockWait bounds how long, in all, Upsert waits for a write lock that
	// another process holds before it gives up with ErrUnavailable: the
	// consumer then pauses and says why, where a batch waited for good.
	// Default DefaultLockWait.
	LockWait time.Duration
	// ReadConns caps the read-only pool. Default 4.
	ReadConns int
	// Logger receives retries and migrations. Default slog.Default().
	Logger *slog.Logger
	// EntryByEntry makes every batch take the careful path (one SAVEPOINT
	// and a few statements per entry) instead of only batches in which a
	// statement failed. Slower; it exists so tests can hold both paths to
	// the same results.
	EntryByEntry bool
}

// withDefaults returns o with every zero field set to the default its doc
// comment names. Each Config and Options of the feed fills defaults this way,
// once, where it is opened.
func (o Options) withDefaults() Options {
	if o.BusyTimeout <= 0 {
		o.BusyTimeout = 5 * time.Second
	}
	if o.LockWait <= 0 {
		o.LockWait = DefaultLockWait
	}
	if o.ReadConns <= 0 {
		o.ReadConns = 4
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

// DB is one process's handle on the store file: a single writer connection
// (SQLite serialises writers anyway; one connection per process keeps
// prepared statements hot and lock hand-offs between processes fair) and a
// read-only pool so page loads and tailers never wait on a batch.
type DB struct {
	path string
	log  *slog.Logger
	w    *sql.DB
	r    *sql.DB

	// writer is the writer connection's lock: one batch (or deletion) at
	// a time. A channel of one rather than a mutex, so that a call
	// waiting for it can give up when its context ends (lockWriter).
	writer chan struct{}
	stmts  *writeStmts
	fx     *effects // scratch for Upsert, under writer
	slow   bool     // Options.EntryByEntry
	// lockWait is Options.LockWait: Upsert's bound on its wait for a lock
	// another process holds.
	lockWait time.Duration

	ckpt     *sql.DB            // checkpoint connection (see checkpoint.go)
	stopCkpt context.CancelFunc // stops checkpointLoop
	dirty    atomic.Bool        // batches committed since the last checkpoint
	wg       sync.WaitGroup     // checkpointLoop

	file fileID // the file opened at path (see CheckFile)
	// real is path with its symbolic links resolved, as SQLite resolves
	// them when it opens the file: the -wal and -shm are beside the file
	// a link names, not beside the link.
	real string
	// The file's WAL and shared-memory index as opened (zero when absent
	// at Open): while the store is open they are never replaced, and a
	// process that opens the file after they were removed makes new ones
	// and writes beside this one without its locks (see CheckFile).
	companions [len(companionSuffixes)]fileID
	// companionsAt is when CheckFile last found the companions as opened
	// (unix ns; see companionEvery).
	companionsAt atomic.Int64
	// head is the file as opened, for CheckFile to read its header: a file
	// truncated or overwritten in place keeps its identity. It is closed
	// only after the connections: closing a descriptor of the file drops
	// every POSIX lock this process holds on it, SQLite's too. Nil for a
	// read-only open.
	head *os.File
	// headSize is the largest size CheckFile saw the file at: SQLite never
	// shrinks it (no VACUUM runs here, and freed pages stay in the file),
	// so a smaller one was cut short in place (see CheckFile).
	headSize atomic.Int64
	// gone is the first ErrReplaced a look at the file found. It is kept:
	// a checkpoint can make a file clobbered in place look sound again
	// (it writes page 1 back and grows the file to the database's size).
	gone atomic.Pointer[error]

	boards *boardCache // scoreboards kept in memory (see ScoreboardAt)

	closeOnce sync.Once
	closed    chan struct{}
}

// newDB is the part of a DB that Open and OpenReadOnly share: Close and
// the writer's lock work on either.
func newDB(abs string, opts Options) *DB {
	return &DB{path: abs, log: opts.Logger.With("db", abs), closed: make(chan struct{}),
		writer: make(chan struct{}, 1), boards: newBoardCache()}
}

// Open opens (creating it and its directory if needed) the store at path,
// switches it to WAL and applies pending migrations. Several processes may
// Open the same new file at once. It fails with ErrSchemaNewer when the file
// records a migration this binary does not know, and with a *NotStoreError
// (ErrNotStore), before writing anything, when the file is no SQLite
// database or another program's (see Probe).
func Open(ctx context.Context, path string) (*DB, error) {
	return OpenWith(ctx, path, Options{})
}

// OpenWith is Open with options.
func OpenWith(ctx context.Context, path string, opts Options) (*DB, error) {
	db, err := openWith(ctx, path, opts)
	if err != nil {
		return nil, explainOpen(path, err)
	}
	return db, nil
}

// openWith is OpenWith without the look at the filesystem that explains
// its failures (explainOpen).
func openWith(ctx context.Context, path string, opts Options) (*DB, error) {
	opts = opts.withDefaults()
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	if err := danglingLink(abs); err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	// Before the first write (the switch to WAL rewrites the header, the
	// first migration adds tables): a path that names another program's
	// database, or no database at all, is refused as it is, where the
	// store's tables were added to it.
	// A lock another process holds past the busy timeout (a database in
	// rollback mode mid-write) is waited out, as every other step of Open
	// waits it out (retryBusy), not taken for a refusal.
	// A newer release's file is refused here too, before any write:
	// refused by the migration alone, after the switch to WAL, the
	// refused writer's close (the file's last connection) checkpointed
	// the newer release's WAL into the file and deleted it (a deploy
	// rolled back after its renderer was killed;
	// TestNewerSchemaLeftAsItWas). migrateStep looks again under the
	// write lock: a newer renderer may migrate the file meanwhile.
	db := newDB(abs, opts)
	var have int
	if err := db.retryBusy(ctx, "probe", func() (err error) {
		have, err = probe(ctx, abs, opts.BusyTimeout)
		return err
	}); err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	if known := latestSchema(); have > known {
		return nil, fmt.Errorf("store: open %s: %w", path, schemaNewer(have, known))
	}
	db.fx, db.slow, db.lockWait = newEffects(), opts.EntryByEntry, opts.LockWait

	db.w, err = sql.Open("sqlite", dsn(abs, opts.BusyTimeout, roleWriter))
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	db.w.SetMaxOpenConns(1)
	db.w.SetMaxIdleConns(1)
	db.w.SetConnMaxLifetime(0)
	db.w.SetConnMaxIdleTime(0)

	if err := db.setup(ctx); err != nil {
		db.abandonWriter(err)
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}

	if err := db.statFiles(); err != nil {
		db.w.Close()
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	if db.head, err = os.Open(abs); err != nil {
		db.w.Close()
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	if err := db.noteFile(ctx); err != nil && !readOnly(err) {
		// A read-only file (a backup looked at) takes no lines either.
		db.abandonWriter(err)
		db.head.Close()
		return nil, fmt.Errorf("store: open %s: file identity: %w", path, err)
	}

	db.r, err = sql.Open("sqlite", dsn(abs, opts.BusyTimeout, roleReader))
	if err != nil {
		db.w.Close()
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	db.r.SetMaxOpenConns(opts.ReadConns)
	db.r.SetMaxIdleConns(opts.ReadConns)
	if err := db.r.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("store: open %s: readers: %w", path, err)
	}
	if err := db.startCheckpointer(ctx, dsn(abs, opts.BusyTimeout, roleCheckpointer)); err != nil {
		db.Close()
		return nil, fmt.Errorf("store: open %s: checkpointer: %w", path, err)
	}
	return db, nil
}

// abandonWriter closes the writer connection of an Open that failed on
// err. When err is SQLite's finding that the file is malformed, it closes
// it without the checkpoint SQLite runs as a file's last connection
// closes: the file is then most often one put in place with another
// file's -wal left beside it (a backup restored after a crash, its -wal
// and -shm forgotten), and that checkpoint wrote the other file's pages
// into it, so that it stayed malformed once they were removed
// (TestFailedOpenLeavesFileAsItWas). A read-only connection held open
// meanwhile keeps the writer from being the last one (in WAL mode each
// connection keeps a shared lock on the file), and being read-only it
// checkpoints nothing as it closes after.
func (db *DB) abandonWriter(err error) {
	if malformed(err) {
		if ro, e := sql.Open("sqlite", dsn(db.path, time.Second, roleReadOnly)); e == nil {
			ro.SetMaxOpenConns(1)
			// Its shared lock is taken as it begins to read, even when
			// what it reads is malformed.
			var n int
			_ = ro.QueryRow(`SELECT count(*) FROM sqlite_master`).Scan(&n)
			defer ro.Close()
		}
	}
	db.w.Close()
}

// malformed reports whether err is SQLite's finding that the file is no
// sound database (corrupt, or not a database).
func malformed(err error) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	code := se.Code() & 0xff
	return code == sqlite3.SQLITE_CORRUPT || code == sqlite3.SQLITE_NOTADB
}

// statFiles notes the identity of the file as opened, and of its -wal and
// -shm (those may be absent), for CheckFile to compare against.
func (db *DB) statFiles() error {
	var err error
	if db.file, err = statID(db.path); err != nil {
		return err
	}
	if db.real, err = filepath.EvalSymlinks(db.path); err != nil {
		return err
	}
	for i, suffix := range companionSuffixes {
		db.companions[i], _ = statID(db.real + suffix)
	}
	return nil
}

// checkSchema reads the file's schema version (the highest recorded in
// schema_migrations) for OpenReadOnly, and refuses one it cannot read, or
// a file that is no store.
func (db *DB) checkSchema(ctx context.Context) error {
	var isStore bool
	err := db.retryBusy(ctx, "schema", func() error {
		var err error
		isStore, err = probeTables(ctx, db.r)
		return err
	})
	var ns *NotStoreError
	switch {
	case errors.As(err, &ns):
		return err
	case err != nil:
		return fmt.Errorf("schema: %w", err)
	case !isStore:
		// Nothing to read: Open would make a store of it, which a
		// read-only open never does.
		return &NotStoreError{Why: "an SQLite database without tables"}
	}
	known := latestSchema()
	var have int
	err = db.retryBusy(ctx, "schema", func() error {
		// The table is there (probeTables): SQLite prepares a statement
		// whole, so the CASE over its existence that this was failed on
		// a file without it ("no such table"), whichever branch it took.
		return db.r.QueryRowContext(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&have)
	})
	switch {
	case err != nil:
		return fmt.Errorf("schema: %w", err)
	case have > known:
		return schemaNewer(have, known)
	case have < readOnlyMinSchema:
		return fmt.Errorf("%w: file has version %d, reads need %d (Open migrates it)", ErrSchemaOlder, have, readOnlyMinSchema)
	}
	return nil
}

// setup switches the file to WAL, migrates and prepares the write
// statements, retrying busy errors: three processes creating one file at
// once contend for the journal-mode switch and the first migration.
func (db *DB) setup(ctx context.Context) error {
	err := db.retryBusy(ctx, "journal_mode", func() error {
		var mode string
		if err := db.w.QueryRowContext(ctx, "PRAGMA journal_mode=WAL").Scan(&mode); err != nil {
			return err
		}
		if !strings.EqualFold(mode, "wal") {
			return fmt.Errorf("journal_mode is %q, want wal", mode)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("wal: %w", err)
	}
	if err := db.migrate(ctx); err != nil {
		return err
	}
	db.stmts, err = prepareWrite(ctx, db.w)
	if err != nil {
		return fmt.Errorf("prepare: %w", err)
	}
	return nil
}

// Path returns the absolute path of the store file.
func (db *DB) Path() string { return db.path }

// Close stops the checkpointer and closes the connections, after the batch
// in progress, if any. Calls after the first are no-ops.
func (db *DB) Close() error {
	var err error
	db.closeOnce.Do(func() {
		close(db.closed)
		if db.stopCkpt != nil {
			db.stopCkpt()
		}
		db.wg.Wait()
		if db.ckpt != nil {
			db.ckpt.Close()
		}
		db.writer <- struct{}{} // after the call in progress; later ones see closed
		defer db.unlockWriter()
		if db.stmts != nil {
			db.stmts.close()
		}
		if db.r != nil {
			if e := db.r.Close(); e != nil {
				err = fmt.Errorf("store: close readers: %w", e)
			}
		}
		if db.readOnlyOpen() {
			return // no writer to close
		}
		// Everything looked at now, not as CheckFile's cadence allows: a
		// file clobbered in place just before must not be missed.
		replaced := errors.Is(db.checkFile(true), ErrReplaced)
		if replaced {
			db.keepWAL()
		}
		if e := db.w.Close(); e != nil && err == nil {
			err = fmt.Errorf("store: close writer: %w", e)
		}
		if replaced {
			db.removeCompanions()
		}
		db.head.Close() // the connections are closed: no lock of theirs is left to drop
	})
	return err
}

// lockWriter takes the writer connection for one call, waiting while
// another call of this process holds it (a batch, a DeleteGame waiting
// for another process's lock), until ctx ends (ctx's error) or the store
// is closed (ErrClosed). The untaken lock costs one non-blocking send:
// tens of nanoseconds more than a mutex, against a commit's tens of
// microseconds (BenchmarkUpsert). unlockWriter lets it go.
func (db *DB) lockWriter(ctx context.Context) error {
	select {
	case db.writer <- struct{}{}:
		return nil
	default:
	}
	select {
	case db.writer <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-db.closed:
		return ErrClosed
	}
}

// unlockWriter lets go of the writer taken by lockWriter.
func (db *DB) unlockWriter() { <-db.writer }

func (db *DB) isClosed() bool {
	select {
	case <-db.closed:
		return true
	default:
		return false
	}
}

// danglingLink says what is wrong with a path that is a symbolic link
// (or a chain of them) to a file whose directory does not exist: Open
// makes the link's own directory, not its target's (a volume not mounted
// is no directory to make), and SQLite's words for it were "unable to open
// database file (14)". nil for any other path.
func danglingLink(abs string) error {
	p := abs
	for range 40 { // the kernel's bound on a chain of links
		fi, err := os.Lstat(p)
		if err != nil || fi.Mode()&os.ModeSymlink == 0 {
			return nil
		}
		target, err := os.Readlink(p)
		if err != nil {
			return nil
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(filepath.Dir(p), target)
		}
		if _, err := os.Stat(filepath.Dir(target)); errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("a symbolic link to %s, whose directory %s does not exist", target, filepath.Dir(target))
		}
		p = target
	}
	return nil
}
