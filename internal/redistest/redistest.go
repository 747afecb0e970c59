// Package redistest starts real redis-server (or valkey-server) processes
// for tests, each on a free port with its data in a temporary directory. It
// never touches a server it did not start.
package redistest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Options configure a Server.
type Options struct {
	// AOF turns on the append-only file (appendfsync always), so a SIGKILL
	// loses nothing that was acknowledged.
	AOF bool
	// MaxClients raises redis-server's client limit (its default is
	// 10,000), for benchmarks with many connections.
	MaxClients int
	// Cluster starts the server as a Redis Cluster node (see StartCluster);
	// its cluster bus listens on Port+10000.
	Cluster bool
	// NodeTimeout is a cluster node's cluster-node-timeout: how long a node
	// may not answer before its replica takes over (default 2s).
	NodeTimeout time.Duration
}

// Server is a redis-server process owned by a test.
type Server struct {
	Addr string // host:port
	Port int
	Dir  string // data directory, kept across restarts

	bin  string
	opts Options

	mu     sync.Mutex
	proc   *os.Process
	exited chan error // receives once when proc exits
}

// ServerEnv names the environment variable that chooses the server the
// tests start: "redis-server" or "valkey-server" (a name on PATH or a path).
// Unset, the tests take redis-server, else valkey-server. CI runs the suite
// once with each.
const ServerEnv = "CODEMOJEX_REDIS_SERVER"

// Binary returns the path of the server binary the tests start (see
// ServerEnv), or an error that names the package to install.
func Binary() (string, error) {
	if want := os.Getenv(ServerEnv); want != "" {
		p, err := exec.LookPath(want)
		if err != nil {
			return "", fmt.Errorf("redistest: $%s=%s: %w (apt-get install -y redis-server, or valkey-server from bookworm-backports)", ServerEnv, want, err)
		}
		return p, nil
	}
	for _, name := range []string{"redis-server", "valkey-server"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("redistest: neither redis-server nor valkey-server is on PATH: install Debian's package (apt-get install -y redis-server)")
}

// CLI returns the path of the command-line client that goes with the server
// binary bin: valkey-cli for valkey-server, redis-cli for redis-server,
// else whichever of the two is installed.
func CLI(bin string) (string, error) {
	names := []string{"redis-cli", "valkey-cli"}
	if strings.Contains(filepath.Base(bin), "valkey") {
		names = []string{"valkey-cli", "redis-cli"}
	}
	for _, name := range names {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("redistest: neither redis-cli nor valkey-cli is on PATH (apt-get install -y redis-tools)")
}

// MustStart starts a server on a free port and stops it when the test ends.
func MustStart(tb testing.TB, opts ...Options) *Server {
	tb.Helper()
	var o Options
	if len(opts) > 0 {
		o = opts[0]
	}
	s, err := Start(tb.TempDir(), o)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.Stop)
	return s
}

// Start starts a server on a free port with its data under dir, for
// callers that are not tests (the benchmarks); Stop stops it.
func Start(dir string, opts Options) (*Server, error) {
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	s := &Server{bin: bin, Dir: dir, opts: opts}
	var lastErr error
	for range 5 { // a free port can be taken between probe and bind
		if s.Port, err = freePort(); err != nil {
			return nil, err
		}
		s.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port))
		if lastErr = s.start(); lastErr == nil {
			return s, nil
		}
	}
	return nil, lastErr
}

// Pid returns the running server's process id (0 when it is not running).
func (s *Server) Pid() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		return 0
	}
	return s.proc.Pid
}

// URL returns the server's redis:// URL.
func (s *Server) URL() string { return "redis://" + s.Addr + "/0" }

// Client returns a client of the server, closed when the test ends.
func (s *Server) Client(tb testing.TB) *redis.Client {
	tb.Helper()
	// As the binaries do: context deadlines bound every call, so a paused
	// server cannot hold a test beyond the deadlines it sets.
	c := redis.NewClient(&redis.Options{Addr: s.Addr, ContextTimeoutEnabled: true})
	tb.Cleanup(func() { c.Close() })
	return c
}

// Start starts the server again on the same port and data directory.
func (s *Server) Start(tb testing.TB) {
	tb.Helper()
	if err := s.start(); err != nil {
		tb.Fatal(err)
	}
}

// Kill stops the server with SIGKILL and waits for it to exit.
func (s *Server) Kill(tb testing.TB) {
	tb.Helper()
	s.Stop()
}

// Restart kills the server with SIGKILL and starts it on the same port and
// data: with AOF on, nothing acknowledged is lost; without it, everything is.
func (s *Server) Restart(tb testing.TB) {
	tb.Helper()
	s.Kill(tb)
	s.Start(tb)
}

// Pause stops the server process with SIGSTOP: connections stay open but
// nothing answers, as in a network partition.
func (s *Server) Pause(tb testing.TB) { tb.Helper(); s.signal(tb, syscall.SIGSTOP) }

// Resume continues a paused server with SIGCONT.
func (s *Server) Resume(tb testing.TB) { tb.Helper(); s.signal(tb, syscall.SIGCONT) }

func (s *Server) signal(tb testing.TB, sig syscall.Signal) {
	tb.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		tb.Fatalf("redistest: server on %s is not running", s.Addr)
	}
	if err := s.proc.Signal(sig); err != nil {
		tb.Fatalf("redistest: signal %v: %v", sig, err)
	}
}

func (s *Server) start() error {
	args := []string{
		"--port", strconv.Itoa(s.Port),
		"--bind", "127.0.0.1",
		"--dir", s.Dir,
		"--save", "",
		"--daemonize", "no",
		"--logfile", filepath.Join(s.Dir, "redis.log"),
		"--protected-mode", "no",
	}
	if s.opts.MaxClients > 0 {
		args = append(args, "--maxclients", strconv.Itoa(s.opts.MaxClients))
	}
	if s.opts.Cluster {
		timeout := s.opts.NodeTimeout
		if timeout <= 0 {
			timeout = 2 * time.Second
		}
		args = append(args,
			"--cluster-enabled", "yes",
			"--cluster-config-file", "nodes.conf", // in --dir
			"--cluster-node-timeout", strconv.FormatInt(timeout.Milliseconds(), 10),
			// A replica takes over however long it was cut off: tests
			// kill masters at any moment.
			"--cluster-replica-validity-factor", "0",
		)
	}
	if s.opts.AOF {
		args = append(args, "--appendonly", "yes", "--appendfsync", "always")
	} else {
		args = append(args, "--appendonly", "no")
	}
	cmd := exec.Command(s.bin, args...)
	// Its own process group, so a Ctrl-C of the test run is not delivered
	// twice and a killed test binary does not leave the signal unhandled.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("redistest: start %s: %w", s.bin, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	c := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1})
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			break
		}
		select {
		case werr := <-exited:
			log, _ := os.ReadFile(filepath.Join(s.Dir, "redis.log"))
			return fmt.Errorf("redistest: %s exited on port %d: %v\n%s", s.bin, s.Port, werr, tail(log))
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			return fmt.Errorf("redistest: %s on port %d did not answer within 10s: %v", s.bin, s.Port, err)
		}
	}
	s.mu.Lock()
	s.proc, s.exited = cmd.Process, exited
	s.mu.Unlock()
	return nil
}

// Stop kills the server and waits for it to exit; the data stays.
func (s *Server) Stop() {
	s.mu.Lock()
	proc, exited := s.proc, s.exited
	s.proc, s.exited = nil, nil
	s.mu.Unlock()
	if proc == nil {
		return
	}
	_ = proc.Kill()
	<-exited
}

func tail(b []byte) string {
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("redistest: free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
