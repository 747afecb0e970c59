package store_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codemojex/feed/store"
)

// TestOpenDanglingLinkToMissingDirectory: the path is a symbolic link whose
// target's directory does not exist (a volume not mounted, a directory not
// made yet). Open made the link's own directory only, and failed with
// SQLite's "unable to open database file (14)", which named neither the
// link nor the missing directory. It now says the link's target directory
// does not exist, and makes nothing there.
func TestOpenDanglingLinkToMissingDirectory(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "volume", "data")
	link := filepath.Join(dir, "feed.db")
	if err := os.Symlink(filepath.Join(missing, "feed.db"), link); err != nil {
		t.Fatal(err)
	}
	db, err := store.OpenWith(context.Background(), link, store.Options{Logger: quiet})
	if err == nil {
		db.Close()
		t.Fatal("Open of a link to a missing directory succeeded")
	}
	for _, want := range []string{link, missing, "does not exist"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Errorf("the target directory: %v, want it still missing", err)
	}
}
