package main_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/internal/testkit/proctest"
	"github.com/codemojex/feed/internal/testkit/redistest"
	"github.com/codemojex/feed/internal/testkit/wait"
)

// bin is the gamesim binary under test, built once: only this command, so
// the test does not wait for every binary to link.
var bin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "gamesim-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = filepath.Join(dir, "gamesim")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

var waitFor = wait.For

func waitExit(tb testing.TB, p *proctest.Proc) error {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	err := p.Wait(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		tb.Fatalf("%s did not exit", p.Name)
	}
	return err
}

func TestWritesWhatTheFlagsAndEnvironmentSay(t *testing.T) {
	s := redistest.MustStart(t)
	rdb := s.Client(t)
	// Flags for some settings, environment for the others: both are honoured.
	p := proctest.Start(t, "gamesim", bin, []string{"-games", "2", "-events", "60"},
		"REDIS_URL="+s.URL(), "GAMESIM_PREFIX=envp", "GAMESIM_BAD=0.2", "GAMESIM_EVENTS=999")
	if err := waitExit(t, p); err != nil {
		t.Fatalf("exit: %v\n%s", err, p.Output())
	}
	for _, game := range []string{"envp-1", "envp-2"} {
		n, err := rdb.XLen(context.Background(), event.StreamKey(game)).Result()
		if err != nil || n != 60 {
			t.Fatalf("%s: %d entries (%v), want 60 (the flag beats the environment)", game, n, err)
		}
	}
	if out := p.Output(); !strings.Contains(out, "done: 120 entries") || strings.Contains(out, "bad=0 ") {
		t.Fatalf("output does not report 120 entries with some malformed:\n%s", out)
	}
}

func TestStopsCleanlyOnSignal(t *testing.T) {
	s := redistest.MustStart(t)
	rdb := s.Client(t)
	p := proctest.Start(t, "gamesim", bin, []string{"-redis", s.URL(), "-events", "0", "-rate", "500"})
	waitFor(t, 20*time.Second, "entries in game-1", func() bool {
		n, _ := rdb.XLen(context.Background(), event.StreamKey("game-1")).Result()
		return n >= 20
	})
	if err := p.Term(20 * time.Second); err != nil {
		t.Fatalf("after SIGTERM: %v, want exit 0\n%s", err, p.Output())
	}
	if !strings.Contains(p.Output(), "stopped:") {
		t.Fatalf("no final summary:\n%s", p.Output())
	}
}

func TestFailsLoudly(t *testing.T) {
	s := redistest.MustStart(t)
	tests := []struct {
		name string
		args []string
		env  []string
		want string
	}{
		// A value gamesim refuses is refused before Redis is asked
		// (none answers on port 1), as feedctl's and the renderer's
		// are: it was told only once Redis answered.
		{"no games", []string{"-redis", "redis://127.0.0.1:1/0", "-games", "0"}, nil, "gamesim: invalid config: games 0"},
		{"bad prefix", []string{"-redis", "redis://127.0.0.1:1/0", "-prefix", "No_Way"}, nil, "prefix"},
		{"bad env", []string{"-redis", s.URL()}, []string{"GAMESIM_RATE=fast"}, "GAMESIM_RATE"},
		{"stray argument", []string{"-redis", s.URL(), "extra"}, nil, "unexpected arguments"},
		{"no redis", []string{"-redis", "redis://127.0.0.1:1/0"}, nil, "redis 127.0.0.1:1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := proctest.Start(t, "gamesim", bin, tt.args, tt.env...)
			err := waitExit(t, p)
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() == 0 {
				t.Fatalf("exit = %v, want a non-zero status\n%s", err, p.Output())
			}
			if !strings.Contains(p.Output(), tt.want) {
				t.Fatalf("output does not mention %q:\n%s", tt.want, p.Output())
			}
			if strings.Contains(p.Output(), "gamesim: gamesim:") {
				t.Fatalf("the prefix twice:\n%s", p.Output())
			}
			// go-redis's own lines come as gamesim's, sampled, where
			// it wrote every failed dial in the log package's format
			// (redis: 2026/12/05 05:04:11 pool.go:770: …), five here.
			if strings.Contains(p.Output(), "pool.go:") || strings.Count(p.Output(), "gamesim: redis: ") > 1 {
				t.Fatalf("go-redis's lines not gamesim's, or not sampled:\n%s", p.Output())
			}
		})
	}
}

// TestStopsCleanlyWhileConnecting: a gamesim stopped while its Redis does
// not answer yet (a hung server, before anything was written) exits 0, a
// stop like any other ("exits 0 when done or stopped"). It exited 1 with
// the cancelled PING's error.
func TestStopsCleanlyWhileConnecting(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("looks for the connection in /proc")
	}
	s := redistest.MustStart(t)
	s.Pause(t)
	t.Cleanup(func() { s.Resume(t) })
	p := proctest.Start(t, "gamesim", bin, []string{"-redis", s.URL(), "-events", "0"})
	// Its PING is on the way once it holds a connection to the server
	// (the kernel accepts it for the stopped server): its signal handler,
	// set up before, is in place.
	waitFor(t, 10*time.Second, "gamesim connected to the paused server", func() bool {
		return connectedTo(p.Pid(), s.Port)
	})
	if err := p.Term(20 * time.Second); err != nil {
		t.Fatalf("SIGTERM while connecting: %v, want exit 0\n%s", err, p.Output())
	}
}

// connectedTo reports whether process pid has an established TCP
// connection to 127.0.0.1:port.
func connectedTo(pid, port int) bool {
	fds, _ := filepath.Glob(fmt.Sprintf("/proc/%d/fd/*", pid))
	inodes := map[string]bool{}
	for _, fd := range fds {
		if l, err := os.Readlink(fd); err == nil && strings.HasPrefix(l, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] = true
		}
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/tcp", pid))
	if err != nil {
		return false
	}
	remote := fmt.Sprintf("0100007F:%04X", port)
	for _, line := range strings.Split(string(b), "\n")[1:] {
		f := strings.Fields(line)
		// sl local remote st ... inode (the 10th field)
		if len(f) >= 10 && f[2] == remote && f[3] == "01" && inodes[f[9]] {
			return true
		}
	}
	return false
}
