package feed_test

import (
	"context"
	"net"
	"strings"
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

// TestClusterACLRefusalHoldsItsStreamOnly: a command the server's ACL
// refuses (NOPERM: a grant missing, or a game's key outside the user's
// patterns; the node answered) sets aside the refused stream alone, to be
// tried again at its own retry, not every stream of its master as a node
// that did not answer does. Until 7 Dec 2026 each refusal (an XACK, a
// census page, a dead letter refused for one game) held every game of
// that master until the node's PING answered.
func TestClusterACLRefusalHoldsItsStreamOnly(t *testing.T) {
	rc := redistest.MustStartCluster(t, redistest.ClusterOptions{Replicas: -1})
	cc := rc.Client(t)
	if err := cc.ForEachMaster(t.Context(), func(ctx context.Context, m *redis.Client) error { return m.Ping(ctx).Err() }); err != nil {
		t.Fatal(err)
	}
	// A real refusal, as the server words it.
	srv, admin := mustStart(t)
	refused := userWithout(t, srv, admin, "-xack").XAck(t.Context(), stream("aclheld"), group, "0-1").Err()
	if refused == nil || !strings.HasPrefix(refused.Error(), "NOPERM") {
		t.Fatalf("XACK as a user without +xack: %v, want NOPERM", refused)
	}
	_, _, held, onNode, walks := feed.SetAsideMany(cc, 60, 1, refused)
	if held != 1 || walks != 0 {
		t.Errorf("a refused stream held %d of the %d streams of its master (%d walks), want itself alone", held, onNode, walks)
	}
}
