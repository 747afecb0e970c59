package redistest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// The faults a test can cause on a Cluster: what a cluster goes through in
// production, each waited on until every live node agrees on the result.

// Failover makes a replica of master take its place gracefully (CLUSTER
// FAILOVER on the replica), waits until the cluster is stable with the
// replica as master, and returns the new master. The old master becomes
// its replica.
func (c *Cluster) Failover(tb testing.TB, master *Server) *Server {
	tb.Helper()
	replica := c.ReplicaOf(tb, master)
	ctx := context.Background()
	if _, err := do(ctx, replica, "cluster", "failover"); err != nil {
		tb.Fatalf("redistest: cluster failover on %s: %v", replica.Addr, err)
	}
	c.waitMaster(tb, replica)
	return replica
}

// KillMaster SIGKILLs master, waits until one of its replicas has taken its
// slots and the surviving nodes agree, and returns the new master. The
// killed node stays down; Server.Start brings it back as a replica.
func (c *Cluster) KillMaster(tb testing.TB, master *Server) *Server {
	tb.Helper()
	replica := c.ReplicaOf(tb, master)
	master.Kill(tb)
	c.waitMaster(tb, replica)
	return replica
}

// waitMaster waits until s is a master and the cluster is stable.
func (c *Cluster) waitMaster(tb testing.TB, s *Server) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		if r, _, err := role(ctx, s); err == nil && r == "master" {
			break
		}
		select {
		case <-ctx.Done():
			tb.Fatalf("redistest: %s did not become a master within 30s", s.Addr)
		case <-time.After(50 * time.Millisecond):
		}
	}
	if err := c.waitStable(ctx, 0); err != nil {
		tb.Fatal(err)
	}
}

// MoveSlot moves slot, with its keys, to the master to, by hand as
// `redis-cli --cluster reshard` does: SETSLOT IMPORTING on the target,
// SETSLOT MIGRATING on the source, MIGRATE of the slot's keys, then SETSLOT
// NODE on every master. It waits until the cluster is stable and returns
// the number of keys moved.
func (c *Cluster) MoveSlot(tb testing.TB, slot int, to *Server) int {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n, err := c.moveSlot(ctx, slot, to)
	if err != nil {
		tb.Fatal(err)
	}
	if err := c.waitStable(ctx, 0); err != nil {
		tb.Fatal(err)
	}
	return n
}

func (c *Cluster) moveSlot(ctx context.Context, slot int, to *Server) (int, error) {
	owners, err := c.slotOwners(ctx, to)
	if err != nil {
		return 0, err
	}
	from := c.Node(owners[slot])
	if from == nil {
		return 0, fmt.Errorf("redistest: slot %d has no master", slot)
	}
	if from == to {
		return 0, fmt.Errorf("redistest: slot %d is on %s already", slot, to.Addr)
	}
	fromID, err := nodeID(ctx, from)
	if err != nil {
		return 0, err
	}
	toID, err := nodeID(ctx, to)
	if err != nil {
		return 0, err
	}
	if _, err := do(ctx, to, "cluster", "setslot", slot, "importing", fromID); err != nil {
		return 0, fmt.Errorf("redistest: setslot %d importing on %s: %w", slot, to.Addr, err)
	}
	if _, err := do(ctx, from, "cluster", "setslot", slot, "migrating", toID); err != nil {
		return 0, fmt.Errorf("redistest: setslot %d migrating on %s: %w", slot, from.Addr, err)
	}
	moved := 0
	for {
		v, err := do(ctx, from, "cluster", "getkeysinslot", slot, 100)
		if err != nil {
			return moved, fmt.Errorf("redistest: getkeysinslot %d: %w", slot, err)
		}
		keys, _ := v.([]any)
		if len(keys) == 0 {
			break
		}
		args := []any{"migrate", to.Host(), to.Port, "", 0, 5000, "keys"}
		args = append(args, keys...)
		if _, err := do(ctx, from, args...); err != nil {
			return moved, fmt.Errorf("redistest: migrate slot %d from %s to %s: %w (%s)", slot, from.Addr, to.Addr, err, whereKeys(ctx, keys, from, to))
		}
		moved += len(keys)
	}
	// The target first, so that it owns the slot before the source starts
	// redirecting there; then the source and every other master.
	order := []*Server{to, from}
	for _, s := range c.live() {
		if s != to && s != from {
			order = append(order, s)
		}
	}
	for _, s := range order {
		if r, _, err := role(ctx, s); err != nil || r != "master" {
			continue
		}
		if _, err := do(ctx, s, "cluster", "setslot", slot, "node", toID); err != nil {
			return moved, fmt.Errorf("redistest: setslot %d node on %s: %w", slot, s.Addr, err)
		}
	}
	return moved, nil
}

// whereKeys describes, for a failed MIGRATE, each key's type and length on
// both nodes: a BUSYKEY names no key, and the chaos run that meets one
// cannot be rerun to look.
func whereKeys(ctx context.Context, keys []any, nodes ...*Server) string {
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%v:", k)
		for _, n := range nodes {
			typ, err := do(ctx, n, "type", k)
			if err != nil {
				typ = err.Error()
			}
			fmt.Fprintf(&b, " %s %v", n.Addr, typ)
			if typ == "stream" {
				if l, err := do(ctx, n, "xlen", k); err == nil {
					fmt.Fprintf(&b, " of %v", l)
				}
			}
		}
	}
	return b.String()
}
