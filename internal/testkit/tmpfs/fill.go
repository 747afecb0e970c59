package tmpfs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// Fill writes a file named "filler" in dir until dir's filesystem refuses
// another byte (in pieces of 1 MiB, then 64 KiB, then 512 bytes, so not
// even a page is left) and returns its path. Removing that file frees the
// space again. An error other than ENOSPC stops it.
func Fill(dir string) (string, error) {
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		return "", fmt.Errorf("tmpfs: fill %s: %w", dir, err)
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	for _, n := range []int{len(buf), 64 << 10, 512} {
		for {
			if _, err := f.Write(buf[:n]); err != nil {
				if !errors.Is(err, syscall.ENOSPC) {
					return path, fmt.Errorf("tmpfs: fill %s: %w", dir, err)
				}
				break
			}
		}
	}
	return path, nil
}

// MustFill is Fill that fails tb on an error.
func MustFill(tb testing.TB, dir string) string {
	tb.Helper()
	path, err := Fill(dir)
	if err != nil {
		tb.Fatal(err)
	}
	return path
}
