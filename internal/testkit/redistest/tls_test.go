package redistest_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/internal/testkit/redistest"
)

// TestStartTLS: a TLS server speaks TLS only, with a certificate of the
// test's CA: its URL is rediss://, the kit's client (which trusts the CA)
// works, and a plain-text client on its port gets no answer.
func TestStartTLS(t *testing.T) {
	ctx := context.Background()
	s := redistest.MustStartTLS(t, redistest.NewCA(t))
	if !strings.HasPrefix(s.URL(), "rediss://") {
		t.Errorf("URL() = %q, want rediss://", s.URL())
	}
	c := s.Client(t)
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("SET over TLS: %v", err)
	}
	plain := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1, DialerRetries: 1})
	defer plain.Close()
	if err := plain.Ping(ctx).Err(); err == nil {
		t.Fatalf("a plain-text PING to the TLS port %s was answered", s.Addr)
	}
	s.Restart(t) // started again with TLS
	if got, err := c.Exists(ctx, "k").Result(); err != nil || got != 0 {
		t.Fatalf("after a restart without AOF: EXISTS k = %d, %v; want 0, nil", got, err)
	}
}

// TestStartTLSCluster: a cluster of TLS nodes (bus and replication over
// TLS too) reaches cluster_state:ok, announces its TLS ports, and the
// kit's cluster client writes on every master.
func TestStartTLSCluster(t *testing.T) {
	ca := redistest.NewCA(t)
	c := redistest.MustStartCluster(t, redistest.ClusterOptions{Replicas: -1, Node: redistest.Options{TLS: ca.TLSFiles(t, "no")}})
	if !strings.HasPrefix(c.URL(), "rediss://") {
		t.Errorf("URL() = %q, want rediss://", c.URL())
	}
	if n := len(c.Masters(t)); n != 3 {
		t.Fatalf("%d masters, want 3", n)
	}
	cc := c.Client(t)
	ctx := context.Background()
	for i := range 20 { // 20 games land on every master
		key := fmt.Sprintf("codemojex:{g-%d}:events", i)
		if err := cc.XAdd(ctx, &redis.XAddArgs{Stream: key, Values: []string{"k", "v"}}).Err(); err != nil {
			t.Fatalf("XADD %s: %v", key, err)
		}
	}
	slots, err := cc.ClusterSlots(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range slots {
		if c.Node(r.Nodes[0].Addr) == nil {
			t.Errorf("CLUSTER SLOTS announces %s for slots %d-%d, not a node's TLS port", r.Nodes[0].Addr, r.Start, r.End)
		}
	}
}
