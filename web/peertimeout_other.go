//go:build !linux

package web

import (
	"errors"
	"net"
	"time"
)

// setPeerTimeout is Linux's TCP_USER_TIMEOUT; elsewhere vanished peers
// are left to the kernel's retransmission limit.
func setPeerTimeout(*net.TCPConn, time.Duration) error {
	return errors.New("TCP_USER_TIMEOUT is Linux's")
}
