//go:build !linux

package store

import (
	"fmt"
	"os"
	"syscall"
)

// statID returns the identity of the file at path: its device and inode
// (no birth time here).
func statID(path string) (fileID, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return fileID{}, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, fmt.Errorf("no device and inode for %s", path)
	}
	return fileID{dev: uint64(st.Dev), ino: uint64(st.Ino)}, nil //nolint:unconvert // widths differ by platform
}
