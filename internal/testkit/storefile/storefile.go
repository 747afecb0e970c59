// Package storefile writes and copies SQLite store files for the tests
// that need one as another binary left it: at an older schema version, or
// copied from a peer's file.
package storefile

import (
	"database/sql"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"testing"
	"time"

	_ "modernc.org/sqlite" // the "sqlite" driver the store uses

	"github.com/codemojex/feed/internal/testkit/wait"
	"github.com/codemojex/feed/migrations"
)

// Exec runs one statement on the file being written; it fails the test if
// the statement fails.
type Exec func(q string, args ...any)

// AtSchema writes a store file at path as a binary whose newest migration
// was version left it: the embedded migrations up to it, each recorded in
// schema_migrations, in WAL mode as the renderers keep it. fill, if not
// nil, then adds rows with exec. The file is closed (its WAL checkpointed)
// before AtSchema returns.
func AtSchema(tb testing.TB, path string, version int, fill func(exec Exec)) {
	tb.Helper()
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		tb.Fatal(err)
	}
	defer raw.Close()
	raw.SetMaxOpenConns(1)
	exec := func(q string, args ...any) {
		tb.Helper()
		if _, err := raw.Exec(q, args...); err != nil {
			tb.Fatalf("%.60s: %v", q, err)
		}
	}
	exec(`PRAGMA journal_mode=WAL`)
	exec(`CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)`)
	names, err := fs.Glob(migrations.FS, "*.sql")
	if err != nil {
		tb.Fatal(err)
	}
	for _, name := range names {
		v, err := strconv.Atoi(name[:4])
		if err != nil {
			tb.Fatal(err)
		}
		if v > version {
			break
		}
		b, err := migrations.FS.ReadFile(name)
		if err != nil {
			tb.Fatal(err)
		}
		exec(string(b))
		exec(`INSERT INTO schema_migrations VALUES (?, ?, 0)`, v, name)
	}
	if fill != nil {
		fill(exec)
	}
}

// Copy copies the file from to to, a new file (another inode), as a host
// started from a peer's file or restored from a backup.
func Copy(tb testing.TB, from, to string) {
	tb.Helper()
	src, err := os.Open(from)
	if err != nil {
		tb.Fatal(err)
	}
	defer src.Close()
	dst, err := os.Create(to)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		tb.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		tb.Fatal(err)
	}
}

// Checkpointed copies every commit in path's WAL into the file and empties
// the WAL, as it is a moment after a running renderer's last batch, for a
// test that then clobbers the file. It waits until a checkpoint completes:
// one that meets the store's own background checkpoint under way is
// refused (busy), leaving the WAL as it was, and that checkpoint's copy,
// still going on, then wrote pages back into a file the test had cut
// short or emptied, so the store's looks found a sound file
// (TestTruncatedStore failed that way once in CI, under load).
func Checkpointed(tb testing.TB, path string) {
	tb.Helper()
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		tb.Fatal(err)
	}
	defer raw.Close()
	var busy, frames, done int
	wait.Until(tb, 30*time.Second, func() bool {
		// Refused while another checkpoint or a reader holds the WAL:
		// tried again until one goes through.
		if err := raw.QueryRow(`PRAGMA wal_checkpoint(TRUNCATE)`).Scan(&busy, &frames, &done); err != nil {
			tb.Fatalf("storefile: checkpoint %s: %v", path, err)
		}
		return busy == 0 && frames == 0
	}, func() string {
		return fmt.Sprintf("storefile: checkpoint %s: busy %d, %d frames, %d copied", path, busy, frames, done)
	})
}
