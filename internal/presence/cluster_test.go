package presence_test

import (
	"context"
	"maps"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/internal/presence"
	"github.com/codemojex/feed/internal/testkit/redistest"
	"github.com/codemojex/feed/internal/testkit/wait"
)

// mustStartCluster forms a three-node Redis Cluster (no replicas) of
// servers this test starts, and returns a cluster client of it.
func mustStartCluster(tb testing.TB) *redis.ClusterClient {
	tb.Helper()
	ctx := context.Background()
	var nodes []*redistest.Server
	for range 3 {
		nodes = append(nodes, redistest.MustStart(tb, redistest.Options{Cluster: true}))
	}
	for i, n := range nodes {
		c := n.Client(tb)
		lo, hi := i*16384/3, (i+1)*16384/3-1
		if err := c.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", lo, hi).Err(); err != nil {
			tb.Fatalf("addslots: %v", err)
		}
		if i > 0 {
			if err := c.ClusterMeet(ctx, "127.0.0.1", strconv.Itoa(nodes[0].Port)).Err(); err != nil {
				tb.Fatalf("meet: %v", err)
			}
		}
	}
	wait.For(tb, 20*time.Second, "the cluster to be ok on every node", func() bool {
		for _, n := range nodes {
			info, err := n.Client(tb).ClusterInfo(ctx).Result()
			if err != nil || !strings.Contains(info, "cluster_state:ok") {
				return false
			}
		}
		return true
	})
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{nodes[0].Addr}, ContextTimeoutEnabled: true})
	tb.Cleanup(func() { cc.Close() })
	return cc
}

// Presence works on a Redis Cluster whose keys sit in different slots:
// every command touches one key.
func TestSyncOnCluster(t *testing.T) {
	cc := mustStartCluster(t)
	ra, rb := "a-1", "b-2"
	slots := map[int64]bool{}
	for _, k := range []string{event.PresenceKey(ra), event.PresenceKey(rb), event.PresenceReplicasKey} {
		s, err := cc.ClusterKeySlot(context.Background(), k).Result()
		if err != nil {
			t.Fatal(err)
		}
		slots[s] = true
	}
	if len(slots) < 2 {
		t.Fatalf("the keys share a slot: the test proves nothing")
	}
	const ttl = 3 * time.Second // the counting checks cannot see a count expire
	a := mustNew(t, presence.Config{Client: cc, Replica: ra, TTL: ttl})
	b := mustNew(t, presence.Config{Client: cc, Replica: rb, TTL: ttl})
	mustSync(t, a, map[string]int{"g1": 2})
	if got, want := mustSync(t, b, map[string]int{"g1": 1}), map[string]int{"g1": 2}; !maps.Equal(got, want) {
		t.Fatalf("b sees %v, want %v", got, want)
	}
	if got, want := mustSync(t, a, map[string]int{"g1": 2}), map[string]int{"g1": 1}; !maps.Equal(got, want) {
		t.Fatalf("a sees %v, want %v", got, want)
	}
	wait.For(t, ttl+5*time.Second, "b to expire", func() bool { return len(mustSync(t, a, map[string]int{"g1": 2})) == 0 })
	if err := a.Leave(context.Background()); err != nil {
		t.Fatal(err)
	}
}
