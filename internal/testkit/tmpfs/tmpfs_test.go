package tmpfs_test

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/codemojex/feed/internal/testkit/tmpfs"
)

// TestMountFillResize: a mounted tmpfs fills at its size, and Resize gives
// it room again, as the full-disk faults use it.
func TestMountFillResize(t *testing.T) {
	tmpfs.Require(t)
	dir := tmpfs.MustMount(t, "1m")
	f, err := os.Create(filepath.Join(dir, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	written := 0
	for {
		n, err := f.Write(buf)
		written += n
		if err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("write: %v", err)
			}
			break
		}
		if written > 4<<20 {
			t.Fatalf("wrote %d bytes to a 1 MiB tmpfs", written)
		}
	}
	if err := tmpfs.Resize(dir, "2m"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(buf); err != nil {
		t.Fatalf("write after Resize: %v", err)
	}
}
