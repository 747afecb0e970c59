package feed_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/feed"
)

// TestKeepAliveFailuresLogSampled: while Redis is down under a handler
// that runs long, the refresh of its entries fails for every stream of
// the batch at every MinIdle/2; those warnings are logged at most once a
// LogEvery with the count held back, as the other per-stream failures
// are. They were logged one per stream and per refresh: a batch over 500
// games wrote 500 lines every 15 s for as long as the outage lasted.
func TestKeepAliveFailuresLogSampled(t *testing.T) {
	srv, rdb := mustStart(t)
	ss := []string{stream("ka1"), stream("ka2"), stream("ka3")}
	cfg := baseConfig(t, rdb, "r1", ss...)
	cfg.LogEvery = time.Hour
	logs := captureLogs(t, &cfg)
	held := make(chan struct{}, len(ss))
	release := make(chan struct{})
	cfg.Handler = func(ctx context.Context, m feed.Message) error {
		held <- struct{}{}
		<-release
		return nil
	}
	for _, s := range ss {
		add(t, rdb, s)
	}
	c := mustOpen(t, cfg)
	select {
	case <-held:
	case <-time.After(10 * time.Second):
		t.Fatal("no entry handed to the handler")
	}
	srv.Kill(t)
	// Three refreshes at least, each over the three streams.
	waitFor(t, 20*time.Second, "refreshes failed", func() bool { return feed.LoopErrorsOf(c, "keepalive") >= 3*int64(len(ss)) })
	srv.Start(t)
	close(release)
	if got := logs.count("refreshing entries in hand failed"); got != 1 {
		t.Fatalf("%d lines for %d failed refreshes, want 1 (LogEvery: 1h)", got, feed.LoopErrorsOf(c, "keepalive"))
	}
}

// TestKeepAliveLeavesPeersEntry: the keep-alive refreshes only the entries
// in hand that are still this consumer's; one a peer took meanwhile (its
// claim came while a refresh failed) stays the peer's, and is not taken
// back by the next refresh.
func TestKeepAliveLeavesPeersEntry(t *testing.T) {
	ctx := context.Background()
	_, rdb := mustStart(t)
	s := stream("kapeer")
	release := make(chan struct{})
	started := make(chan struct{})
	var once sync.Once
	cfg := baseConfig(t, rdb, "slow", s)
	cfg.Handler = func(ctx context.Context, m feed.Message) error {
		once.Do(func() { close(started) })
		select {
		case <-release:
		case <-ctx.Done():
			return ctx.Err()
		}
		return nil
	}
	// Both entries come in one batch; the handler holds the first.
	add(t, rdb, s)
	add(t, rdb, s)
	c := mustOpen(t, cfg)
	defer close(release)
	<-started
	var taken string
	waitFor(t, 5*time.Second, "both entries in hand", func() bool {
		p, err := rdb.XPendingExt(ctx, &redis.XPendingExtArgs{Stream: s, Group: group, Start: "-", End: "+", Count: 10}).Result()
		if err != nil || len(p) != 2 {
			return false
		}
		taken = p[1].ID
		return true
	})
	if err := rdb.XClaimJustID(ctx, &redis.XClaimArgs{Stream: s, Group: group, Consumer: "peer", MinIdle: 0, Messages: []string{taken}}).Err(); err != nil {
		t.Fatal(err)
	}
	// Each refresh counts the entry still in hand: three more, and at
	// least two refreshes ran wholly after the peer's claim.
	k := c.Stats().KeptAlive
	waitFor(t, 5*time.Second, "refreshes after the claim", func() bool { return c.Stats().KeptAlive >= k+3 })
	p, err := rdb.XPendingExt(ctx, &redis.XPendingExtArgs{Stream: s, Group: group, Start: taken, End: taken, Count: 1}).Result()
	if err != nil || len(p) != 1 {
		t.Fatalf("xpending %s: %v %v", taken, p, err)
	}
	if p[0].Consumer != "peer" {
		t.Errorf("the peer's entry is now %s's: the keep-alive took it back", p[0].Consumer)
	}
}
