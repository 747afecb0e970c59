// Package proc starts the child processes that feedbench and the test kits
// run (redis-server, the renderer, helpers), finds them free ports and
// polls until they are ready. It imports no testing package, so binaries
// may link it; internal/testkit wraps it for tests.
package proc

import (
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
)

// Process is a started child process.
type Process struct {
	cmd    *exec.Cmd
	exited chan struct{}

	mu  sync.Mutex
	err error // cmd.Wait's result, once exited is closed
}

// Start starts cmd in its own process group, so that a Ctrl-C of the
// parent is not delivered twice, and on Linux with SIGKILL as its
// parent-death signal, so that a killed parent does not leave it running.
func Start(cmd *exec.Cmd) (*Process, error) {
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("proc: start %s: %w", cmd.Path, err)
	}
	p := &Process{cmd: cmd, exited: make(chan struct{})}
	go func() {
		err := cmd.Wait()
		p.mu.Lock()
		p.err = err
		p.mu.Unlock()
		close(p.exited)
	}()
	return p, nil
}

// Pid returns the process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Signal sends sig to the process.
func (p *Process) Signal(sig syscall.Signal) error { return p.cmd.Process.Signal(sig) }

// Done is closed when the process has exited.
func (p *Process) Done() <-chan struct{} { return p.exited }

// Exited reports whether the process has exited.
func (p *Process) Exited() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// Err returns the process's exit error once it has exited (nil for exit
// status 0, and nil while it runs).
func (p *Process) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// Kill sends SIGKILL and waits for the process to exit.
func (p *Process) Kill() {
	_ = p.cmd.Process.Kill()
	<-p.exited
}

// FreePort returns a loopback port that was free a moment ago; a caller
// that loses it to another process between probe and bind retries.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("proc: free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// FreeAddr is FreePort as a 127.0.0.1:PORT address.
func FreeAddr() (string, error) {
	port, err := FreePort()
	if err != nil {
		return "", err
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), nil
}
