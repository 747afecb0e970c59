package store_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/codemojex/feed/internal/testkit/storefile"
	"github.com/codemojex/feed/internal/testkit/wait"
)

// TestMigrationKilledMidway: a renderer SIGKILLed in the middle of a
// migration (0003 rebuilding a large lines table, its pages already
// spilling into the WAL, nothing committed) leaves the file at the old
// version, as the old release left it and sound, so that release opens
// it again; the next Open migrates it whole.
func TestMigrationKilledMidway(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	ref := filepath.Join(dir, "ref.db")
	storefile.AtSchema(t, ref, 2, nil)
	const lines = 6000 // about 21 MB of lines: more than the writer's page cache (16 MiB) holds
	for attempt := 1; ; attempt++ {
		path := filepath.Join(dir, fmt.Sprintf("feed%d.db", attempt))
		var oldID string
		storefile.AtSchema(t, path, 2, func(exec storefile.Exec) {
			exec(`INSERT INTO games (name) VALUES ('g0'), ('g1'), ('g2')`)
			exec(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
				INSERT INTO events (evt_id, game, kind, payload, html, stored_at)
				SELECT printf('evt_01JD%022d', i), 'g' || (i % 3), 'chat', '{}', zeroblob(3500), 1 FROM n`, lines)
		})
		if err := mustRaw(t, path).QueryRow(`SELECT value FROM meta WHERE key = 'store_id'`).Scan(&oldID); err != nil {
			t.Fatal(err)
		}

		children, release := startChildren(t, 1, "open", path)
		c := children[0]
		release()
		// Stopped while the WAL holds frames and no commit, the child
		// cannot commit before it is killed.
		var frames, commits int
		exited := make(chan struct{})
		go func() { c.cmd.Wait(); close(exited) }()
		caught := false
		wait.For(t, 2*time.Minute, "the migration to spill into the WAL, or the child to end", func() bool {
			select {
			case <-exited:
				return true
			default:
			}
			if fi, err := os.Stat(path + "-wal"); err != nil || fi.Size() == 0 {
				return false
			}
			if err := c.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
				return true
			}
			switch frames, commits = walFrames(t, path+"-wal"); {
			case commits > 0:
				return true // too late
			case frames > 0:
				caught = true
				return true
			}
			// The WAL's header alone: not yet in the migration's pages.
			c.cmd.Process.Signal(syscall.SIGCONT)
			return false
		})
		c.cmd.Process.Signal(syscall.SIGKILL)
		<-exited
		if !caught {
			if attempt == 3 {
				t.Fatalf("the migration committed before it was seen mid-way, %d times", attempt)
			}
			continue
		}
		if frames, commits = walFrames(t, path+"-wal"); frames == 0 || commits != 0 {
			t.Fatalf("after the kill the WAL has %d frames, %d commits; want frames of no commit", frames, commits)
		}

		if got, want := schemaOf(t, path), schemaOf(t, ref); got != want {
			t.Errorf("schema after the kill:\n%s\nwant the old release's:\n%s", got, want)
		}
		raw := mustRaw(t, path)
		top, n, ok := levelOf(t, raw)
		if top != 2 || n != lines || ok != "ok" {
			t.Errorf("after the kill: version %d, %d lines, integrity %q; want 2, %d, ok", top, n, ok, lines)
		}
		raw.Close()

		db := MustOpen(t, path)
		if id, err := db.ID(ctx); err != nil || id != oldID {
			t.Errorf("store id %q (%v) after the migration, want %q", id, err, oldID)
		}
		if hs, err := db.HighSeq(ctx); err != nil || hs != lines {
			t.Errorf("HighSeq %d (%v), want %d", hs, err, lines)
		}
		var cnt int
		if err := mustRaw(t, path).QueryRow(`SELECT count(*) FROM events WHERE seq BETWEEN 1 AND ?`, lines).Scan(&cnt); err != nil || cnt != lines {
			t.Errorf("%d lines (%v) with their seqs after the migration, want %d", cnt, err, lines)
		}
		return
	}
}

// walFrames counts the frames of the WAL at path that belong to its
// current generation (their salts are the header's), and those among them
// that end a commit. A missing or empty WAL has none.
func walFrames(t *testing.T, path string) (frames, commits int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, 0
	}
	if err != nil {
		t.Fatal(err)
	}
	const header, frameHeader = 32, 24
	if len(b) < header {
		return 0, 0
	}
	pageSize := int(binary.BigEndian.Uint32(b[8:12]))
	salts := b[16:24]
	for off := header; off+frameHeader+pageSize <= len(b); off += frameHeader + pageSize {
		f := b[off : off+frameHeader]
		if !bytes.Equal(f[8:16], salts) {
			break
		}
		frames++
		if binary.BigEndian.Uint32(f[4:8]) != 0 {
			commits++
		}
	}
	return frames, commits
}
