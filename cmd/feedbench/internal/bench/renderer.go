package bench

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/codemojex/feed/internal/proc"
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
	LogDir       string   // its stderr goes to LogDir/renderer-CONSUMER.log
	Extra        []string // more flags, appended
}

// Renderer is a real renderer process started by the benchmark.
type Renderer struct {
	Args RendererArgs
	Addr string // host:port of its HTTP server

	bin      string
	proc     *proc.Process
	log      *os.File
	logStart int64 // the log's size when the process was last started
	rebinds  int   // restarts on another address (see WaitReady)
}

// StartRenderer starts bin with args on a free loopback port; it does not
// wait for it to be ready (see WaitReady).
func StartRenderer(bin string, args RendererArgs) (*Renderer, error) {
	if args.Group == "" {
		args.Group = "feed"
	}
	addr, err := proc.FreeAddr()
	if err != nil {
		return nil, err
	}
	r := &Renderer{Args: args, bin: bin, Addr: addr}
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
	argv = append(argv, a.Extra...)
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
	if fi, err := r.log.Stat(); err == nil {
		r.logStart = fi.Size()
	}
	cmd := exec.Command(r.bin, argv...)
	cmd.Stdout, cmd.Stderr = r.log, r.log
	p, err := proc.Start(cmd)
	if err != nil {
		return fmt.Errorf("bench: start renderer %s: %w", a.Consumer, err)
	}
	fmt.Fprintf(r.log, "=== feedbench: started %s %s (pid %d)\n", r.bin, strings.Join(argv, " "), p.Pid())
	r.proc = p
	return nil
}

// Pid is the process id of the running process.
func (r *Renderer) Pid() int { return r.proc.Pid() }

// URL is its HTTP base URL.
func (r *Renderer) URL() string { return "http://" + r.Addr }

// Exited reports whether the process has exited.
func (r *Renderer) Exited() bool { return r.proc.Exited() }

// maxRebinds bounds WaitReady's restarts on another address.
const maxRebinds = 5

// WaitReady polls /readyz until it answers 200.
//
// A free port can be taken between FreeAddr's probe and the renderer's
// bind (another listener, an outgoing connection's local port): a renderer
// that exited saying so is started again on another free address, up to
// maxRebinds times, rather than failing a run of many minutes.
func (r *Renderer) WaitReady(ctx context.Context, timeout time.Duration) error {
	c := &http.Client{Timeout: time.Second}
	_, err := proc.Poll(ctx, timeout, "renderer "+r.Args.Consumer+" ready", func() (bool, error) {
		resp, err := c.Get(r.URL() + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return true, nil
			}
		}
		if r.Exited() {
			if r.rebinds < maxRebinds && r.addrTaken() {
				r.rebinds++
				addr, err := proc.FreeAddr()
				if err != nil {
					return false, err
				}
				fmt.Fprintf(r.log, "=== feedbench: %s was taken; starting again on %s\n", r.Addr, addr)
				r.Addr = addr
				return false, r.Start()
			}
			return false, fmt.Errorf("bench: renderer %s exited (see %s)", r.Args.Consumer, r.log.Name())
		}
		return false, nil
	})
	return err
}

// addrTaken reports whether the log of the process's last start says its
// address was in use.
func (r *Renderer) addrTaken() bool {
	b, err := os.ReadFile(r.log.Name())
	if err != nil || int64(len(b)) < r.logStart {
		return false
	}
	return strings.Contains(string(b[r.logStart:]), "address already in use")
}

// Signal sends sig to the process.
func (r *Renderer) Signal(sig syscall.Signal) error { return r.proc.Signal(sig) }

// Kill SIGKILLs the process and waits for it.
func (r *Renderer) Kill() {
	if r.proc == nil {
		return
	}
	r.proc.Kill()
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
