package store_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/codemojex/feed/internal/testkit/storefile"
	"github.com/codemojex/feed/store"
)

// TestSymlinkedStore: the -db path is a symbolic link to the file
// (/srv/feed/feed.db -> /data/feed.db, a volume mounted elsewhere).
// SQLite resolves the link and keeps the -wal and -shm beside the file it
// names, not beside the link. The store looked for them beside the link,
// found none and held to nothing: their removal under a running store
// went unseen (it wrote on into the unlinked WAL, beside the one a
// restarted replica makes), and a backup moved into the file's place was
// opened at the restart with the old file's WAL applied to it, as before
// TestBackupMovedInUnderRunningStore's fix.
func TestSymlinkedStore(t *testing.T) {
	ctx := context.Background()
	// layout makes the link at dir/feed.db to dir/data/feed.db and
	// returns the link and the file it names.
	layout := func(t *testing.T) (link, file string) {
		t.Helper()
		dir := t.TempDir()
		link, file = filepath.Join(dir, "feed.db"), filepath.Join(dir, "data", "feed.db")
		if err := os.Mkdir(filepath.Dir(file), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(file, link); err != nil {
			t.Fatal(err)
		}
		return link, file
	}

	t.Run("companions removed", func(t *testing.T) {
		link, file := layout(t)
		db, err := store.OpenWith(ctx, link, store.Options{Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		for _, b := range inBatches(genGames(t, 5, 1), 50) {
			mustUpsert(t, db, b)
		}
		storefile.Checkpointed(t, file)
		for _, suffix := range []string{"-wal", "-shm"} {
			if err := os.Remove(file + suffix); err != nil {
				t.Fatal(err)
			}
		}
		// CheckFile looks at them at most every 100 ms.
		waitFor(t, 5*time.Second, func() bool { return errors.Is(db.CheckFile(), store.ErrReplaced) })
	})

	// The file is moved behind a link left at its path (mv feed.db
	// data/; ln -s data/feed.db feed.db: the same inode) while it is
	// open. Its -wal and -shm stay where they were, and a process that
	// opens the path now makes new ones beside data/feed.db and writes
	// beside this one without its locks: this one must stop writing.
	t.Run("file moved behind a link", func(t *testing.T) {
		dir := t.TempDir()
		path, moved := filepath.Join(dir, "feed.db"), filepath.Join(dir, "data", "feed.db")
		if err := os.Mkdir(filepath.Dir(moved), 0o755); err != nil {
			t.Fatal(err)
		}
		db, err := store.OpenWith(ctx, path, store.Options{Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		mustUpsert(t, db, genGames(t, 7, 1))
		if err := os.Rename(path, moved); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(moved, path); err != nil {
			t.Fatal(err)
		}
		// CheckFile looks at it at most every 100 ms.
		waitFor(t, 5*time.Second, func() bool { return errors.Is(db.CheckFile(), store.ErrReplaced) })
	})

	// The link is pointed at another file (a restore by `ln -sfn`) while
	// two processes have the file it named open: the one that closes
	// first must leave that file's -wal and -shm to it, for it is still
	// in its place and the other still writes into them.
	t.Run("link pointed elsewhere", func(t *testing.T) {
		link, file := layout(t)
		other := filepath.Join(filepath.Dir(file), "other.db")
		a, err := store.OpenWith(ctx, link, store.Options{Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		defer a.Close()
		b := MustOpen(t, link)
		evs := genGames(t, 13, 1)
		half := len(evs) / 2
		mustUpsert(t, a, evs[:half])
		mustUpsert(t, b, evs[half:])
		MustOpen(t, other)
		if err := os.Remove(link); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(other, link); err != nil {
			t.Fatal(err)
		}
		if err := a.CheckFile(); !errors.Is(err, store.ErrReplaced) {
			t.Fatalf("CheckFile after the link was pointed elsewhere: %v", err)
		}
		if err := a.Close(); err != nil {
			t.Fatal(err)
		}
		for _, suffix := range []string{"-wal", "-shm"} {
			if _, err := os.Stat(file + suffix); err != nil {
				t.Errorf("the file's %s, which another process has open, was removed: %v", suffix, err)
			}
		}
		old := MustOpen(t, file)
		if n, err := old.Count(ctx); err != nil || n != int64(len(evs)) {
			t.Errorf("the file the link named holds %d lines (%v), want %d", n, err, len(evs))
		}
	})

	t.Run("backup moved in", func(t *testing.T) {
		link, file := layout(t)
		half := mustMoveBackupIn(t, link, file)
		for _, suffix := range []string{"-wal", "-shm"} {
			if _, err := os.Lstat(file + suffix); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the old file's %s is left beside the backup: %v", suffix, err)
			}
		}
		mustHoldBackup(t, link, file, half) // the restart
	})
}
