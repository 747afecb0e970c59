package store_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/codemojex/feed/internal/testkit/storefile"
	"github.com/codemojex/feed/store"
)

// TestFileOverwrittenInPlace: the store file is truncated or written over
// in place while the store runs (`: > feed.db`, a stray redirection,
// `truncate -s`): it
// keeps its device and inode, so the identity check passes, and SQLite
// committed on into its WAL from the pages it held in memory, acking lines
// its checkpoints then wrote into a malformed file. The store must refuse
// to write from then on (ErrReplaced, as for a deleted file) and, once
// closed, leave no WAL behind to be applied to what is at the path now: a
// truncated file then opens as a new, sound, empty store.
func TestFileOverwrittenInPlace(t *testing.T) {
	for _, tc := range []struct {
		name    string
		clobber func(path string) error
		want    string // in CheckFile's error
		reopen  string // in the next open's error; "" when it opens a new, empty store
	}{
		{"truncated", func(path string) error { return os.Truncate(path, 0) }, "truncated in place", ""},
		// Cut short, the header kept (`truncate -s`): it began as SQLite's
		// file does, and it was taken for sound.
		{"cut", func(path string) error {
			fi, err := os.Stat(path)
			if err != nil {
				return err
			}
			return os.Truncate(path, fi.Size()/2)
		}, "truncated in place", "malformed"},
		{"overwritten", func(path string) error {
			return os.WriteFile(path, []byte("2026-12-05 not a database\n"), 0o644) // O_TRUNC: same inode
		}, "overwritten in place", "not an SQLite database: not a store"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			path := filepath.Join(t.TempDir(), "feed.db")
			db, err := store.OpenWith(ctx, path, store.Options{Logger: quiet})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			evs := genGames(t, 3, 2)
			half := len(evs) / 2
			for _, b := range inBatches(evs[:half], 50) {
				mustUpsert(t, db, b)
			}
			// Quiet: every commit so far is in the main file, as it is a
			// moment after the last batch of a running renderer.
			storefile.Checkpointed(t, path)
			before, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			// A running renderer's checks see the file grow as it does.
			waitFor(t, 5*time.Second, func() bool { return db.CheckFile() == nil && store.SeenSize(db) == before.Size() })
			if err := tc.clobber(path); err != nil {
				t.Fatal(err)
			}
			if after, err := os.Stat(path); err != nil || !os.SameFile(before, after) {
				t.Fatalf("the clobbered file is not the one opened (%v): the test proves nothing", err)
			}
			// CheckFile reads the header at most every 100 ms.
			waitFor(t, 5*time.Second, func() bool { return errors.Is(db.CheckFile(), store.ErrReplaced) })
			if err := db.CheckFile(); !strings.Contains(err.Error(), tc.want) {
				t.Errorf("CheckFile = %v, want it to say %q", err, tc.want)
			}
			for _, b := range inBatches(evs[half:], 20) {
				res, err := db.Upsert(ctx, b)
				if !errors.Is(err, store.ErrReplaced) || !store.Unavailable(err) {
					t.Fatalf("Upsert into the clobbered file = %v (first %+v), want an unavailable ErrReplaced", err, res[0])
				}
			}
			if err := db.Close(); err != nil {
				t.Logf("close: %v", err)
			}
			for _, suffix := range []string{"-wal", "-shm"} {
				if _, err := os.Stat(path + suffix); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("%s left after close (%v): the next open would apply it to the file now there", suffix, err)
				}
			}
			if tc.reopen != "" {
				// Not a sound database: the next open refuses it, saying
				// so, and the operator removes it (docs/operations.md).
				if again, err := store.OpenWith(ctx, path, store.Options{Logger: quiet}); err == nil {
					again.Close()
					t.Fatal("the clobbered file opened as a store")
				} else if !strings.Contains(err.Error(), tc.reopen) {
					t.Errorf("open of the clobbered file: %v, want it to say %q", err, tc.reopen)
				}
				return
			}
			again := MustOpen(t, path)
			if n, err := again.Count(ctx); err != nil || n != 0 {
				t.Fatalf("reopened truncated file: Count = %d, %v; want a new, empty store", n, err)
			}
			var ok string
			if err := mustRaw(t, path).QueryRow(`PRAGMA integrity_check`).Scan(&ok); err != nil || ok != "ok" {
				t.Fatalf("integrity_check: %q, %v", ok, err)
			}
			mustUpsert(t, again, evs[:10])
		})
	}
}

