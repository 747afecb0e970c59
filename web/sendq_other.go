//go:build !linux

package web

import "syscall"

// kernelUnsent is unknown here: what the kernel holds counts as moving
// only when the process's own writes do.
func kernelUnsent(syscall.RawConn) (int64, bool) { return 0, false }
