package proc_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/internal/proc"
	"github.com/codemojex/feed/internal/redisconn"
)

// TestStartCluster forms a 3-master cluster and writes keys that hash to
// every master through a client opened from the cluster's URL.
func TestStartCluster(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := proc.StartCluster(ctx, t.TempDir(), proc.ClusterOptions{})
	if c != nil {
		defer c.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	if got := len(c.Pids()); got != 3 {
		t.Fatalf("%d nodes running, want 3", got)
	}
	for _, s := range c.Nodes {
		if s.Port > proc.MaxClusterPort {
			t.Errorf("node port %d above %d", s.Port, proc.MaxClusterPort)
		}
		// The bus port is reserved with the node's.
		if release, err := proc.Reserve(s.Port + 10000); !errors.Is(err, proc.ErrPortReserved) {
			if err == nil {
				release()
			}
			t.Errorf("Reserve(%d), node %s's bus port: %v, want ErrPortReserved", s.Port+10000, s.Addr, err)
		}
	}
	rdb, err := redisconn.Open(c.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	cc, ok := rdb.(*redis.ClusterClient)
	if !ok {
		t.Fatalf("redisconn.Open(%q) = %T, want a cluster client", c.URL(), rdb)
	}
	for i := range 30 {
		if err := cc.Set(ctx, fmt.Sprintf("k%d", i), i, 0).Err(); err != nil {
			t.Fatalf("set k%d: %v", i, err)
		}
	}
	var masters atomic.Int32 // ForEachMaster calls fn concurrently
	err = cc.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
		size, err := n.DBSize(ctx).Result()
		if size > 0 {
			masters.Add(1)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := masters.Load(); n != 3 {
		t.Errorf("keys landed on %d masters, want 3", n)
	}
}
