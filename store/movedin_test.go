package store_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/codemojex/feed/internal/testkit/storefile"
	"github.com/codemojex/feed/store"
)

// TestBackupMovedInUnderRunningStore: a backup moved into the store's
// place while a renderer runs (mv backup feed.db) stops its writes
// (ErrReplaced), and it is restarted, as docs/operations.md says. SQLite
// neither checkpoints nor deletes a WAL on close when its database file
// has moved, so the -wal and -shm of the file it had open stayed at the
// path, and the restart applied that WAL's frames to the backup: the file
// was malformed ("file identity: database disk image is malformed", a
// renderer that cannot start) or, where the pages lined up, held the old
// file's lines instead of the backup's. The restart must find the backup
// as it was.
func TestBackupMovedInUnderRunningStore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "feed.db")
	half := mustMoveBackupIn(t, path, path)
	mustHoldBackup(t, path, path, half) // the restart
}

// mustMoveBackupIn opens the store at open (the file itself, or a link to
// it), stores lines, backs them up with VACUUM INTO beside file, stores
// more, and moves the backup into file's place under the running store,
// which must take it for replaced (ErrReplaced) and close. It returns how
// many lines the backup holds.
func mustMoveBackupIn(tb testing.TB, open, file string) int {
	tb.Helper()
	ctx := context.Background()
	backup := filepath.Join(filepath.Dir(file), "backup.db")
	db, err := store.OpenWith(ctx, open, store.Options{Logger: quiet})
	if err != nil {
		tb.Fatal(err)
	}
	evs := genGames(tb, 11, 2)
	half := len(evs) / 2
	for _, b := range inBatches(evs[:half], 50) {
		mustUpsert(tb, db, b)
	}
	raw := mustRaw(tb, file)
	if _, err := raw.Exec(`VACUUM INTO ?`, backup); err != nil {
		tb.Fatal(err)
	}
	// The old file's WAL holds only what came after the backup.
	raw.Close()
	storefile.Checkpointed(tb, file)
	for _, b := range inBatches(evs[half:], 50) {
		mustUpsert(tb, db, b)
	}
	if err := os.Rename(backup, file); err != nil {
		tb.Fatal(err)
	}
	if err := db.CheckFile(); !errors.Is(err, store.ErrReplaced) {
		tb.Fatalf("CheckFile after the backup was moved in: %v", err)
	}
	if err := db.Close(); err != nil {
		tb.Fatal(err)
	}
	return half
}

// mustHoldBackup restarts the store at open and finds file sound, holding
// the backup's want lines.
func mustHoldBackup(tb testing.TB, open, file string, want int) {
	tb.Helper()
	db := MustOpen(tb, open)
	check := mustRaw(tb, file)
	var ok string
	if err := check.QueryRow(`PRAGMA integrity_check`).Scan(&ok); err != nil || ok != "ok" {
		tb.Fatalf("integrity_check of the restored file: %q, %v", ok, err)
	}
	if n, err := db.Count(context.Background()); err != nil || n != int64(want) {
		tb.Errorf("restored file holds %d lines (%v), want the backup's %d", n, err, want)
	}
}
