package e2e_test

import (
	"strings"
	"testing"
	"time"

	"github.com/codemojex/feed/internal/testkit/proctest"
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
