package web

import (
	"net"
	"time"

	"golang.org/x/sys/unix"
)

// setPeerTimeout sets TCP_USER_TIMEOUT: how long written data may stay
// unacknowledged before the kernel aborts the connection (tcp(7)).
func setPeerTimeout(c *net.TCPConn, d time.Duration) error {
	rc, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT, int(d.Milliseconds()))
	}); err != nil {
		return err
	}
	return serr
}
