package main

import (
	"fmt"
	"syscall"
)

// raiseFileLimit lifts the soft RLIMIT_NOFILE to the hard one. Setting it
// explicitly (rather than relying on the Go runtime's own raise) also makes
// the child processes we start, renderer and clients, inherit it.
func raiseFileLimit() error {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return fmt.Errorf("getrlimit: %w", err)
	}
	l.Cur = l.Max
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return fmt.Errorf("setrlimit NOFILE %d: %w", l.Max, err)
	}
	return nil
}
