package proc

import "syscall"

// sysProcAttr puts a child in its own process group, so that a Ctrl-C of
// the parent is not delivered twice, and gives it SIGKILL as its
// parent-death signal, so that a killed parent does not leave it running.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
