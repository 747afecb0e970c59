package feed_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/feed"
	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/internal/redisconn"
	"github.com/codemojex/feed/internal/testkit/acldocs"
	"github.com/codemojex/feed/internal/testkit/redistest"
)

// TestACLRendererRarePaths: the consumer, logged in as the feed-renderer
// user of docs/operations.md ("A Redis with ACL users", created from the
// page's own rule on every node), walks the paths TestACLUsers (e2e) does
// not, each sending a grant of the rule that nothing else sends: the
// keep-alive of entries in hand and the pause's forgiving of a delivery
// (XCLAIM, in scripts), the idle-consumer cleanup of the census (SCRIPT
// LOAD of its script, XGROUP DELCONSUMER; on one node and on a cluster,
// where the script is loaded on every master), the cap of the dead positions
// (ZREMRANGEBYRANK, in the dead-letter script and in the confirm of the
// single-key steps), a stale claim of a dead letter settled (the claim
// script's XINFO GROUPS, XPENDING and ZREM) and the dead letter in single-key steps while the
// game's slot migrates (ASKING). Each path does its work, the server counts
// the command (so the path was walked), and no node's ACL LOG has an
// entry. With the grant dropped from the page, the subtest that walks it
// fails on the ACL LOG.
func TestACLRendererRarePaths(t *testing.T) {
	ctx := context.Background()
	t.Run("keep-alive XCLAIM", func(t *testing.T) {
		nodes, admin, rdb := asDocsRenderer(t)
		s := stream("acl-keepalive")
		id := add(t, admin, s)
		var rec recorder
		release := make(chan struct{})
		cfg := baseConfig(t, rdb, "r1", s)
		cfg.Handler = func(ctx context.Context, m feed.Message) error {
			select {
			case <-release:
			case <-ctx.Done():
				return ctx.Err()
			}
			return rec.handler(ctx, m)
		}
		c := mustOpen(t, cfg)
		var once sync.Once
		let := func() { once.Do(func() { close(release) }) }
		t.Cleanup(let) // before Close, which waits for the handler
		waitFor(t, 10*time.Second, "the entry in hand kept alive, or a refusal", func() bool {
			return c.Stats().KeptAlive > 0 || len(acldocs.Log(t, nodes)) > 0
		})
		let()
		waitFor(t, 10*time.Second, "the entry handled and acked", func() bool {
			return rec.count(id) == 1 && pending(t, admin, s) == 0
		})
		wantWalked(t, nodes, "xclaim")
	})

	t.Run("pause XCLAIM", func(t *testing.T) {
		nodes, admin, rdb := asDocsRenderer(t)
		s := stream("acl-pause")
		id := add(t, admin, s)
		var (
			mu      sync.Mutex
			calls   int
			retries []int64 // the entry's delivery count at each call
			rec     recorder
		)
		cfg := baseConfig(t, rdb, "r1", s)
		cfg.Handler = func(ctx context.Context, m feed.Message) error {
			p, err := admin.XPendingExt(ctx, &redis.XPendingExtArgs{Stream: s, Group: group, Start: m.Position, End: m.Position, Count: 1}).Result()
			if err != nil || len(p) != 1 {
				return fmt.Errorf("pending %s: %v %v", m.Position, p, err)
			}
			mu.Lock()
			calls++
			first := calls == 1
			retries = append(retries, p[0].RetryCount)
			mu.Unlock()
			if first {
				return feed.Unavailable(errors.New("store read-only"))
			}
			return rec.handler(ctx, m)
		}
		c := mustOpen(t, cfg)
		waitFor(t, 10*time.Second, "the entry handled after the pause, or a refusal", func() bool {
			return rec.count(id) == 1 || len(acldocs.Log(t, nodes)) > 0
		})
		wantWalked(t, nodes, "xclaim")
		mu.Lock()
		defer mu.Unlock()
		// The pause takes the delivery back (forgive): the retry in hand
		// sees the count the entry had before it, 0.
		if len(retries) != 2 || retries[0] != 1 || retries[1] != 0 {
			t.Errorf("delivery counts at the handler's calls %v, want [1 0] (the Unavailable delivery forgiven)", retries)
		}
		if n := c.Stats().Pauses; n != 1 {
			t.Errorf("pauses %d, want 1", n)
		}
	})

	// The census's script is loaded on every node of a cluster (go-redis
	// sends SCRIPT LOAD to each shard), and its EVALSHA goes to the
	// stream's node: both as the docs' user.
	for _, on := range []struct {
		name  string
		start func(t *testing.T) ([]*redistest.Server, redis.UniversalClient, redis.UniversalClient)
	}{
		{"single node", func(t *testing.T) ([]*redistest.Server, redis.UniversalClient, redis.UniversalClient) {
			nodes, admin, rdb := asDocsRenderer(t)
			return nodes, admin, rdb
		}},
		{"cluster", asDocsRendererOnCluster},
	} {
		t.Run("census SCRIPT LOAD and XGROUP DELCONSUMER/"+on.name, func(t *testing.T) {
			nodes, admin, rdb := on.start(t)
			s := stream("acl-idle")
			if err := admin.XGroupCreateMkStream(ctx, s, group, "0").Err(); err != nil {
				t.Fatal(err)
			}
			if err := admin.XGroupCreateConsumer(ctx, s, group, "idler").Err(); err != nil {
				t.Fatal(err)
			}
			add(t, admin, s) // the census looks at the work set, which a stream joins by an entry to read
			cfg := baseConfig(t, rdb, "r1", s)
			cfg.ConsumerMaxIdle = 200 * time.Millisecond
			cfg.Handler = func(context.Context, feed.Message) error { return nil }
			c := mustOpen(t, cfg)
			// A new server has no script loaded: the cleanup's EVALSHA meets
			// NOSCRIPT, the census loads it (SCRIPT LOAD), the next removes.
			waitFor(t, 10*time.Second, "the idle consumer removed, or a refusal", func() bool {
				return c.Stats().ConsumersDeleted == 1 || len(acldocs.Log(t, nodes)) > 0
			})
			wantWalked(t, nodes, "script|load", "xgroup|delconsumer")
		})
	}

	t.Run("dead positions cap ZREMRANGEBYRANK", func(t *testing.T) {
		nodes, admin, rdb := asDocsRenderer(t)
		game := "acl-cap"
		s, dk := stream(game), event.DeadKey(game)
		fillDeadPositions(t, admin, feed.DeadPositionsKey(dk))
		cfg := baseConfig(t, rdb, "r1", s)
		cfg.Handler = func(context.Context, feed.Message) error { return feed.Poison(errors.New("bad entry")) }
		c := mustOpen(t, cfg)
		add(t, admin, s)
		waitFor(t, 10*time.Second, "the entry dead-lettered, or a refusal", func() bool {
			return c.Stats().Dead == 1 || len(acldocs.Log(t, nodes)) > 0
		})
		wantWalked(t, nodes, "zremrangebyrank")
		wantCapped(t, admin, s, dk)
	})

	t.Run("stale dead claim settled", func(t *testing.T) {
		nodes, admin, rdb := asDocsRenderer(t)
		game := "acl-stale"
		s, dk := stream(game), event.DeadKey(game)
		add(t, admin, s)
		// Pending with a stopped writer, which claimed it for its dead
		// letter two minutes ago and wrote none; then acked elsewhere.
		if err := admin.XGroupCreate(ctx, s, group, "0").Err(); err != nil {
			t.Fatal(err)
		}
		read, err := admin.XReadGroup(ctx, &redis.XReadGroupArgs{Group: group, Consumer: "r0", Streams: []string{s, ">"}, Count: 1}).Result()
		if err != nil || len(read) != 1 || len(read[0].Messages) != 1 {
			t.Fatalf("XREADGROUP: %v %v", read, err)
		}
		pos := read[0].Messages[0].ID
		claimAt(t, admin, game, pos, 2*time.Minute)
		if err := ackElsewhere(ctx, admin, s, pos); err != nil {
			t.Fatal(err)
		}
		dead, err := feed.DeadPositions(ctx, rdb, s, dk, []string{pos})
		if err != nil {
			t.Fatalf("DeadPositions as feed-renderer: %v", err)
		}
		if dead[0] {
			t.Errorf("the stale claim of %s, pending nowhere, still reads as dead", pos)
		}
		if err := admin.ZScore(ctx, feed.DeadPositionsKey(dk), pos).Err(); err != redis.Nil {
			t.Errorf("the stale claim of %s kept: %v", pos, err)
		}
		wantWalked(t, nodes, "xinfo|groups", "xpending", "zrem")
	})

	t.Run("dead letter in single-key steps during a slot migration", func(t *testing.T) {
		rc := redistest.MustStartCluster(t, redistest.ClusterOptions{Replicas: -1})
		nodes, admin := rc.Nodes, rc.Client(t)
		acldocs.SetUsers(t, nodes)
		rdb := openAsRenderer(t, rc.Nodes[0].Addr)
		game := "acl-steps"
		s, dk := stream(game), event.DeadKey(game)
		// The positions set full, on the stream's node: the steps' confirm
		// caps it too. The dead stream does not exist: the script over the
		// game's three keys meets TRYAGAIN, and the letter's XADD goes to
		// the importing node by ASK.
		fillDeadPositions(t, admin, feed.DeadPositionsKey(dk))
		cfg := baseConfig(t, rdb, "r1", s)
		cfg.Handler = func(ctx context.Context, m feed.Message) error {
			if m.Payload["bad"] != "" {
				return feed.Poison(errors.New("bad entry"))
			}
			return nil
		}
		c := mustOpen(t, cfg)
		add(t, admin, s)
		waitFor(t, 10*time.Second, "the first entry acked", func() bool { return c.Stats().Acked == 1 })
		acldocs.ResetLog(t, nodes)
		slot := rc.Slot(t, s)
		move := rc.StartSlotMove(t, slot, rc.OtherMaster(t, rc.MasterOfSlot(t, slot)))
		bad := add(t, admin, s, "bad", "yes")
		waitFor(t, 10*time.Second, "the entry dead-lettered during the move, or a refusal", func() bool {
			ds, err := feed.ListDead(ctx, admin, dk, 0)
			return err == nil && len(ds) == 1 && ds[0].EvtID == bad && pending(t, admin, s) == 0 ||
				len(acldocs.Log(t, nodes)) > 0
		})
		wantWalked(t, nodes, "asking", "zremrangebyrank")
		move.Finish(t)
		wantCapped(t, admin, s, dk)
	})
}

