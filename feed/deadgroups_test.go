package feed_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/codemojex/feed/feed"
	"github.com/codemojex/feed/internal/event"
)

// TestOtherGroupsLetterNotOurs: one host's group dead-letters an entry for
// a reason of its own (here its handler; its clock or its store in life),
// and another host's group, whose handler failed the entry once with a
// plain error, judges it itself when its pending list or a claim brings it
// back: the dead positions set is the game's, shared by every group, and
// another group's letter is not this group's verdict. The entry was acked
// as a letter already written, a duplicate, and never stored by that
// host, whose live read would have stored it.
func TestOtherGroupsLetterNotOurs(t *testing.T) {
	_, rdb := mustStart(t)
	s := stream("crossgroup")
	var bad string
	cfgA := baseConfig(t, rdb, "a1", s)
	cfgA.Group = "hostA"
	cfgA.Handler = func(ctx context.Context, m feed.Message) error {
		if m.ID == bad {
			return feed.Poison(errors.New("host A refuses"))
		}
		return nil
	}
	bad = minter.Next(time.Now())
	addRaw(t, rdb, s, "id", bad, "kind", "chat", "at", time.Now().UTC().Format(time.RFC3339), "player", "eve", "text", "hi")
	var failedOnce atomic.Bool
	var rec recorder
	cfgB := baseConfig(t, rdb, "b1", s)
	cfgB.Group = "hostB"
	cfgB.Handler = func(ctx context.Context, m feed.Message) error {
		if m.ID == bad && !failedOnce.Swap(true) {
			// Wait for host A's letter, then fail transiently.
			for {
				n, _ := rdb.ZCard(ctx, feed.DeadPositionsKey(event.DeadKey("crossgroup"))).Result()
				if n == 1 {
					break
				}
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(5 * time.Millisecond):
				}
			}
			return errors.New("transient")
		}
		return rec.handler(ctx, m)
	}
	cB := mustOpen(t, cfgB)
	cA := mustOpen(t, cfgA)
	waitFor(t, 10*time.Second, "host B settles E", func() bool {
		gs, err := rdb.XInfoGroups(context.Background(), s).Result()
		if err != nil {
			return false
		}
		for _, g := range gs {
			if g.Name == "hostB" {
				return failedOnce.Load() && g.Pending == 0 && cA.Stats().Dead == 1
			}
		}
		return false
	})
	if rec.count(bad) != 1 {
		t.Errorf("host B handled E %d times after its transient failure (duplicates %d); want once: host A's dead letter is not host B's verdict", rec.count(bad), cB.Stats().DeadDuplicates)
	}
}
