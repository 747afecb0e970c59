//go:build unix && !linux

package proc

import "syscall"

// sysProcAttr puts a child in its own process group, so that a Ctrl-C of
// the parent is not delivered twice. Only Linux has a parent-death signal:
// elsewhere a parent killed with SIGKILL leaves its children running (the
// test kits' cleanups still stop them on every other exit).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
