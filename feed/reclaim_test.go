package feed_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/feed"
	"github.com/codemojex/feed/internal/event"
)

// TestReclaimFollowsClaimEvery: the entries of a peer that died holding
// them are claimed within MinIdle + ClaimEvery, not after the next census
// (an hour here), for games known to the read set through the registry;
// also when more hot games than one pipeline holds come before it in the
// look at the hot games, which is then taken over several turns.
func TestReclaimFollowsClaimEvery(t *testing.T) {
	for _, others := range []int{0, 600} {
		t.Run(fmt.Sprintf("others=%d", others), func(t *testing.T) {
			reclaimFollowsClaimEvery(t, others)
		})
	}
}

func reclaimFollowsClaimEvery(t *testing.T, others int) {
	ctx := context.Background()
	_, rdb := mustStart(t)
	registry := func(tb testing.TB, name string, h feed.Handler) feed.Config {
		cfg := baseConfig(tb, rdb, name)
		cfg.Streams, cfg.Registry = nil, event.RegistryKey
		cfg.WakeEvery, cfg.ActiveWindow, cfg.SweepEvery = 50*time.Millisecond, time.Hour, time.Hour
		cfg.CensusEvery = time.Hour
		cfg.Handler = h
		return cfg
	}
	game := "reclaim-1"
	key := stream(game)
	register := func() {
		t.Helper()
		if err := rdb.ZAddGT(ctx, event.RegistryKey, redisZ(game)).Err(); err != nil {
			t.Fatal(err)
		}
	}
	var before []string // hot games ahead of it in key order
	for i := range others {
		before = append(before, fmt.Sprintf("reclaim-0-%03d", i))
	}
	registerAt(t, rdb, before, time.Now())
	survivor := &recorder{}
	mustOpen(t, registry(t, "survivor", survivor.handler))
	first := add(t, rdb, key)
	register()
	waitFor(t, 30*time.Second, "the survivor to handle the first entries", func() bool { return len(survivor.ids()) == others+1 })

	// The peer fails every entry, so what it reads stays pending under its
	// name; write until it holds some, then it dies.
	peerCfg := registry(t, "peer", func(context.Context, feed.Message) error {
		return errors.New("peer failing")
	})
	peerCfg.MinIdle = time.Hour // it never takes its failures back itself
	peer, err := feed.Open(ctx, peerCfg)
	if err != nil {
		t.Fatal(err)
	}
	peerClosed := false
	t.Cleanup(func() {
		if !peerClosed {
			peer.Close()
		}
	})
	held := func() int64 {
		p, err := rdb.XPendingExt(ctx, &redis.XPendingExtArgs{Stream: key, Group: group, Consumer: "peer",
			Start: "-", End: "+", Count: 1000}).Result()
		if err != nil {
			t.Fatal(err)
		}
		return int64(len(p))
	}
	want := []string{first}
	waitFor(t, 20*time.Second, "the peer to hold entries", func() bool {
		want = append(want, add(t, rdb, key))
		register()
		return held() > 0
	})
	peer.Close()
	peerClosed = true
	n := held()
	if n == 0 {
		t.Fatal("the peer's entries left its pending list on close")
	}
	// MinIdle 300ms + ClaimEvery 100ms: a generous deadline for a loaded
	// machine, far below the hour of the census.
	waitFor(t, 15*time.Second, "the survivor to claim the dead peer's entries", func() bool { return held() == 0 })
	waitFor(t, 15*time.Second, "every entry handled by the survivor", func() bool {
		got := survivor.ids()
		for _, id := range want {
			if got[id] == 0 {
				return false
			}
		}
		return true
	})
}
