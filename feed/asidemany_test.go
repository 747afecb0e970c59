package feed_test

import (
	"context"
	"net"
	"syscall"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/feed"
	"github.com/codemojex/feed/internal/testkit/redistest"
)

// TestClusterSetAsideManyStreamsOneWalk: with 100,000 known games and the
// 300 of them on one master failing one call each in a turn (checkAcks,
// checkDeads, a census page), the streams of that master are walked once
// per node retry, not once per failing stream. Each setAsideNode walked
// every known stream (a map walk and a MasterForKey per slot), so the 300
// calls cost 300 walks of 100,000 streams, seconds of the loop goroutine
// in the turn in which a master died.
func TestClusterSetAsideManyStreamsOneWalk(t *testing.T) {
	rc := redistest.MustStartCluster(t, redistest.ClusterOptions{Replicas: -1})
	cc := rc.Client(t)
	if err := cc.ForEachMaster(t.Context(), func(ctx context.Context, m *redis.Client) error { return m.Ping(ctx).Err() }); err != nil {
		t.Fatal(err)
	}
	dead := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	const n, k = 100_000, 300
	first, rest, held, onNode, walks := feed.SetAsideMany(cc, n, k, dead)
	t.Logf("%d setAsideKey calls over %d known streams: the first %v, the %d others %v; %d walks; %d held of the %d on the node",
		k, n, first, k-1, rest, walks, held, onNode)
	if held != onNode {
		t.Errorf("held %d streams, want every one of the node's %d", held, onNode)
	}
	// The first call walks the known streams; the others, within the
	// node's retry, must not walk them again (before: each did, 300 walks,
	// 5.4 s here). Counted, not timed: speed lives in benchmarks.
	if walks != 1 {
		t.Errorf("the known streams were walked %d times for %d failing streams of one node, want once per node retry", walks, k)
	}
}
