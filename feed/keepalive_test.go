package feed_test

import (
	"context"
	"testing"
	"time"

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
