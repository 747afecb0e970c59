package feed_test

import (
	"context"
	"testing"
	"time"

	"github.com/codemojex/feed/feed"
	"github.com/codemojex/feed/internal/testkit/redistest"
)

// TestCloseDuringOutage: a consumer closed while Redis does not answer
// returns within its grace (plus a bound for the calls in flight) and
// without error, and acks nothing it did not finish: what it held is
// still pending when Redis comes back.
func TestCloseDuringOutage(t *testing.T) {
	srv, rdb := mustStart(t, redistest.Options{AOF: true})
	s := stream("outage")
	held := make(chan struct{})
	release := make(chan struct{})
	cfg := baseConfig(t, rdb, "r1", s)
	cfg.ShutdownGrace = time.Second
	cfg.Handler = func(ctx context.Context, _ feed.Message) error {
		close(held)
		<-release // hold the entry until Close gives up on the handler
		return ctx.Err()
	}
	c := mustOpen(t, cfg)
	add(t, rdb, s)
	select {
	case <-held:
	case <-time.After(10 * time.Second):
		t.Fatal("entry never handled")
	}
	srv.Pause(t)
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- c.Close() }()
	time.AfterFunc(2*time.Second, func() { close(release) })
	var err error
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		srv.Resume(t)
		t.Fatal("Close did not return within 30s of a Redis outage")
	}
	took := time.Since(start)
	srv.Resume(t)
	if err != nil {
		t.Errorf("Close during an outage = %v; want nil (the lease expires by itself)", err)
	}
	t.Logf("Close took %v during the outage", took)
	if limit := cfg.ShutdownGrace + 8*time.Second; took > limit {
		t.Errorf("Close took %v; want at most %v", took, limit)
	}
	if n := pending(t, rdb, s); n != 1 {
		t.Fatalf("pending after Close = %d; want the unfinished entry left pending", n)
	}
}
