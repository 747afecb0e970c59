package store_test

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codemojex/feed/internal/testkit/tmpfs"
	"github.com/codemojex/feed/store"
)

// lockedBuffer is a bytes.Buffer for a logger that goroutines share.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestCheckpointOnFullDisk: the disk fills while the WAL has room for the
// next batches but the main file has none for the pages they add, so the
// batches commit and the background checkpoint, which must grow the main
// file, fails instead. The committed lines stay readable (from the WAL),
// the checkpointer retries on its tick and says so in one WARN (not one a
// try), and once space returns it catches up, says so in one INFO, and
// every line is in a sound file, once.
func TestCheckpointOnFullDisk(t *testing.T) {
	tmpfs.Require(t)
	ctx := context.Background()
	dir := tmpfs.MustMount(t, "32m")
	path := filepath.Join(dir, "feed.db")
	logs := &lockedBuffer{}
	db, err := store.OpenWith(ctx, path, store.Options{Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()

	// One large transaction makes a WAL far larger than the batches after
	// it; once it is checkpointed whole, the next commits reuse its space
	// from the start and need no more disk.
	first := genGames(t, 21, 12)
	mustUpsert(t, db, first)
	raw := mustRaw(t, path)
	waitFor(t, 10*time.Second, func() bool {
		var busy, frames, done int64
		err := raw.QueryRow(`PRAGMA wal_checkpoint(PASSIVE)`).Scan(&busy, &frames, &done)
		return err == nil && frames > 0 && done == frames
	})
	wal, err := os.Stat(path + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	main, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("main file %d bytes, WAL %d bytes", main.Size(), wal.Size())

	filler := tmpfs.MustFill(t, dir)
	// Lines of new games: their pages lie past the main file's end.
	more := genGames(t, 22, 2)
	mustUpsert(t, db, more)
	waitFor(t, 10*time.Second, func() bool { return strings.Contains(logs.String(), "store checkpoint failed") })
	if n, err := db.Count(ctx); err != nil || n != int64(len(first)+len(more)) {
		t.Fatalf("Count while checkpoints fail = %d, %v; want %d", n, err, len(first)+len(more))
	}
	// The checkpointer retries on its tick (200 ms) and logs the first
	// failure, then one in a hundred.
	tick := time.NewTicker(100 * time.Millisecond)
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); <-tick.C {
	}
	tick.Stop()
	if n := strings.Count(logs.String(), "store checkpoint failed"); n != 1 {
		t.Errorf("%d checkpoint failure lines in 2 s, want 1:\n%s", n, logs.String())
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, func() bool { return strings.Contains(logs.String(), "store checkpoint recovered") })
	if n := strings.Count(logs.String(), "store checkpoint recovered"); n != 1 {
		t.Errorf("%d recovery lines, want 1:\n%s", n, logs.String())
	}
	waitFor(t, 10*time.Second, func() bool {
		var busy, frames, done int64
		err := raw.QueryRow(`PRAGMA wal_checkpoint(PASSIVE)`).Scan(&busy, &frames, &done)
		return err == nil && done == frames
	})
	raw.Close()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	again := MustOpen(t, path)
	var ok string
	if err := mustRaw(t, path).QueryRow(`PRAGMA integrity_check`).Scan(&ok); err != nil || ok != "ok" {
		t.Fatalf("integrity_check: %q, %v", ok, err)
	}
	if n, err := again.Count(ctx); err != nil || n != int64(len(first)+len(more)) {
		t.Fatalf("Count after = %d, %v; want %d", n, err, len(first)+len(more))
	}
}
