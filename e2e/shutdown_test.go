package e2e_test

import (
	"testing"
	"time"
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
