package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// Unavailable reports whether err says the store cannot write now (a full
// disk, an I/O error, a read-only or unopenable file, a lock held too long,
// a timeout, a closed or replaced store) as opposed to an entry that is bad
// in itself. Such an error is never an entry's fault: the consumer pauses
// and retries it, and never counts it toward poison (docs/reader-law.md).
func Unavailable(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, ErrUnavailable) || errors.Is(err, ErrClosed) || errors.Is(err, ErrReplaced) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return true
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_FULL, sqlite3.SQLITE_IOERR, sqlite3.SQLITE_READONLY,
			sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED,
			sqlite3.SQLITE_NOMEM, sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB,
			sqlite3.SQLITE_PROTOCOL, sqlite3.SQLITE_NOLFS, sqlite3.SQLITE_AUTH,
			sqlite3.SQLITE_PERM:
			return true
		}
		return false
	}
	// Some paths in database/sql lose the typed error; the texts are
	// SQLite's own and stable.
	msg := err.Error()
	for _, s := range []string{"database or disk is full", "disk I/O error", "readonly database",
		"unable to open database", "database is locked", "no space left on device"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// fileID is a file's identity: the same path may later name another file,
// and a new file may be given the inode number of one deleted before it
// (ext4 does so at once: `rm feed.db; cp backup feed.db`), so the file's
// birth time is part of it where the filesystem records one (born, unix
// ns; 0 where it does not).
type fileID struct {
	dev, ino uint64
	born     int64
}

// String is the identity as noteFile records it in meta.
func (id fileID) String() string {
	if id.born == 0 {
		return id.legacy()
	}
	return fmt.Sprintf("%d:%d:%d", id.dev, id.ino, id.born)
}

// legacy is the identity as files recorded it before the birth time was
// part of it.
func (id fileID) legacy() string { return fmt.Sprintf("%d:%d", id.dev, id.ino) }

// SameFile reports whether db and other opened the same file: the same
// device, inode and birth time, the identity by which Open recognises a
// copy. A file moved or copied into the path between their opens (a
// backup restored) is another; one copied into the file itself (same
// inode) is not seen. It holds after either is closed.
func (db *DB) SameFile(other *DB) bool { return db.file == other.file }

// companionSuffixes name the files SQLite keeps beside the store in WAL
// mode: the WAL and its shared-memory index, which holds the locks. They
// are beside the file a symbolic link at the path names (DB.real).
var companionSuffixes = [...]string{"-wal", "-shm"}

// CheckFile reports ErrReplaced when the path no longer names the file
// this DB opened: it was deleted (a lost volume, an operator's rm) or
// replaced (a backup moved into its place; one copied into the open file
// keeps its inode and is not seen). Writes would then go to a file no
// one will read again, so Upsert refuses them, and the renderer stops
// consuming and says so on /readyz. The same holds when the file's -wal or
// -shm was removed or replaced: this process goes on writing into the
// unlinked WAL under the unlinked index's locks, a process that opens the
// file now (a replica restarted) makes new ones and writes beside it
// unaware, and whichever checkpoints last overwrites the other's lines.
//
// A file truncated or written over in place (`: > feed.db`, a stray
// redirection, `truncate -s`) keeps its identity, and SQLite goes on
// committing into its WAL from the pages it has in memory while its
// checkpoints write them into what is now another file: CheckFile reports
// ErrReplaced, too, once the file no longer begins with SQLite's header,
// which SQLite never rewrites, or is shorter than it was seen at before
// (SQLite never shrinks it without a VACUUM, which nothing here runs). A
// valid database copied over it (a backup) at least as long is not seen.
func (db *DB) CheckFile() error { return db.checkFile(false) }

// checkFile is CheckFile; with all false, the header and the companions
// are looked at only once every companionEvery (all: every time). Once a
// look has found the file deleted, replaced or clobbered, every later one
// says so: the evidence of a clobber does not always last (see gone).
func (db *DB) checkFile(all bool) error {
	if gone := db.gone.Load(); gone != nil {
		return *gone
	}
	err := db.lookAtFile(all)
	if errors.Is(err, ErrReplaced) {
		db.gone.CompareAndSwap(nil, &err)
	}
	return err
}

func (db *DB) lookAtFile(all bool) error {
	if err := checkID(db.path, db.file); err != nil {
		return err
	}
	now := time.Now().UnixNano()
	if !all && now-db.companionsAt.Load() < int64(companionEvery) {
		return nil
	}
	if err := db.checkHeader(); err != nil {
		return err
	}
	if now, err := filepath.EvalSymlinks(db.path); err == nil && now != db.real {
		// The same file, reached through another name: moved behind a
		// symbolic link left at the path (mv feed.db /data/; ln -s). A
		// process that opens the path now keeps its -wal and -shm beside
		// the name it resolves, not beside these.
		return fmt.Errorf("%w: %s now names %s, opened as %s (its -wal and -shm are beside that)",
			ErrReplaced, db.path, now, db.real)
	}
	for i, suffix := range companionSuffixes {
		if db.companions[i] == (fileID{}) {
			continue // absent at Open (a read-only file): nothing to hold to
		}
		if err := checkID(db.real+suffix, db.companions[i]); err != nil {
			return err
		}
	}
	db.companionsAt.Store(now)
	return nil
}

// checkID reports ErrReplaced when path is gone or names a file other than
// opened, and ErrUnavailable when it cannot be looked at.
func checkID(path string, opened fileID) error {
	id, err := statID(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("%w: %s is gone", ErrReplaced, path)
	case err != nil:
		return fmt.Errorf("%w: stat %s: %w", ErrUnavailable, path, err)
	case id != opened:
		return fmt.Errorf("%w: %s is another file now (device %d inode %d, opened %d/%d)",
			ErrReplaced, path, id.dev, id.ino, opened.dev, opened.ino)
	}
	return nil
}

// sqliteHeader is how every SQLite database file begins.
const sqliteHeader = "SQLite format 3\x00"

// checkHeader reports ErrReplaced when the file opened no longer begins
// with SQLite's header or is shorter than it was, and ErrUnavailable when
// it cannot be read: one pread of the first bytes and one fstat.
func (db *DB) checkHeader() error {
	if db.head == nil {
		return nil // a read-only open: nothing is written into it
	}
	var b [len(sqliteHeader)]byte
	n, err := db.head.ReadAt(b[:], 0)
	switch {
	case err != nil && !errors.Is(err, io.EOF):
		return fmt.Errorf("%w: read %s: %w", ErrUnavailable, db.path, err)
	case n == 0:
		return fmt.Errorf("%w: %s was truncated in place (it is empty)", ErrReplaced, db.path)
	case string(b[:n]) != sqliteHeader:
		return fmt.Errorf("%w: %s was overwritten in place (it begins %q, not SQLite's header)", ErrReplaced, db.path, b[:n])
	}
	fi, err := db.head.Stat()
	if err != nil {
		return fmt.Errorf("%w: stat %s: %w", ErrUnavailable, db.path, err)
	}
	for {
		seen := db.headSize.Load()
		switch size := fi.Size(); {
		case size < seen:
			return fmt.Errorf("%w: %s was truncated in place (%d bytes, it was %d)", ErrReplaced, db.path, size, seen)
		case size == seen || db.headSize.CompareAndSwap(seen, size):
			return nil
		}
	}
}

// companionEvery is how often CheckFile looks at the -wal and -shm, and
// at the file's header: not at every batch, as it does at the file's
// identity. The two stats took 2–3 µs a commit, a sixth of a small
// commit's whole cost on the live path (docs/benchmarks.md, the store's
// cost at a low rate), while a replica that opens the file after they
// were removed takes far longer than this to start, and the lines a batch
// acknowledges into a file clobbered within it come back from the streams
// with the rest after the restart. A failed look is not recorded, so once
// one has failed every CheckFile looks again.
const companionEvery = 100 * time.Millisecond

// removeCompanions removes the -wal and -shm at the path, still this
// process's own, once the file they belong to was deleted or replaced
// there and its last connection here is closed. SQLite leaves them then
// (it neither checkpoints nor deletes a WAL on close when its database
// file has moved), and the next process to open the path would take them
// for the new file's: a backup moved into place under a running renderer
// (mv backup feed.db), which it stopped for, would be opened by its
// restart with the old file's WAL frames applied to it, a malformed or
// mixed file (TestBackupMovedInUnderRunningStore). What they hold is the
// old file's; the file now at the path is caught up from the streams.
// A process of the old file that is still open goes on with them
// unlinked, and refuses to write (CheckFile). It removes nothing unless
// both are still this process's own, looked at now: a companion gone or
// another process's means the path is another's to look after.
func (db *DB) removeCompanions() {
	if now, err := filepath.EvalSymlinks(db.path); err != nil || now != db.real {
		if id, err := statID(db.real); err == nil && id == db.file {
			// Only a symbolic link at the path was removed or pointed
			// elsewhere: the file SQLite opened is still in its place,
			// the -wal and -shm are its own, and other processes may
			// still have it open.
			return
		}
	}
	for i, suffix := range companionSuffixes {
		if id, err := statID(db.real + suffix); err != nil || id != db.companions[i] {
			return
		}
	}
	for _, suffix := range companionSuffixes {
		p := db.real + suffix
		if err := os.Remove(p); err != nil {
			db.log.Warn("store file replaced: cannot remove its old companion", "path", p, "err", err)
		}
	}
}

// keepWAL stops the writer connection, the last of this process to
// close, from deleting the -wal and -shm when it closes: SQLite deletes
// them by their paths, which name another process's now (the file or
// they were deleted or replaced under this one, see CheckFile, and a
// process that opened the file since made new ones), and that process
// would then write on into unlinked files beside the next one to open.
func (db *DB) keepWAL() {
	ctx := context.Background()
	c, err := db.w.Conn(ctx)
	if err != nil {
		return
	}
	defer c.Close()
	if err := c.Raw(func(dc any) error {
		fc, ok := dc.(sqlite.FileControl)
		if !ok {
			return errors.New("no file control")
		}
		_, err := fc.FileControlPersistWAL("main", 1)
		return err
	}); err != nil {
		db.log.Warn("store file replaced: cannot keep its -wal on close", "err", err)
	}
}
