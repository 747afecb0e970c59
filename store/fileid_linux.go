package store

import (
	"os"

	"golang.org/x/sys/unix"
)

// statID returns the identity of the file at path: its device, inode and
// birth time, in one statx.
func statID(path string) (fileID, error) {
	var st unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, path, 0, unix.STATX_INO|unix.STATX_BTIME, &st); err != nil {
		return fileID{}, &os.PathError{Op: "statx", Path: path, Err: err}
	}
	id := fileID{dev: unix.Mkdev(st.Dev_major, st.Dev_minor), ino: st.Ino}
	if st.Mask&unix.STATX_BTIME != 0 {
		id.born = st.Btime.Sec*1e9 + int64(st.Btime.Nsec)
	}
	return id, nil
}
