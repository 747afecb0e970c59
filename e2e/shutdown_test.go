package e2e_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/codemojex/feed/internal/testkit/proctest"
	"github.com/codemojex/feed/internal/testkit/wait"
)

// TestGracefulStopDuringOutage: a renderer SIGTERMed while Redis does not
// answer exits 0 within its shutdown bound, and its restart with the same
// name serves again once Redis is back.
func TestGracefulStopDuringOutage(t *testing.T) {
	c := newCluster(t)
	r := c.start("r1")
	w := c.writer("outage")
	w.chat("ada", "before the outage")
	c.waitStored("outage", w.ids, 10*time.Second)

	c.redis.Pause(t)
	start := time.Now()
	// 10s of handler grace and 3s for calls in flight at most; 20s is the
	// point where a stuck shutdown would be SIGKILLed by an operator.
	err := r.Term(20 * time.Second)
	took := time.Since(start)
	c.redis.Resume(t)
	if err != nil {
		t.Fatalf("SIGTERM during an outage: %v (after %v)", err, took)
	}
	t.Logf("renderer stopped in %v during the outage", took)

	c.restart(r)
	w.chat("ada", "after the outage")
	c.waitStored("outage", w.ids, 15*time.Second)
}

// TestTermWhileStarting: a renderer stopped while it waits for its consumer
// name (held by a live process) exits 0: a stop, not a failed one
// (docs/operations.md, "Stopping"). It used to exit 1.
func TestTermWhileStarting(t *testing.T) {
	c := newCluster(t)
	c.start("r1")
	p := proctest.Start(t, "r1-again", "renderer", []string{
		"-redis", c.redisURL(), "-db", c.dbPath, "-http", proctest.FreeAddr(t),
		"-group", c.group, "-consumer", "r1",
	})
	proctest.WaitFor(t, 10*time.Second, func() bool { return strings.Contains(p.Output(), "consumer name held") }, "the second r1 waiting for its name")
	if err := p.Term(10 * time.Second); err != nil {
		t.Fatalf("SIGTERM while starting: %v, want exit status 0\n%s", err, p.Output())
	}
}

// TestTermDrains: on SIGTERM a renderer with the default -shutdown-delay
// answers /readyz 503 at once and goes on serving, pages, websockets and
// new lines, for a few seconds before its listener closes, so a load
// balancer sees it fail and sends no new clients to a closed port; then it
// exits 0. It used to close its listener milliseconds after /readyz failed.
func TestTermDrains(t *testing.T) {
	c := newCluster(t)
	w := c.writer("drain")
	w.chat("ada", "before the stop")
	// The harness's renderers stop without a delay (FEED_SHUTDOWN_DELAY);
	// this one has the default.
	p, addr := proctest.StartHTTP(t, "r1", "renderer", "/readyz", http.StatusOK, 20*time.Second, func(addr string) []string {
		return []string{
			"-redis", c.redisURL(), "-db", c.dbPath, "-http", addr,
			"-group", c.group, "-consumer", "r1", "-log-level", "debug",
		}
	})
	r := &renderer{Proc: p, name: "r1", addr: addr}
	c.waitStored("drain", w.ids, 10*time.Second)
	ws := mustDial(t, r, "drain", 0)
	if err := ws.readUntil(w.ids, 10*time.Second); err != nil {
		t.Fatal(err)
	}

	status := func(path string) (int, error) {
		resp, err := http.Get(r.url(path))
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	if err := syscall.Kill(p.Pid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	termed := time.Now()
	var last string
	var gone error
	wait.Until(t, 10*time.Second, func() bool {
		code, err := status("/readyz")
		if err != nil {
			gone = err
			return true
		}
		last = fmt.Sprint(code)
		return code == http.StatusServiceUnavailable
	}, func() string { return "/readyz to answer 503 after SIGTERM (last: " + last + ")" })
	if gone != nil {
		t.Fatalf("the renderer stopped serving %v after SIGTERM, before /readyz answered 503: %v", time.Since(termed), gone)
	}
	t.Logf("/readyz answered 503 %v after SIGTERM", time.Since(termed).Round(time.Millisecond))

	// Draining: everything but /readyz is served as before.
	for _, path := range []string{"/healthz", "/games/drain"} {
		if code, err := status(path); code != http.StatusOK {
			t.Errorf("%s while draining: %d (%v), want 200", path, code, err)
		}
	}
	w.chat("ada", "while draining")
	if err := ws.readUntil(w.ids, 10*time.Second); err != nil {
		t.Errorf("a line written while draining: %v", err)
	}
	late := mustDial(t, r, "drain", 0)
	if err := late.readUntil(w.ids, 10*time.Second); err != nil {
		t.Errorf("a websocket opened while draining: %v", err)
	}
	drained := time.Since(termed)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := p.Wait(ctx); err != nil {
		t.Fatalf("exit after SIGTERM: %v, want status 0", err)
	}
	if took := time.Since(termed); took < 5*time.Second {
		t.Errorf("exited %v after SIGTERM, before the default -shutdown-delay (5s) ran out", took)
	}
	t.Logf("served while draining for at least %v; exited %v after SIGTERM", drained.Round(time.Millisecond), time.Since(termed).Round(time.Millisecond))
}