// TestClobberNotHealedByCheckpoint: a file clobbered in place while lines
// wait in the WAL is not checkpointed into. A checkpoint grew a file cut
// short back to the database's size (zeros where the cut pages were) and
// wrote page 1 back over an emptied one, so that CheckFile, looking after
// it, found the file sound, and Upsert went on acknowledging lines into a
// malformed file. It did whenever the background checkpoint came between
// the clobber and CheckFile's next look, up to 200 ms after each commit.
func TestClobberNotHealedByCheckpoint(t *testing.T) {
	for _, tc := range []struct {
		name    string
		games   int
		clobber func(size int64) int64 // the size to cut the file to
	}{
		// Cut by less than SQLite's slack, which lets the checkpoint run.
		{"cut", 4, func(size int64) int64 { return size - 16<<10 }},
		// A small store emptied (`: > feed.db`).
		{"emptied", 1, func(int64) int64 { return 0 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			path := filepath.Join(t.TempDir(), "feed.db")
			db, err := store.OpenWith(ctx, path, store.Options{Logger: quiet})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			evs := genGames(t, 3, tc.games)
			for _, b := range inBatches(evs[:len(evs)-10], 50) {
				mustUpsert(t, db, b)
			}
			raw := mustRaw(t, path)
			defer raw.Close()
			storefile.Checkpointed(t, path)
			before, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			waitFor(t, 5*time.Second, func() bool { return db.CheckFile() == nil && store.SeenSize(db) == before.Size() })

			// A reader of the file as it is now holds every checkpoint
			// back (they cannot write a page it reads), so the lines
			// committed next stay in the WAL, as a moment after a batch.
			reader, err := raw.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer reader.Close()
			var n int
			if _, err := reader.ExecContext(ctx, `BEGIN`); err != nil {
				t.Fatal(err)
			}
			if err := reader.QueryRowContext(ctx, `SELECT count(*) FROM events`).Scan(&n); err != nil {
				t.Fatal(err)
			}
			mustUpsert(t, db, evs[len(evs)-10:len(evs)-5])
			if wal, err := os.Stat(path + "-wal"); err != nil || wal.Size() == 0 {
				t.Fatalf("no lines waiting in the WAL (%v): the test proves nothing", err)
			}
			cut := tc.clobber(before.Size())
			if err := os.Truncate(path, cut); err != nil {
				t.Fatal(err)
			}
			if _, err := reader.ExecContext(ctx, `COMMIT`); err != nil {
				t.Fatal(err)
			}

			if err := store.Checkpoint(ctx, db); !errors.Is(err, store.ErrReplaced) {
				t.Errorf("checkpoint of the clobbered file: %v, want ErrReplaced", err)
			}
			if fi, err := os.Stat(path); err != nil || fi.Size() != cut {
				t.Fatalf("the clobbered file was written into: %d bytes, cut to %d (%v)", fi.Size(), cut, err)
			}
			if err := db.CheckFile(); !errors.Is(err, store.ErrReplaced) {
				t.Errorf("CheckFile = %v, want ErrReplaced", err)
			}
			if _, err := db.Upsert(ctx, evs[len(evs)-5:]); !errors.Is(err, store.ErrReplaced) {
				t.Errorf("Upsert into the clobbered file: %v, want ErrReplaced", err)
			}
			// Another process's checkpoint (here the raw connection's)
			// still copies the WAL into it, and the file looks sound
			// again: the verdict stays. Its error, if any, is SQLite's
			// view of the malformed file.
			_, _ = raw.Exec(`PRAGMA wal_checkpoint(PASSIVE)`)
			if err := db.CheckFile(); !errors.Is(err, store.ErrReplaced) {
				t.Errorf("CheckFile after another checkpoint = %v, want ErrReplaced", err)
			}
		})
	}
}
