package feed_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/feed"
	"github.com/codemojex/feed/internal/testkit/wait"
)

// TestBatchFailureLogSampled: a batch handler that fails as a whole on a
// bad entry (it panics on it) is told so once per LogEvery, with
// similar_unlogged, as the failures of the entries it then hands over one
// by one are. The line came once per batch: a flood of such entries, each
// in its own batch and claimed again after every failure until
// PoisonAfter, wrote one WARN per batch and per try.
func TestBatchFailureLogSampled(t *testing.T) {
	_, rdb := mustStart(t)
	const bad = 10
	s := stream("flood")
	cfg := baseConfig(t, rdb, "c1", s)
	cfg.PoisonAfter = 3
	cfg.LogEvery = time.Hour
	cfg.BatchHandler = func(_ context.Context, ms []feed.Message) []error {
		for _, m := range ms {
			if m.Payload["text"] == "boom" {
				panic("a handler bug a hostile entry trips")
			}
		}
		return make([]error, len(ms))
	}
	logs := captureLogs(t, &cfg)
	c := mustOpen(t, cfg)
	// Each bad entry comes in a batch of its own with a good one (one
	// MULTI: one read takes both), as under a flood mixed with traffic.
	for i := range bad {
		pipe := rdb.TxPipeline()
		for _, text := range []string{"hi", "boom"} {
			pipe.XAdd(context.Background(), &redis.XAddArgs{Stream: s, Values: []any{
				"id", minter.Next(time.Now()), "kind", "chat", "at", time.Now().UTC().Format(time.RFC3339), "player", "ana", "text", text,
			}})
		}
		if _, err := pipe.Exec(context.Background()); err != nil {
			t.Fatal(err)
		}
		wait.For(t, 10*time.Second, fmt.Sprintf("bad entry %d failed", i), func() bool { return c.Stats().Failed > int64(i) })
	}
	wait.For(t, 30*time.Second, "every bad entry dead-lettered", func() bool { return c.Stats().Dead == bad })
	if n := logs.count("batch handler failed as a whole"); n != 1 {
		t.Errorf("%d lines %q for %d bad entries, want 1", n, "batch handler failed as a whole", bad)
	}
}
