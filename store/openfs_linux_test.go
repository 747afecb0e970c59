package store_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/codemojex/feed/internal/testkit/tmpfs"
	"github.com/codemojex/feed/store"
)

// TestOpenOnUnwritableFilesystem: a store cleanly closed (no -wal, no
// -shm) is opened where the filesystem cannot take them: full (a renderer
// restarted while the disk is full) or mounted read-only (a backup looked
// at on its medium). SQLite's words were another fault's, "disk I/O error
// (4874)" and "unable to open database file (14)", which sent an operator
// to the file; the error now names the filesystem's state, and is still
// one the renderer takes for the store's unavailability.
func TestOpenOnUnwritableFilesystem(t *testing.T) {
	tmpfs.Require(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		spoil func(t *testing.T, dir string)
		want  string
	}{
		{"full", func(t *testing.T, dir string) { tmpfs.MustFill(t, dir) }, "is full (no space left on device)"},
		{"read-only", func(t *testing.T, dir string) {
			t.Helper()
			if err := unix.Mount("none", dir, "tmpfs", unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
				t.Fatalf("remount %s read-only: %v", dir, err)
			}
		}, "is on a read-only filesystem"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := tmpfs.MustMount(t, "4m")
			path := filepath.Join(dir, "feed.db")
			db, err := store.OpenWith(ctx, path, store.Options{Logger: quiet})
			if err != nil {
				t.Fatal(err)
			}
			mustUpsert(t, db, genGames(t, 1, 1)[:20])
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			for _, suffix := range []string{"-wal", "-shm"} {
				if _, err := os.Stat(path + suffix); err == nil {
					t.Fatalf("%s left after a clean close", suffix)
				}
			}
			tc.spoil(t, dir)

			db, err = store.OpenWith(ctx, path, store.Options{Logger: quiet})
			if err == nil {
				db.Close()
				t.Fatal("Open succeeded")
			}
			if !strings.Contains(err.Error(), tc.want) || !store.Unavailable(err) {
				t.Errorf("Open: %v (unavailable %v), want it to say %q", err, store.Unavailable(err), tc.want)
			}
			ro, err := store.OpenReadOnly(ctx, path)
			if err == nil {
				ro.Close()
				t.Fatal("OpenReadOnly succeeded")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("OpenReadOnly: %v, want it to say %q", err, tc.want)
			}
		})
	}
}
