package store

import (
	"errors"
	"fmt"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// fsNote says why the filesystem under the store cannot take it, when it
// cannot: it is full (no block or no inode left) or mounted read-only.
// SQLite's own words for these at open are another fault's ("disk I/O
// error (4874)": the -shm could not be made; "unable to open database
// file (14)": the -wal could not be), which sent an operator looking at
// the file rather than at the disk. "" when it finds neither.
func fsNote(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return ""
	}
	dir := filepath.Dir(abs)
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return ""
	}
	switch {
	case st.Flags&unix.ST_RDONLY != 0:
		return fmt.Sprintf("%s is on a read-only filesystem: SQLite makes the store's -wal and -shm beside it", dir)
	case st.Bavail == 0:
		return fmt.Sprintf("the filesystem of %s is full (no space left on device)", dir)
	case st.Files > 0 && st.Ffree == 0:
		return fmt.Sprintf("the filesystem of %s has no inode left (no space left on device)", dir)
	}
	return ""
}

// explainOpen adds fsNote to an error of opening the store that the
// filesystem may explain (SQLite's full, I/O, unopenable, read-only).
func explainOpen(path string, err error) error {
	if err == nil || errors.Is(err, ErrNotStore) || errors.Is(err, ErrSchemaNewer) || errors.Is(err, ErrSchemaOlder) {
		return err
	}
	if note := fsNote(path); note != "" {
		return fmt.Errorf("%w; %s", err, note)
	}
	return err
}
