package feed_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/feed"
	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/internal/testkit/redistest"
)

// commandCounter is a go-redis hook that counts the commands its client
// sends, by name, pipelined ones included: what one call costs Redis,
// whatever the other clients of the server do meanwhile.
type commandCounter struct {
	mu sync.Mutex
	n  map[string]int
}

func (h *commandCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *commandCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.count(cmd)
		return next(ctx, cmd)
	}
}

func (h *commandCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, c := range cmds {
			h.count(c)
		}
		return next(ctx, cmds)
	}
}

func (h *commandCounter) count(cmd redis.Cmder) {
	if n := cmd.Name(); n == "hello" || n == "client" {
		return // a new connection's handshake, not the call's
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.n[cmd.Name()]++
}

// take returns the counts since the last take and starts again.
func (h *commandCounter) take() map[string]int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := h.n
	h.n = map[string]int{}
	return n
}

func total(n map[string]int) int {
	t := 0
	for _, v := range n {
		t += v
	}
	return t
}

// TestLiveLeasesCostFollowsRenderers: the status's list of live renderers
// (Inspect's Renderers) costs the same whatever the keyspace holds. It
// SCANned the whole keyspace for the lease keys (COUNT 100): an Inspect of
// 200 games sent 2 SCANs with 200 games in Redis and 202 with 20,200, for
// a page refreshed every 2 s. It now reads the group's index of leases
// and confirms each name's lease key: the same commands at both sizes.
func TestLiveLeasesCostFollowsRenderers(t *testing.T) {
	ctx := context.Background()
	srv, admin := mustStart(t)
	var streams []string
	for i := range 200 {
		s := stream(fmt.Sprintf("cost-%d", i))
		add(t, admin, s)
		streams = append(streams, s)
	}
	cfg := baseConfig(t, admin, "r1", streams[0])
	cfg.Handler = func(context.Context, feed.Message) error { return nil }
	mustOpen(t, cfg)

	counter := &commandCounter{n: map[string]int{}}
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr})
	rdb.AddHook(counter)
	t.Cleanup(func() { rdb.Close() })
	inspect := func() map[string]int {
		t.Helper()
		counter.take()
		st, err := feed.Inspect(ctx, rdb, group, streams, nil)
		if err != nil {
			t.Fatalf("inspect: %v", err)
		}
		if !slices.Equal(st.Renderers, []string{"r1"}) {
			t.Errorf("renderers %v; want [r1]", st.Renderers)
		}
		return counter.take()
	}

	small := inspect()
	// 20,000 more games ever played: streams the status does not show.
	for lo := 0; lo < 20000; lo += 1000 {
		pipe := admin.Pipeline()
		for i := lo; i < lo+1000; i++ {
			pipe.XAdd(ctx, &redis.XAddArgs{Stream: stream(fmt.Sprintf("old-%d", i)), Values: []any{"id", "x"}})
		}
		if _, err := pipe.Exec(ctx); err != nil {
			t.Fatalf("xadd: %v", err)
		}
	}
	if n := admin.DBSize(ctx).Val(); n < 20200 {
		t.Fatalf("keyspace holds %d keys; want at least 20,200", n)
	}
	large := inspect()
	t.Logf("commands of one Inspect of 200 games: %d with 200 games in Redis (scan %d), %d with 20,200 (scan %d): %v, %v",
		total(small), small["scan"], total(large), large["scan"], small, large)
	if total(large) != total(small) || large["scan"] != small["scan"] {
		t.Errorf("one Inspect of 200 games sent %d commands (%d SCAN) with 200 games in Redis and %d (%d SCAN) with 20,200; want the same",
			total(small), small["scan"], total(large), large["scan"])
	}
}

