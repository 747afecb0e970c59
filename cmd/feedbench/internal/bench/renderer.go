package bench

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// RendererArgs are the flags of one renderer process.
type RendererArgs struct {
	RedisURL     string
	DB           string
	Consumer     string
	Group        string        // default "feed"
	MinIdle      time.Duration // 0: the renderer's default
	ClaimEvery   time.Duration
	GamesRefresh time.Duration
	LogDir       string // its stderr goes to LogDir/renderer-CONSUMER.log
}

// Renderer is a real renderer process started by the benchmark.
type Renderer struct {
	Args RendererArgs
	Addr string // host:port of its HTTP server

	bin    string
	cmd    *exec.Cmd
	exited chan struct{}
	log    *os.File
}

// StartRenderer starts bin with args on a free loopback port; it does not
// wait for it to be ready (see WaitReady).
func StartRenderer(bin string, args RendererArgs) (*Renderer, error) {
	if args.Group == "" {
		args.Group = "feed"
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	r := &Renderer{Args: args, bin: bin, Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port))}
	return r, r.Start()
}

// Start starts the process (again, after Kill), with the same flags.
func (r *Renderer) Start() error {
	a := r.Args
	argv := []string{"-redis", a.RedisURL, "-db", a.DB, "-http", r.Addr, "-group", a.Group,
		"-consumer", a.Consumer, "-log-level", "warn"}
	if a.MinIdle > 0 {
		argv = append(argv, "-min-idle", a.MinIdle.String())
	}
	if a.ClaimEvery > 0 {
		argv = append(argv, "-claim-every", a.ClaimEvery.String())
	}
	if a.GamesRefresh > 0 {
		argv = append(argv, "-games-refresh", a.GamesRefresh.String())
	}
	if r.log == nil {
		dir := a.LogDir
		if dir == "" {
			dir = os.TempDir()
		}
		f, err := os.OpenFile(filepath.Join(dir, "renderer-"+a.Consumer+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return err
		}
		r.log = f
	}
	cmd := exec.Command(r.bin, argv...)
	cmd.Stdout, cmd.Stderr = r.log, r.log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("bench: start renderer %s: %w", a.Consumer, err)
	}
	fmt.Fprintf(r.log, "=== feedbench: started %s %s (pid %d)\n", r.bin, strings.Join(argv, " "), cmd.Process.Pid)
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	r.cmd, r.exited = cmd, exited
	return nil
}

// Pid is the process id of the running process.
func (r *Renderer) Pid() int { return r.cmd.Process.Pid }

// URL is its HTTP base URL.
func (r *Renderer) URL() string { return "http://" + r.Addr }

// Exited reports whether the process has exited.
func (r *Renderer) Exited() bool {
	select {
	case <-r.exited:
		return true
	default:
		return false
	}
}

// WaitReady polls /readyz until it answers 200.
func (r *Renderer) WaitReady(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	c := &http.Client{Timeout: time.Second}
	for {
		resp, err := c.Get(r.URL() + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if r.Exited() {
			return fmt.Errorf("bench: renderer %s exited (see %s)", r.Args.Consumer, r.log.Name())
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("bench: renderer %s not ready within %v: %v", r.Args.Consumer, timeout, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// Signal sends sig to the process.
func (r *Renderer) Signal(sig syscall.Signal) error { return r.cmd.Process.Signal(sig) }

// Kill SIGKILLs the process and waits for it.
func (r *Renderer) Kill() {
	if r.cmd == nil {
		return
	}
	_ = r.cmd.Process.Kill()
	<-r.exited
}

// Stop SIGKILLs the process and closes its log.
func (r *Renderer) Stop() {
	r.Kill()
	if r.log != nil {
		r.log.Close()
	}
}

// RSS returns the process's resident set size in bytes (VmRSS).
func RSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(v)
			if len(f) >= 1 {
				kb, err := strconv.ParseInt(f[0], 10, 64)
				return kb << 10, err
			}
		}
	}
	return 0, fmt.Errorf("bench: no VmRSS in /proc/%d/status", pid)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("bench: free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
