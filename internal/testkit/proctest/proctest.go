// Package proctest builds the project's binaries once per test process and
// runs them as real child processes that tests can SIGKILL, SIGTERM and
// restart.
package proctest

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/codemojex/feed/internal/nbiocheck"
	"github.com/codemojex/feed/internal/proc"
	"github.com/codemojex/feed/internal/testkit/wait"
)

var (
	buildOnce sync.Once
	buildDir  string
	buildErr  error
)

// Binaries builds every command under cmd/ once per test process and
// returns the directory that holds them. They are built without -race: the
// unit tests run with it, and the crash tests want real-speed processes.
// They are built with the nbiocheck tag: nbio's buffers are checked, and a
// misuse is logged (MisuseLine), which fails the test (Start).
func Binaries(tb testing.TB) string {
	tb.Helper()
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "codemojex-bin-")
		if buildErr != nil {
			return
		}
		cmd := exec.Command("go", "build", "-tags", "nbiocheck", "-o", buildDir+string(os.PathSeparator), "./cmd/...")
		cmd.Dir = moduleRoot()
		out, err := cmd.CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("proctest: go build -tags nbiocheck ./cmd/...: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		tb.Fatal(buildErr)
	}
	return buildDir
}

// MisuseLine is the log message of a binary built with the nbiocheck tag
// when nbio's buffers are misused (web/nbiocheck.go).
const MisuseLine = nbiocheck.LogMessage

// Cleanup removes the built binaries; call it from TestMain after m.Run.
func Cleanup() {
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
}

func moduleRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

// Proc is a running child process whose output is kept for the test log.
type Proc struct {
	Name string
	Path string
	Args []string
	Env  []string

	mu      sync.Mutex
	out     bytes.Buffer
	misused string // the first MisuseLine logged, and what follows it
	proc    *proc.Process
}

func (p *Proc) misuse() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.misused
}

// Start starts bin (a name from Binaries, or a path) with args; the process
// is SIGKILLed when the test ends, its output is logged if the test failed,
// and the test fails if the process logged MisuseLine.
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
		if m := p.misuse(); m != "" {
			tb.Errorf("%s misused nbio's buffers:\n%s", p.Name, m)
		}
		if tb.Failed() {
			tb.Logf("--- output of %s (last 6000 bytes):\n%s", p.Name, tailString(p.Output(), 6000))
		}
	})
	return p
}

// Pid returns the process id of the running process (0 when none).
func (p *Proc) Pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.proc == nil {
		return 0
	}
	return p.proc.Pid()
}

func (p *Proc) start() error {
	cmd := exec.Command(p.Path, p.Args...)
	cmd.Env = append(os.Environ(), p.Env...)
	w := &lockedWriter{p: p}
	cmd.Stdout, cmd.Stderr = w, w
	// Under p.mu, so that the output cannot be written before the start line.
	p.mu.Lock()
	defer p.mu.Unlock()
	pr, err := proc.Start(cmd)
	if err != nil {
		return fmt.Errorf("proctest: start %s: %w", p.Name, err)
	}
	p.proc = pr
	fmt.Fprintf(&p.out, "=== start %s %v (pid %d)\n", p.Path, p.Args, pr.Pid())
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
	pr := p.proc
	p.mu.Unlock()
	if pr == nil {
		return nil
	}
	_ = pr.Signal(sig)
	if timeout > 0 {
		select {
		case <-pr.Done():
		case <-time.After(timeout):
			pr.Kill()
			return fmt.Errorf("proctest: %s did not exit within %v of %v", p.Name, timeout, sig)
		}
	} else {
		<-pr.Done()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(&p.out, "=== %s after %v: %v\n", p.Name, sig, pr.Err())
	return pr.Err()
}

// Wait waits for the process to exit by itself and returns its error.
func (p *Proc) Wait(ctx context.Context) error {
	p.mu.Lock()
	pr := p.proc
	p.mu.Unlock()
	select {
	case <-pr.Done():
	case <-ctx.Done():
		return ctx.Err()
	}
	return pr.Err()
}

// Exited reports whether the process has exited.
func (p *Proc) Exited() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.proc.Exited()
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
	// The first misuse is kept apart: the output's tail may lose it. A
	// log record comes in one write.
	if i := bytes.Index(b, []byte(MisuseLine)); i >= 0 && w.p.misused == "" {
		w.p.misused = string(b[i:min(len(b), i+6000)])
	}
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

// FreeAddr returns a free 127.0.0.1 address for a child to listen on,
// reserved for the test until it ends (proc.ReserveAddr): no other test's
// server takes it while a child killed there is down, where this test's
// browser and clients would reach that server instead, and Restart finds
// the address free.
func FreeAddr(tb testing.TB) string {
	tb.Helper()
	addr, release, err := proc.ReserveAddr()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(release)
	return addr
}

// StartHTTP starts bin as Start does, listening on a free address that
// args puts in its flags, and waits until GET http://ADDR+path answers
// want. A free address can be taken between the probe and the child's bind
// (by any process's listener or outgoing connection); a child that exits
// saying so is started again on another address, up to five times. It
// returns the process and its address.
func StartHTTP(tb testing.TB, name, bin string, path string, want int, timeout time.Duration, args func(addr string) []string, env ...string) (*Proc, string) {
	tb.Helper()
	for try := 1; ; try++ {
		addr := FreeAddr(tb)
		p := Start(tb, name, bin, args(addr), env...)
		url := "http://" + addr + path
		WaitFor(tb, timeout, func() bool { return p.Exited() || httpStatus(url) == want }, "GET %s to answer %d", url, want)
		if !p.Exited() {
			return p, addr
		}
		if try == 5 || !strings.Contains(p.Output(), "address already in use") {
			tb.Fatalf("%s exited before it served:\n%s", name, tailString(p.Output(), 6000))
		}
		tb.Logf("%s: %s was taken before it bound it; another address", name, addr)
	}
}

// probeClient bounds each probe: whatever else holds the port may accept
// and never answer.
var probeClient = &http.Client{Timeout: 2 * time.Second}

func httpStatus(url string) int {
	resp, err := probeClient.Get(url)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// WaitHTTP waits until GET url answers with status want.
func WaitHTTP(tb testing.TB, url string, want int, timeout time.Duration) {
	tb.Helper()
	WaitFor(tb, timeout, func() bool { return httpStatus(url) == want }, "GET %s to answer %d", url, want)
}

// WaitFor polls cond until it holds or timeout passes, then fails the test
// with the description.
func WaitFor(tb testing.TB, timeout time.Duration, cond func() bool, format string, args ...any) {
	tb.Helper()
	wait.Until(tb, timeout, cond, func() string { return fmt.Sprintf(format, args...) })
}
