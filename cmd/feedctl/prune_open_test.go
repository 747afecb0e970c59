package main

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/internal/testkit/redistest"
	"github.com/codemojex/feed/internal/testkit/tmpfs"
	"github.com/codemojex/feed/store"
)

// TestPruneWriteOpenFailureIsAnError: prune -db F reads its plan from F
// opened read-only and opens F for writing once the removal is confirmed.
// When that open fails (here the disk is full, and F, at schema 3, needs
// migrating), prune must say so and remove nothing. It set its handle to
// the nil DB store.Open returned with the error, and its deferred Close
// then panicked on it: feedctl crashed with a nil pointer dereference.
func TestPruneWriteOpenFailureIsAnError(t *testing.T) {
	tmpfs.Require(t)
	s := redistest.MustStart(t)
	rdb := s.Client(t)
	const game = "old-1"
	old := time.Now().Add(-48 * time.Hour)
	register(t, rdb, game, old)
	dir := tmpfs.MustMount(t, "2m")
	path := filepath.Join(dir, "feed.db")
	schema3Store(t, path, game, old)

	// A reader that stays open (a renderer's, say) keeps the -shm as it is,
	// so the read-only open still works on the full disk.
	raw, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	raw.SetMaxOpenConns(1)
	var n int
	if err := raw.QueryRow(`SELECT count(*) FROM events`).Scan(&n); err != nil || n != 2 {
		t.Fatalf("lines: %d, %v", n, err)
	}
	tmpfs.MustFill(t, dir)

	var out, errOut strings.Builder
	func() {
		defer func() {
			if p := recover(); p != nil {
				t.Fatalf("prune panicked when the store could not be opened for writing: %v\n%s%s", p, &out, &errOut)
			}
		}()
		err = Run(context.Background(), []string{"-redis", "redis://" + s.Addr, "prune", "-older-than", "24h", "-db", path, "-yes"},
			strings.NewReader(""), &out, &errOut)
	}()
	if err == nil || !store.Unavailable(err) {
		t.Fatalf("prune with the store's disk full: %v, want the store's error\n%s%s", err, &out, &errOut)
	}
	if !strings.Contains(out.String(), "remove "+game) || strings.Contains(out.String(), "pruned") {
		t.Errorf("prune output:\n%s", &out)
	}
	if score, err := rdb.ZScore(context.Background(), event.RegistryKey, game).Result(); err != nil || score == 0 {
		t.Errorf("the game left the registry (%v, %v) though its store lines were not removed", score, err)
	}
}