// asDocsRenderer starts a server with the users of docs/operations.md's ACL
// rules and returns it (as the nodes to look at), an admin client and a
// client logged in as feed-renderer.
func asDocsRenderer(t *testing.T) ([]*redistest.Server, *redis.Client, redis.UniversalClient) {
	t.Helper()
	srv, admin := mustStart(t)
	nodes := []*redistest.Server{srv}
	acldocs.SetUsers(t, nodes)
	return nodes, admin, openAsRenderer(t, srv.Addr)
}

// asDocsRendererOnCluster is asDocsRenderer on a cluster of three masters:
// the users are set on every node, and the renderer's client is opened at
// one node's address, as an operator's URL names one.
func asDocsRendererOnCluster(t *testing.T) ([]*redistest.Server, redis.UniversalClient, redis.UniversalClient) {
	t.Helper()
	rc := redistest.MustStartCluster(t, redistest.ClusterOptions{Replicas: -1})
	acldocs.SetUsers(t, rc.Nodes)
	return rc.Nodes, rc.Client(t), openAsRenderer(t, rc.Nodes[0].Addr)
}

// openAsRenderer opens a client of addr as the docs' feed-renderer, as the
// renderer opens its own (redisconn: no CLIENT SETINFO, a cluster probed).
func openAsRenderer(t *testing.T, addr string) redis.UniversalClient {
	t.Helper()
	rdb, err := redisconn.Open("redis://feed-renderer:" + acldocs.Password("feed-renderer") + "@" + addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// wantWalked fails t if a node's ACL LOG has an entry, or if the nodes
// together ran none of commands (as INFO commandstats names them): the
// path that sends it was not walked, and the test shows nothing about the
// grant.
func wantWalked(t *testing.T, nodes []*redistest.Server, commands ...string) {
	t.Helper()
	if log := acldocs.Log(t, nodes); len(log) > 0 {
		t.Fatalf("refused to the docs' feed-renderer (docs/operations.md, %q): ACL LOG\n%s", acldocs.Section, strings.Join(log, "\n"))
	}
	for _, cmd := range commands {
		var n int64
		for _, node := range nodes {
			n += commandCalls(t, node.Client(t))[cmd]
		}
		if n == 0 {
			t.Errorf("no node ran %s: its path was not walked", strings.ToUpper(cmd))
		}
	}
}

// fillDeadPositions fills the dead positions set key to its cap with
// positions an hour old, inside the horizon: the next one recorded is one
// too many.
func fillDeadPositions(t *testing.T, admin redis.UniversalClient, key string) {
	t.Helper()
	ms := float64(time.Now().Add(-time.Hour).UnixMilli())
	const page = 10000
	for i := 0; i < feed.DeadPosMax; i += page {
		zs := make([]redis.Z, 0, page)
		for j := i; j < min(i+page, feed.DeadPosMax); j++ {
			zs = append(zs, redis.Z{Score: ms, Member: fmt.Sprintf("%d-%d", int64(ms), j)})
		}
		if err := admin.ZAdd(context.Background(), key, zs...).Err(); err != nil {
			t.Fatal(err)
		}
	}
}

// wantCapped fails t unless stream s's one dead letter (in dk) has its
// position recorded and the positions set is at its cap.
func wantCapped(t *testing.T, admin redis.UniversalClient, s, dk string) {
	t.Helper()
	ctx := context.Background()
	ds, err := feed.ListDead(ctx, admin, dk, 0)
	if err != nil || len(ds) != 1 {
		t.Fatalf("dead letters %+v, %v; want one", ds, err)
	}
	pk := feed.DeadPositionsKey(dk)
	if score, err := admin.ZScore(ctx, pk, ds[0].StreamID).Result(); err != nil || score < 0 {
		t.Errorf("position %s scored %v (%v): want its milliseconds", ds[0].StreamID, score, err)
	}
	if n, err := admin.ZCard(ctx, pk).Result(); err != nil || n != feed.DeadPosMax {
		t.Errorf("dead positions %d (%v), want the cap, %d", n, err, feed.DeadPosMax)
	}
	if n := pending(t, admin, s); n != 0 {
		t.Errorf("%d pending after the dead letter", n)
	}
}
