package bench

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redis is a redis-server process the benchmark started on a free port of
// its own; it never touches a server it did not start.
type Redis struct {
	Addr string
	Dir  string

	cmd    *exec.Cmd
	exited chan struct{}
}

// StartRedis starts redis-server (or valkey-server) without persistence on
// a free loopback port, with its files under dir.
func StartRedis(dir string) (*Redis, error) {
	bin, err := redisBinary()
	if err != nil {
		return nil, err
	}
	var lastErr error
	for range 5 { // a free port can be taken between probe and bind
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		r := &Redis{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), Dir: dir}
		if lastErr = r.start(bin, port); lastErr == nil {
			return r, nil
		}
	}
	return nil, lastErr
}

func (r *Redis) start(bin string, port int) error {
	r.cmd = exec.Command(bin,
		"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", r.Dir,
		"--save", "", "--appendonly", "no", "--daemonize", "no",
		"--logfile", filepath.Join(r.Dir, "redis.log"), "--protected-mode", "no",
		"--maxclients", "20000")
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := r.cmd.Start(); err != nil {
		return fmt.Errorf("bench: start %s: %w", bin, err)
	}
	r.exited = make(chan struct{})
	go func() { _ = r.cmd.Wait(); close(r.exited) }()
	c := redis.NewClient(&redis.Options{Addr: r.Addr, MaxRetries: -1})
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-r.exited:
			log, _ := os.ReadFile(filepath.Join(r.Dir, "redis.log"))
			return fmt.Errorf("bench: redis exited on port %d: %s", port, log)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			r.Close()
			return fmt.Errorf("bench: redis on port %d did not answer within 10s: %w", port, err)
		}
	}
}

// URL is the server's redis:// URL.
func (r *Redis) URL() string { return "redis://" + r.Addr + "/0" }

// Client returns a new client of the server; pool sizes the connection pool
// (0: go-redis's default).
func (r *Redis) Client(pool int) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: r.Addr, PoolSize: pool})
}

// Close kills the server and waits for it.
func (r *Redis) Close() {
	if r.cmd == nil || r.cmd.Process == nil {
		return
	}
	_ = r.cmd.Process.Kill()
	<-r.exited
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("bench: free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// redisBinary finds redis-server or valkey-server (the same search as
// internal/redistest, which needs a testing.TB to start one).
func redisBinary() (string, error) {
	for _, name := range []string{"redis-server", "valkey-server"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("bench: neither redis-server nor valkey-server is on PATH")
}

// Pid is the server's process id.
func (r *Redis) Pid() int { return r.cmd.Process.Pid }
