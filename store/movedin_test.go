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
	ctx := context.Background()
	dir := t.TempDir()
	path, backup := filepath.Join(dir, "feed.db"), filepath.Join(dir, "backup.db")
	db, err := store.OpenWith(ctx, path, store.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	evs := genGames(t, 11, 2)
	half := len(evs) / 2
	for _, b := range inBatches(evs[:half], 50) {
		mustUpsert(t, db, b)
	}
	raw := mustRaw(t, path)
	if _, err := raw.Exec(`VACUUM INTO ?`, backup); err != nil {
		t.Fatal(err)
	}
	// The old file's WAL holds only what came after the backup.
	raw.Close()
	storefile.Checkpointed(t, path)
	for _, b := range inBatches(evs[half:], 50) {
		mustUpsert(t, db, b)
	}
	if err := os.Rename(backup, path); err != nil {
		t.Fatal(err)
	}
	if err := db.CheckFile(); !errors.Is(err, store.ErrReplaced) {
		t.Fatalf("CheckFile after the backup was moved in: %v", err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	db = MustOpen(t, path) // the restart
	check := mustRaw(t, path)
	var ok string
	if err := check.QueryRow(`PRAGMA integrity_check`).Scan(&ok); err != nil || ok != "ok" {
		t.Fatalf("integrity_check of the restored file: %q, %v", ok, err)
	}
	if n, err := db.Count(ctx); err != nil || n != int64(half) {
		t.Errorf("restored file holds %d lines (%v), want the backup's %d", n, err, half)
	}
}
