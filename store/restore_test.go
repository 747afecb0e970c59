package store_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/internal/testkit/storefile"
	"github.com/codemojex/feed/internal/testkit/tmpfs"
	"github.com/codemojex/feed/store"
)

// TestRestoredCopyOnReusedInode: a backup restored the common way, with
// the renderers stopped (`rm feed.db*; cp backup feed.db`), is a copy even
// when the filesystem hands the new file the deleted original's inode
// number, as ext4 does at once: its positions move back so the catch-up
// re-reads the entries in flight when the backup was taken.
func TestRestoredCopyOnReusedInode(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path, backup := filepath.Join(dir, "feed.db"), filepath.Join(dir, "backup.db")
	db, err := store.OpenWith(ctx, path, store.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now()
	e := mkEvent(t, event.NewMinter(1).Next(at), "g", "chat", at, "player", "ada", "text", "hi")
	mustUpsert(t, db, []store.Event{e})
	want, _ := db.Position(ctx, "g")
	raw := mustRaw(t, path)
	if _, err := raw.Exec(`VACUUM INTO ?`, backup); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	orig := inode(t, path)

	// Restore: the old file goes, the backup is copied in. The filesystem
	// may give the new file the old inode number (ext4 hands out the
	// lowest free one of the group: the copies kept here hold the -wal's
	// and -shm's, freed with it, until the old file's comes up).
	for _, suffix := range []string{"", "-wal", "-shm"} {
		os.Remove(path + suffix)
	}
	reused := false
	for i := range 64 {
		cp := filepath.Join(dir, fmt.Sprintf("copy%d.db", i))
		storefile.Copy(t, backup, cp)
		if inode(t, cp) == orig {
			if err := os.Rename(cp, path); err != nil { // keeps the inode
				t.Fatal(err)
			}
			reused = true
			break
		}
	}
	if !reused {
		tmpfs.SkipOrFail(t, fmt.Errorf("this filesystem (%s) did not hand out inode %d again", dir, orig))
	}
	db = MustOpen(t, path)
	got, err := db.Position(ctx, "g")
	if err != nil {
		t.Fatal(err)
	}
	if got == want {
		t.Errorf("restored copy on the original's inode number kept position %s: not recognised as a copy, "+
			"so entries in flight when the backup was taken are never caught up", got)
	}
}

func inode(tb testing.TB, path string) uint64 {
	tb.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		tb.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Ino
}

// TestLegacyFileRecordKeepsPositions: a file whose identity was recorded
// before the birth time was part of it (device:inode) is taken for the
// same file when those match, so an upgrade does not move every store's
// positions back; the record is rewritten in full.
func TestLegacyFileRecordKeepsPositions(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "feed.db")
	db, err := store.OpenWith(ctx, path, store.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now()
	mustUpsert(t, db, []store.Event{mkEvent(t, event.NewMinter(2).Next(at), "g", "chat", at, "player", "ada", "text", "hi")})
	want, _ := db.Position(ctx, "g")
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	legacy := fmt.Sprintf("%d:%d", st.Dev, st.Ino)
	raw := mustRaw(t, path)
	if _, err := raw.Exec(`UPDATE meta SET value = ? WHERE key = 'file'`, legacy); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	db = MustOpen(t, path)
	if got, _ := db.Position(ctx, "g"); got != want {
		t.Errorf("position %s after reopening with a legacy record, want %s kept", got, want)
	}
	var rec string
	if err := mustRaw(t, path).QueryRow(`SELECT value FROM meta WHERE key = 'file'`).Scan(&rec); err != nil {
		t.Fatal(err)
	}
	if rec == legacy {
		t.Errorf("record %q not rewritten with the birth time", rec)
	}
}
