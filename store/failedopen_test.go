package store_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/codemojex/feed/store"
)

// TestFailedOpenLeavesFileAsItWas: a backup is put in place after a
// renderer was killed (its -wal and -shm left at the path, and forgotten),
// and a renderer is started on it. SQLite applies the old WAL to the
// backup, and the open fails on a malformed file, as it should; but the
// failed open's close checkpointed that WAL into the backup, so it stayed
// malformed once the -wal and -shm were removed: a backup moved into
// place was lost. The failed open must leave the file as it was.
func TestFailedOpenLeavesFileAsItWas(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path, backup := filepath.Join(dir, "feed.db"), filepath.Join(dir, "backup.db")
	db, err := store.OpenWith(ctx, path, store.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	evs := genGames(t, 9, 2)
	for _, b := range inBatches(evs, 100) {
		mustUpsert(t, db, b)
	}
	raw := mustRaw(t, path)
	if _, err := raw.Exec(`VACUUM INTO ?`, backup); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	// A renderer writes and is killed: its -wal and -shm stay.
	children, release := startChildren(t, 1, "upsert", path, envSeed+"=5")
	release()
	for i := 0; i < 30 && children[0].stdout.Scan(); i++ {
		// 30 of its batches committed
	}
	if err := children[0].cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	children[0].cmd.Wait()
	if _, err := os.Stat(path + "-wal"); err != nil {
		t.Fatalf("the killed process left no -wal: %v", err)
	}

	if err := os.Rename(backup, path); err != nil {
		t.Fatal(err)
	}
	db, err = store.OpenWith(ctx, path, store.Options{Logger: quiet})
	if err == nil {
		db.Close()
		t.Fatal("the backup opened with the old file's WAL applied: this test's premise did not hold")
	}
	t.Logf("open with the old -wal beside the backup: %v", err)
	for _, suffix := range []string{"-wal", "-shm"} {
		if err := os.Remove(path + suffix); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
	}
	db = MustOpen(t, path)
	if n, err := db.Count(ctx); err != nil || n != int64(len(evs)) {
		t.Errorf("the backup holds %d lines (%v) once the -wal and -shm are removed, want its %d", n, err, len(evs))
	}
}
