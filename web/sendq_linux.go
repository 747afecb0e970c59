package web

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// kernelUnsent is what the kernel holds of a socket's written bytes: not
// yet sent, or sent and not yet acknowledged by the peer (SIOCOUTQ).
func kernelUnsent(rc syscall.RawConn) (int64, bool) {
	var n int
	var err error
	if cerr := rc.Control(func(fd uintptr) { n, err = unix.IoctlGetInt(int(fd), unix.SIOCOUTQ) }); cerr != nil || err != nil {
		return 0, false
	}
	return int64(n), true
}
