package redisconn_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/internal/redisconn"
	"github.com/codemojex/feed/internal/testkit/redistest"
	"github.com/codemojex/feed/internal/testkit/wait"
)

// TestOpenForms: every form of -redis gives the right kind of client, and
// the client works across slots.
func TestOpenForms(t *testing.T) {
	single := redistest.MustStart(t)
	c := redistest.MustStartCluster(t)
	tests := []struct {
		name    string
		url     string
		cluster bool
		wantErr string
	}{
		{"single node", single.URL(), false, ""},
		{"cluster URL", c.URL(), true, ""},
		{"plain URL of a cluster master", "redis://" + c.Nodes[0].Addr, true, ""},
		{"plain URL of a cluster replica", "redis://" + c.Nodes[len(c.Nodes)-1].Addr + "/0", true, ""},
		{"cluster node with a database", "redis://" + c.Nodes[1].Addr + "/2", false, "only database 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rdb, err := redisconn.Open(tt.url)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Open(%q) = %v; want an error saying %q", tt.url, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer rdb.Close()
			cc, isCluster := rdb.(*redis.ClusterClient)
			if isCluster != tt.cluster {
				t.Fatalf("Open(%q) = %T, want cluster %v", tt.url, rdb, tt.cluster)
			}
			if isCluster && !cc.Options().ContextTimeoutEnabled {
				t.Errorf("cluster client without ContextTimeoutEnabled")
			}
			ctx := context.Background()
			for i := range 20 { // 20 games land on every master
				key := fmt.Sprintf("codemojex:{g-%d}:events", i)
				if err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: key, Values: []string{"k", "v"}}).Err(); err != nil {
					t.Fatalf("XADD %s: %v", key, err)
				}
			}
		})
	}
}

// TestOpenClusterFollowsFailover: a client from Open keeps writing through
// a graceful failover and the SIGKILL of the master it writes to.
func TestOpenClusterFollowsFailover(t *testing.T) {
	c := redistest.MustStartCluster(t)
	rdb, err := redisconn.Open("redis://" + c.Nodes[0].Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	key := "codemojex:{failover}:events"
	n := 0
	write := func(what string) {
		t.Helper()
		wait.For(t, 30*time.Second, "a write to succeed "+what, func() bool {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			return rdb.XAdd(ctx, &redis.XAddArgs{Stream: key, Values: []string{"n", fmt.Sprint(n)}}).Err() == nil
		})
		n++
	}
	write("at start")
	slot := c.Slot(t, key)
	c.Failover(t, c.MasterOfSlot(t, slot))
	write("after a failover")
	c.KillMaster(t, c.MasterOfSlot(t, slot))
	write("after its master was killed")
}

// TestOpenClusterRefusesCredentials: a cluster URL (addr=) whose nodes
// refuse its credentials fails the start, as a single node's does; until
// 7 Dec 2026 only a rediss:// cluster URL was asked at start, and a plain
// one with a wrong password gave a client whose every call failed.
func TestOpenClusterRefusesCredentials(t *testing.T) {
	c := redistest.MustStartCluster(t, redistest.ClusterOptions{Replicas: -1})
	for _, n := range c.Nodes {
		if err := n.Client(t).Do(context.Background(), "ACL", "SETUSER", "feeder", "on", ">right", "~*", "&*", "+@all").Err(); err != nil {
			t.Fatal(err)
		}
	}
	url := "redis://feeder:s3cret@" + c.Nodes[0].Addr + "?addr=" + c.Nodes[1].Addr
	wantOpenRefused(t, url, "WRONGPASS", "the cluster refuses the URL's user", "Redis refuses the renderer")
	rdb, err := redisconn.Open("redis://feeder:right@" + c.Nodes[0].Addr + "?addr=" + c.Nodes[1].Addr)
	if err != nil {
		t.Fatalf("Open with the right password: %v", err)
	}
	defer rdb.Close()
	if _, ok := rdb.(*redis.ClusterClient); !ok {
		t.Fatalf("Open = %T, want a cluster client", rdb)
	}
}
