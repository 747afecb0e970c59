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

// TestClaimSendsXautoclaimOnlyWhereIdle: the claim pass over many streams
// with entries pending, none of them idle past MinIdle but one (a live
// peer holds the others), sends XAUTOCLAIM to that one only: which
// streams have an idle entry is asked in one pipeline (XPENDING IDLE),
// so the pass costs one round trip for them all (per node on a cluster)
// and one more per stream that has something to claim. It once sent one
// XAUTOCLAIM per stream, in a row: a round trip each every ClaimEvery.
func TestClaimSendsXautoclaimOnlyWhereIdle(t *testing.T) {
	ctx := context.Background()
	_, rdb := mustStart(t)
	const n = 200
	var ss []string
	pipe := rdb.Pipeline()
	for i := range n {
		s := stream(fmt.Sprintf("claimable-%03d", i))
		ss = append(ss, s)
		pipe.XAdd(ctx, &redis.XAddArgs{Stream: s, Values: []any{"id", minter.Next(time.Now()), "kind", "chat", "at", time.Now().UTC().Format(time.RFC3339)}})
		pipe.XGroupCreate(ctx, s, group, "0")
		// A live peer holds it: read just now, far from idle.
		pipe.XReadGroup(ctx, &redis.XReadGroupArgs{Group: group, Consumer: "r2", Streams: []string{s, ">"}})
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	// A dead peer's entry on the last stream: idle for ten minutes.
	last := ss[n-1]
	p, err := rdb.XPendingExt(ctx, &redis.XPendingExtArgs{Stream: last, Group: group, Start: "-", End: "+", Count: 1}).Result()
	if err != nil || len(p) != 1 {
		t.Fatalf("xpending: %v %v", p, err)
	}
	if err := rdb.Do(ctx, "xclaim", last, group, "dead", 0, p[0].ID, "idle", 600000, "justid").Err(); err != nil {
		t.Fatal(err)
	}
	before := commandCalls(t, rdb)["xautoclaim"]
	cfg := baseConfig(t, rdb, "r1", ss...)
	cfg.MinIdle = time.Minute
	var rec recorder
	cfg.Handler = rec.handler
	c := mustOpen(t, cfg)
	waitFor(t, 20*time.Second, "the dead peer's entry claimed and handled", func() bool {
		return c.Stats().Claimed == 1 && pending(t, rdb, last) == 0
	})
	calls := commandCalls(t, rdb)
	got := calls["xautoclaim"] - before
	t.Logf("XAUTOCLAIM calls: %d, XPENDING calls: %d, for %d streams", got, calls["xpending"], n)
	if got > 3 {
		t.Fatalf("%d XAUTOCLAIM calls for one stream with an idle entry among %d: one per stream, in a row", got, n)
	}
	if len(rec.all()) != 1 {
		t.Fatalf("%d entries handled; want the dead peer's only", len(rec.all()))
	}
}

// TestClaimTakesEveryPage: one claim pass walks a stream's pending list to
// its end, page after page of Count entries, so that a dead peer's entries
// past the first page are not left for the next ClaimEvery (an hour here).
func TestClaimTakesEveryPage(t *testing.T) {
	ctx := context.Background()
	_, rdb := mustStart(t)
	s := stream("pages")
	var ids []string
	for range 12 {
		ids = append(ids, add(t, rdb, s))
	}
	// A peer that read them all and died.
	if err := rdb.XGroupCreate(ctx, s, group, "0").Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.XReadGroup(ctx, &redis.XReadGroupArgs{Group: group, Consumer: "gone", Streams: []string{s, ">"}, Count: 100}).Err(); err != nil {
		t.Fatal(err)
	}
	cfg := baseConfig(t, rdb, "b", s)
	cfg.Count = 5
	cfg.ClaimEvery = time.Hour // the first pass, at start, is the only one
	waitFor(t, 5*time.Second, "the dead peer's entries idle past MinIdle", func() bool {
		p, err := rdb.XPendingExt(ctx, &redis.XPendingExtArgs{Stream: s, Group: group, Idle: cfg.MinIdle, Start: "-", End: "+", Count: 100}).Result()
		return err == nil && len(p) == len(ids)
	})
	var rec recorder
	cfg.Handler = rec.handler
	c := mustOpen(t, cfg)
	waitFor(t, 5*time.Second, "every entry claimed by the first pass", func() bool { return len(rec.ids()) == len(ids) })
	handledOnce(t, rec.ids(), len(ids))
	if st := c.Stats(); st.Claimed != int64(len(ids)) {
		t.Errorf("claimed %d, want %d", st.Claimed, len(ids))
	}
}
