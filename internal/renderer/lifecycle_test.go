package renderer_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/internal/renderer"
	"github.com/codemojex/feed/internal/testkit/proctest"
	"github.com/codemojex/feed/internal/testkit/redistest"
)

// TestRunOnlyOnce: Run after Close, or a second Run, is refused with
// ErrRunTwice and opens nothing, so that one Close stops whatever Run
// opened. Run after Close used to start a replica that no Close could stop
// (Close had run already): its listener, its consumer and the consumer
// name's lease outlived it. A second Run replaced the first one's parts
// with its own (the consumer with nil, its name being held by the first),
// and Close then waited for ever for the first Run's goroutines, whose
// context it no longer had.
func TestRunOnlyOnce(t *testing.T) {
	rs := redistest.MustStart(t)
	rdb := rs.Client(t)
	dir := t.TempDir()
	args := func(name string) []string {
		return []string{"-redis", rs.URL(), "-db", filepath.Join(dir, name+".db"), "-http", "127.0.0.1:0", "-consumer", name}
	}
	leaseFree := func(name string) func() bool {
		return func() bool {
			n, err := rdb.Exists(context.Background(), event.LeaseKey("feed", name)).Result()
			return err == nil && n == 0
		}
	}

	t.Run("after Close", func(t *testing.T) {
		m := renderer.NewMain()
		if err := m.ParseFlags(args("a")); err != nil {
			t.Fatal(err)
		}
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
		err := m.Run(context.Background())
		if err == nil {
			addr := m.Addr()
			m.Close() // a no-op: Close ran already
			if c, derr := net.DialTimeout("tcp", addr, time.Second); derr == nil {
				c.Close()
				t.Errorf("Run after Close served on %s, and Close cannot stop it", addr)
			}
			if !leaseFree("a")() {
				t.Errorf("Run after Close holds the consumer name's lease for good")
			}
			return
		}
		if !errors.Is(err, renderer.ErrRunTwice) {
			t.Fatalf("Run after Close = %v, want ErrRunTwice", err)
		}
		if !leaseFree("a")() {
			t.Errorf("a refused Run took the consumer name's lease")
		}
	})

	t.Run("twice", func(t *testing.T) {
		m := renderer.NewMain()
		if err := m.ParseFlags(args("b")); err != nil {
			t.Fatal(err)
		}
		if err := m.Run(context.Background()); err != nil {
			m.Close()
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err := m.Run(ctx) // the name is held (by the first Run): it would wait for it
		cancel()
		if err == nil || !errors.Is(err, renderer.ErrRunTwice) {
			t.Errorf("second Run = %v, want ErrRunTwice", err)
		}
		closed := make(chan error, 1)
		go func() { closed <- m.Close() }()
		select {
		case err := <-closed:
			if err != nil {
				t.Errorf("Close: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("Close still waiting 30 s after a second Run: it waits for the first Run's goroutines, which nothing stops")
		}
		proctest.WaitFor(t, 5*time.Second, leaseFree("b"), "the consumer name's lease released by Close")
	})
}

// TestShutdownDrains: Shutdown answers /readyz 503 at once and serves on
// for -shutdown-delay, a delay its context cuts short; then it closes. A
// negative delay is refused, and FEED_SHUTDOWN_DELAY is its fallback.
func TestShutdownDrains(t *testing.T) {
	rs := redistest.MustStart(t)
	t.Setenv("FEED_SHUTDOWN_DELAY", "10m") // longer than the test: only the cancel ends it
	m := renderer.NewMain()
	if err := m.ParseFlags([]string{"-redis", rs.URL(), "-db", filepath.Join(t.TempDir(), "feed.db"), "-http", "127.0.0.1:0", "-consumer", "a"}); err != nil {
		t.Fatal(err)
	}
	if m.Config.ShutdownDelay != 10*time.Minute {
		t.Fatalf("FEED_SHUTDOWN_DELAY=10m: delay %v", m.Config.ShutdownDelay)
	}
	if err := m.Run(context.Background()); err != nil {
		m.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	base := "http://" + m.Addr()
	status := func(path string) int {
		resp, err := http.Get(base + path)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	proctest.WaitFor(t, 10*time.Second, func() bool { return status("/readyz") == http.StatusOK }, "/readyz 200")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- m.Shutdown(ctx) }()
	proctest.WaitFor(t, 10*time.Second, func() bool { return status("/readyz") == http.StatusServiceUnavailable }, "/readyz 503 once Shutdown began")
	for _, path := range []string{"/healthz", "/"} {
		if got := status(path); got != http.StatusOK {
			t.Errorf("%s while draining: %d, want 200", path, got)
		}
	}
	select {
	case err := <-done:
		t.Fatalf("Shutdown returned %v within its delay", err)
	default:
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Shutdown: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Shutdown still draining 30 s after its context ended")
	}
	if got := status("/healthz"); got != 0 {
		t.Errorf("/healthz after Shutdown: %d, want the port closed", got)
	}

	if err := renderer.NewMain().ParseFlags([]string{"-db", "x.db", "-shutdown-delay", "-1s"}); err == nil {
		t.Error("-shutdown-delay -1s accepted")
	}
}
