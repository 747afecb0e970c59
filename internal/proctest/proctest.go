// Package proctest builds the project's binaries once per test process and
// runs them as real child processes that tests can SIGKILL, SIGTERM and
// restart.
package proctest

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/codemojex/feed/internal/wait"
)

var (
	buildOnce sync.Once
	buildDir  string
	buildErr  error
)

// Binaries builds every command under cmd/ once per test process and
// returns the directory that holds them. They are built without -race: the
// unit tests run with it, and the crash tests want real-speed processes.
func Binaries(tb testing.TB) string {
	tb.Helper()
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "codemojex-bin-")
		if buildErr != nil {
			return
		}
		cmd := exec.Command("go", "build", "-o", buildDir+string(os.PathSeparator), "./cmd/...")
		cmd.Dir = moduleRoot()
		out, err := cmd.CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("proctest: go build ./cmd/...: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		tb.Fatal(buildErr)
	}
	return buildDir
}

// Cleanup removes the built binaries; call it from TestMain after m.Run.
func Cleanup() {
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
}

func moduleRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// Proc is a running child process whose output is kept for the test log.
type Proc struct {
	Name string
	Path string
	Args []string
	Env  []string

	mu     sync.Mutex
	out    bytes.Buffer
	cmd    *exec.Cmd
	exited chan struct{}
	err    error
}

// Start starts bin (a name from Binaries, or a path) with args; the process
// is SIGKILLed when the test ends, and its output is logged if the test
// failed.
func Start(tb testing.TB, name, bin string, args []string, env ...string) *Proc {
	tb.Helper()
	if !filepath.IsAbs(bin) {
		bin = filepath.Join(Binaries(tb), bin)
	}
	p := &Proc{Name: name, Path: bin, Args: args, Env: env}
	if err := p.start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		p.Kill()
		if tb.Failed() {
			tb.Logf("--- output of %s (last 6000 bytes):\n%s", p.Name, tailString(p.Output(), 6000))
		}
	})
	return p
}

func (p *Proc) start() error {
	cmd := exec.Command(p.Path, p.Args...)
	cmd.Env = append(os.Environ(), p.Env...)
	w := &lockedWriter{p: p}
	cmd.Stdout, cmd.Stderr = w, w
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("proctest: start %s: %w", p.Name, err)
	}
	exited := make(chan struct{})
	p.mu.Lock()
	p.cmd, p.exited, p.err = cmd, exited, nil
	fmt.Fprintf(&p.out, "=== start %s %v (pid %d)\n", p.Path, p.Args, cmd.Process.Pid)
	p.mu.Unlock()
	go func() {
		err := cmd.Wait()
		p.mu.Lock()
		p.err = err
		p.mu.Unlock()
		close(exited)
	}()
	return nil
}

// Restart starts the process again with the same arguments (after Kill or
// Term).
func (p *Proc) Restart(tb testing.TB) {
	tb.Helper()
	p.Kill()
	if err := p.start(); err != nil {
		tb.Fatal(err)
	}
}

// Kill sends SIGKILL and waits for the process to exit.
func (p *Proc) Kill() { p.signalWait(syscall.SIGKILL, 0) }

// Term sends SIGTERM and waits up to timeout for a graceful exit, then
// SIGKILLs. It returns the process's exit error (nil for exit status 0).
func (p *Proc) Term(timeout time.Duration) error {
	return p.signalWait(syscall.SIGTERM, timeout)
}

func (p *Proc) signalWait(sig syscall.Signal, timeout time.Duration) error {
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	p.mu.Unlock()
	if cmd == nil {
		return nil
	}
	_ = cmd.Process.Signal(sig)
	if timeout > 0 {
		select {
		case <-exited:
		case <-time.After(timeout):
			_ = cmd.Process.Kill()
			<-exited
			return fmt.Errorf("proctest: %s did not exit within %v of %v", p.Name, timeout, sig)
		}
	} else {
		<-exited
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(&p.out, "=== %s after %v: %v\n", p.Name, sig, p.err)
	return p.err
}

// Wait waits for the process to exit by itself and returns its error.
func (p *Proc) Wait(ctx context.Context) error {
	p.mu.Lock()
	exited := p.exited
	p.mu.Unlock()
	select {
	case <-exited:
	case <-ctx.Done():
		return ctx.Err()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// Exited reports whether the process has exited.
func (p *Proc) Exited() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// Output returns everything the process wrote so far, over all its starts.
func (p *Proc) Output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

type lockedWriter struct{ p *Proc }

func (w *lockedWriter) Write(b []byte) (int, error) {
	w.p.mu.Lock()
	defer w.p.mu.Unlock()
	// Keep memory bounded on long runs: the tail is what a failure needs.
	if w.p.out.Len() > 4<<20 {
		tail := append([]byte(nil), w.p.out.Bytes()[w.p.out.Len()-1<<20:]...)
		w.p.out.Reset()
		w.p.out.Write(tail)
	}
	return w.p.out.Write(b)
}

func tailString(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// FreeAddr returns a free 127.0.0.1 address for a child to listen on.
func FreeAddr(tb testing.TB) string {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer l.Close()
	return "127.0.0.1:" + strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

// WaitHTTP waits until GET url answers with status want.
func WaitHTTP(tb testing.TB, url string, want int, timeout time.Duration) {
	tb.Helper()
	WaitFor(tb, timeout, func() bool {
		resp, err := http.Get(url)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == want
	}, "GET %s to answer %d", url, want)
}

// WaitFor polls cond until it holds or timeout passes, then fails the test
// with the description.
func WaitFor(tb testing.TB, timeout time.Duration, cond func() bool, format string, args ...any) {
	tb.Helper()
	wait.Until(tb, timeout, cond, func() string { return fmt.Sprintf(format, args...) })
}
