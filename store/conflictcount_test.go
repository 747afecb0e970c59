package store_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/internal/testkit/tmpfs"
	"github.com/codemojex/feed/store"
)

// TestConflictCountedOnce: codemojex_store_conflicts_total counts a
// conflicting entry once, when its batch commits. It counted every attempt
// that found it: a batch refused by a full disk at its commit is tried
// again every few seconds for as long as the disk stays full, and each try
// added the conflict again, so the counter ran away from
// codemojex_feed_dead_total{reason="conflict"}.
func TestConflictCountedOnce(t *testing.T) {
	tmpfs.Require(t)
	dir := tmpfs.MustMount(t, "16m")
	ctx := context.Background()
	db := MustOpen(t, filepath.Join(dir, "feed.db"))
	at := time.Now()
	m := event.NewMinter(1)
	id := m.Next(at)
	mustUpsert(t, db, []store.Event{mkEvent(t, id, "cc", "chat", at, "player", "ada", "text", "first")})

	// The batch: the conflict, and enough new lines that its commit needs
	// space the WAL does not have.
	batch := []store.Event{mkEvent(t, id, "cc", "chat", at, "player", "ada", "text", "forged")}
	for range 40 {
		batch = append(batch, mkEvent(t, m.Next(at), "cc", "chat", at, "player", "bob", "text", strings.Repeat("é", 10000)))
	}
	filler := tmpfs.MustFill(t, dir)
	before := store.Conflicts()
	for try := range 3 {
		if _, err := db.Upsert(ctx, batch); !store.Unavailable(err) {
			t.Fatalf("try %d on a full disk: %v, want the store unavailable", try, err)
		}
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	res, err := db.Upsert(ctx, batch)
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(res[0].Err, store.ErrConflict) {
		t.Fatalf("the forged line: %+v, want ErrConflict", res[0])
	}
	if got := store.Conflicts() - before; got != 1 {
		t.Errorf("codemojex_store_conflicts_total rose by %v for one conflicting entry, want 1", got)
	}
}
