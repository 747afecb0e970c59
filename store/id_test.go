package store_test

import (
	"context"
	"path/filepath"
	"testing"
)

// TestStoreID: each store file has its own id, kept across reopening, so a
// browser's seq is never taken for another store's.
func TestStoreID(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	a := filepath.Join(dir, "a.db")
	db := MustOpen(t, a)
	id1, err := db.ID(ctx)
	if err != nil || len(id1) != 16 {
		t.Fatalf("ID = %q, %v; want 16 hex digits", id1, err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	again, err := MustOpen(t, a).ID(ctx)
	if err != nil || again != id1 {
		t.Fatalf("after reopen ID = %q, %v; want %q", again, err, id1)
	}
	other, err := MustOpen(t, filepath.Join(dir, "b.db")).ID(ctx)
	if err != nil || other == id1 {
		t.Fatalf("another file's ID = %q, %v; want one of its own", other, err)
	}
}