// TestLiveLeasesLeaveOnReleaseAndExpiry: a renderer leaves the list of live
// renderers when it closes (its release drops its name from the index at
// once) and when its holder dies (its lease expires; the next lease
// script of the group drops the name from the index). A lease key that
// is not indexed (a renderer of an older version) is not listed.
func TestLiveLeasesLeaveOnReleaseAndExpiry(t *testing.T) {
	ctx := context.Background()
	_, rdb := mustStart(t)
	s := stream("leave")
	add(t, rdb, s)
	renderers := func() []string {
		t.Helper()
		st, err := feed.Inspect(ctx, rdb, group, []string{s}, nil)
		if err != nil {
			t.Fatalf("inspect: %v", err)
		}
		return st.Renderers
	}
	open := func(name string) *feed.Consumer {
		cfg := baseConfig(t, rdb, name, s)
		cfg.Handler = func(context.Context, feed.Message) error { return nil }
		return mustOpen(t, cfg)
	}
	r1 := open("r1")
	open("r2")
	const killedTTL = 500 * time.Millisecond
	if err := feed.AcquireLeaseOnly(ctx, rdb, group, "killed", killedTTL); err != nil {
		t.Fatalf("lease of the holder to kill: %v", err)
	}
	if err := rdb.Set(ctx, event.LeaseKey(group, "older"), "older-renderer", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	if got := renderers(); !slices.Equal(got, []string{"killed", "r1", "r2"}) {
		t.Errorf("renderers %v; want [killed r1 r2] (an older renderer's lease, not indexed, is not listed)", got)
	}
	if ttl := rdb.PTTL(ctx, event.LeasesKey(group)).Val(); ttl <= 0 {
		t.Errorf("index of leases PTTL %v; want it to expire with the group's last lease", ttl)
	}

	r1.Close()
	if got := renderers(); !slices.Equal(got, []string{"killed", "r2"}) {
		t.Errorf("renderers after r1 closed: %v; want [killed r2]", got)
	}
	if err := rdb.ZScore(ctx, event.LeasesKey(group), "r1").Err(); err != redis.Nil {
		t.Errorf("r1 still in the index after its release: %v", err)
	}

	// The killed holder never refreshes: its name leaves the list once its
	// lease expires, and the index once r2's next refresh prunes it.
	waitFor(t, 5*time.Second, "the killed holder to leave the renderers", func() bool {
		return slices.Equal(renderers(), []string{"r2"})
	})
	waitFor(t, 5*time.Second, "the killed holder's name pruned from the index", func() bool {
		return rdb.ZScore(ctx, event.LeasesKey(group), "killed").Err() == redis.Nil
	})
	if n := rdb.ZCard(ctx, event.LeasesKey(group)).Val(); n != 1 {
		t.Errorf("index holds %d names; want 1 (r2)", n)
	}
}

// TestClusterLeasesSlotMigrating: while the leases' slot migrates, its
// keys split between two masters, the renderers are still listed. Their
// SCAN of every master was for that; the index and the lease keys are
// now read by name and the cluster client follows the source's ASK.
func TestClusterLeasesSlotMigrating(t *testing.T) {
	ctx := context.Background()
	rc := redistest.MustStartCluster(t, redistest.ClusterOptions{Replicas: -1,
		Node: redistest.Options{NodeTimeout: noFailover}})
	rdb := rc.Client(t)
	cfg := baseConfig(t, rdb, "c1")
	cfg.LeaseTTL = 10 * time.Second // held through the test whatever its refreshes meet
	cfg.Handler = func(context.Context, feed.Message) error { return nil }
	mustOpen(t, cfg)
	renderers := func(when string) {
		t.Helper()
		st, err := feed.Inspect(ctx, rdb, group, nil, nil)
		if err != nil || !slices.Equal(st.Renderers, []string{"c1"}) {
			t.Errorf("%s: renderers %v (%v); want [c1]", when, st.Renderers, err)
		}
	}
	renderers("before the move")

	index, lease := event.LeasesKey(group), event.LeaseKey(group, "c1")
	slot := rc.Slot(t, index)
	from := rc.MasterOfSlot(t, slot)
	to := rc.Masters(t)[slices.IndexFunc(rc.Masters(t), func(s *redistest.Server) bool { return s.Addr != from.Addr })]
	src, dst := from.Client(t), to.Client(t)
	if err := dst.Do(ctx, "cluster", "setslot", slot, "importing", rc.NodeID(t, from)).Err(); err != nil {
		t.Fatal(err)
	}
	if err := src.Do(ctx, "cluster", "setslot", slot, "migrating", rc.NodeID(t, to)).Err(); err != nil {
		t.Fatal(err)
	}
	migrate := func(key string) {
		t.Helper()
		if err := src.Do(ctx, "migrate", to.Host(), to.Port, "", 0, 5000, "keys", key).Err(); err != nil {
			t.Fatalf("migrate %s: %v", key, err)
		}
	}
	migrate(index)
	renderers("the index moved, the lease not yet")
	migrate(lease)
	renderers("both moved, the slot still the source's")
	rc.MoveSlot(t, slot, to)
	renderers("after the move")
}
