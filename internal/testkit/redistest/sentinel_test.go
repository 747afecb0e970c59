package redistest_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/codemojex/feed/internal/testkit/redistest"
	"github.com/codemojex/feed/internal/testkit/wait"
)

// TestSentinel drives one Sentinel set through what the kit offers: a
// master with two replicas and three Sentinels that agree on it, writes
// through go-redis's failover client, the master SIGKILLed, and a replica
// promoted that the other follows. What was replicated before the kill is
// read after it through the same client, which then writes on.
func TestSentinel(t *testing.T) {
	ctx := context.Background()
	s := redistest.MustStartSentinel(t, redistest.SentinelOptions{Replicas: 2})
	if len(s.Nodes) != 3 || len(s.Sentinels) != 3 {
		t.Fatalf("%d nodes and %d sentinels, want 3 and 3", len(s.Nodes), len(s.Sentinels))
	}
	first := s.Master(t)
	if first != s.Nodes[0] {
		t.Fatalf("master %s, want the first node %s", first.Addr, s.Nodes[0].Addr)
	}
	rdb := s.Client(t)
	const key = "codemojex:kit:sentinel"
	for i := range 10 {
		if err := rdb.RPush(ctx, key, fmt.Sprint(i)).Err(); err != nil {
			t.Fatal(err)
		}
	}
	s.WaitReplicated(t)

	killed, promoted := s.KillMaster(t)
	if killed != first || promoted == first || promoted.Pid() == 0 {
		t.Fatalf("killed %s, promoted %s; want %s killed and a live replica promoted", killed.Addr, promoted.Addr, first.Addr)
	}
	if got := s.Master(t); got != promoted {
		t.Fatalf("master after the kill: %s, want %s", got.Addr, promoted.Addr)
	}
	if r := s.Replicas(t); len(r) != 1 {
		t.Fatalf("%d live replicas after the kill, want 1", len(r))
	}
	// The client learns the new master from the Sentinels on its next
	// dial: the first calls may still meet the dead one.
	wait.For(t, 30*time.Second, "a write through the failover client after the kill", func() bool {
		c, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		return rdb.RPush(c, key, "after").Err() == nil
	})
	got, err := rdb.LRange(ctx, key, 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 11 || got[0] != "0" || got[9] != "9" || got[10] != "after" {
		t.Fatalf("after the failover the list holds %q; want 0…9 and after", got)
	}
}
