package redistest

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
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
//
// The replica is first waited on until its link to master is up with no
// sync in progress. The kill tests the feed across a failover; a replica
// promoted before its first full sync would hold another master's data,
// a loss of Redis's own making. It happens when replica migration has just
// given master a replica taken from another master (cluster nodes here
// take over however long they were cut off: validity factor 0): seen in
// TestRedisCluster's long form, where the next slot move then met the
// stale keys (BUSYKEY). Then master's writes are paused until the replica
// holds every one it acknowledged (waitCaughtUp), for the same reason: the
// kill tests the feed, not Redis's asynchronous replication.
func (c *Cluster) KillMaster(tb testing.TB, master *Server) *Server {
	tb.Helper()
	replica := c.ReplicaOf(tb, master)
	c.waitSynced(tb, replica)
	c.waitCaughtUp(tb, master, replica)
	master.Kill(tb)
	c.waitMaster(tb, replica)
	return replica
}

// waitCaughtUp pauses master's writes (CLIENT PAUSE WRITE: a writer's
// commands wait, they do not fail) and waits until replica has taken every
// write master acknowledged. Replication is asynchronous: killed a moment
// after it acknowledged an XADD, a master takes the entry with it, while a
// consumer may have read it already, and its line then has no entry in the
// promoted replica's stream: a loss of Redis's own making, which
// TestRedisCluster's long form met once (the store held one line more than
// the stream). The writer's paused commands meet the kill, as a kill
// mid-write does.
func (c *Cluster) waitCaughtUp(tb testing.TB, master, replica *Server) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := do(ctx, master, "client", "pause", 30000, "write"); err != nil {
		tb.Fatalf("redistest: client pause on %s: %v", master.Addr, err)
	}
	for {
		m, err := info(ctx, master, "info", "replication")
		r, rerr := info(ctx, replica, "info", "replication")
		if err == nil && rerr == nil && m["master_repl_offset"] != "" && m["master_repl_offset"] == r["slave_repl_offset"] {
			return
		}
		select {
		case <-ctx.Done():
			tb.Fatalf("redistest: replica %s not caught up with %s within 30s: %v %v %v %v", replica.Addr, master.Addr, m, err, r, rerr)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// waitSynced waits until replica reports its link to its master up and
// no sync in progress.
func (c *Cluster) waitSynced(tb testing.TB, replica *Server) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		rep, err := info(ctx, replica, "info", "replication")
		if err == nil && rep["master_link_status"] == "up" && rep["master_sync_in_progress"] == "0" {
			return
		}
		select {
		case <-ctx.Done():
			tb.Fatalf("redistest: replica %s not in sync within 30s: %v %v", replica.Addr, rep, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
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
	return c.StartSlotMove(tb, slot, to).Finish(tb)
}

// SlotMove is a slot move under way (StartSlotMove): the slot is importing
// on the target and migrating on the source, and its keys stay on the
// source until Migrate or Finish moves them. Between the two, the slot's
// keys are split over both nodes, as between two of `redis-cli --cluster
// reshard`'s MIGRATE batches or during a long one: a command over keys of
// both nodes is refused with TRYAGAIN, one over a moved key alone is sent
// on with ASK.
type SlotMove struct {
	c        *Cluster
	slot     int
	from, to *Server
	toID     string
	moved    int
	replaced []string
}

// StartSlotMove starts moving slot to the master to: SETSLOT IMPORTING on
// the target, then SETSLOT MIGRATING on the source. Its keys are not moved
// yet.
func (c *Cluster) StartSlotMove(tb testing.TB, slot int, to *Server) *SlotMove {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	m, err := c.startSlotMove(ctx, slot, to)
	if err != nil {
		tb.Fatal(err)
	}
	return m
}

// Migrate moves keys, of the slot, to the target (MIGRATE … KEYS).
func (m *SlotMove) Migrate(tb testing.TB, keys ...string) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	args := make([]any, len(keys))
	for i, k := range keys {
		args[i] = k
	}
	if err := m.migrate(ctx, args); err != nil {
		tb.Fatal(err)
	}
}

// Finish moves the slot's keys left on the source, then gives the slot to
// the target (SETSLOT NODE on every master), waits until the cluster is
// stable and returns the number of keys the whole move moved.
func (m *SlotMove) Finish(tb testing.TB) int {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := m.finish(ctx)
	if len(m.replaced) > 0 {
		tb.Logf("redistest: slot %d: the target already held an identical copy of %s; moved with REPLACE", m.slot, strings.Join(m.replaced, ", "))
	}
	if err != nil {
		tb.Fatal(err)
	}
	if err := m.c.waitStable(ctx, 0); err != nil {
		tb.Fatal(err)
	}
	return m.moved
}

func (c *Cluster) moveSlot(ctx context.Context, slot int, to *Server) (moved int, replaced []string, err error) {
	m, err := c.startSlotMove(ctx, slot, to)
	if err != nil {
		return 0, nil, err
	}
	err = m.finish(ctx)
	return m.moved, m.replaced, err
}

func (c *Cluster) startSlotMove(ctx context.Context, slot int, to *Server) (*SlotMove, error) {
	owners, err := c.slotOwners(ctx, to)
	if err != nil {
		return nil, err
	}
	from := c.Node(owners[slot])
	if from == nil {
		return nil, fmt.Errorf("redistest: slot %d has no master", slot)
	}
	if from == to {
		return nil, fmt.Errorf("redistest: slot %d is on %s already", slot, to.Addr)
	}
	fromID, err := nodeID(ctx, from)
	if err != nil {
		return nil, err
	}
	toID, err := nodeID(ctx, to)
	if err != nil {
		return nil, err
	}
	if _, err := do(ctx, to, "cluster", "setslot", slot, "importing", fromID); err != nil {
		return nil, fmt.Errorf("redistest: setslot %d importing on %s: %w", slot, to.Addr, err)
	}
	if _, err := do(ctx, from, "cluster", "setslot", slot, "migrating", toID); err != nil {
		return nil, fmt.Errorf("redistest: setslot %d migrating on %s: %w", slot, from.Addr, err)
	}
	return &SlotMove{c: c, slot: slot, from: from, to: to, toID: toID}, nil
}

// migrate moves keys from the source to the target.
func (m *SlotMove) migrate(ctx context.Context, keys []any) error {
	from, to := m.from, m.to
	args := []any{"migrate", to.Host(), to.Port, "", 0, 5000, "keys"}
	_, err := do(ctx, from, append(args, keys...)...)
	if err != nil && strings.Contains(err.Error(), "BUSYKEY") {
		// As redis-cli --cluster does: a key already on the target
		// with the same value (a MIGRATE whose RESTORE went through
		// but whose reply was lost, retried by the source) moves with
		// REPLACE; a different value is an error, described.
		same, cmpErr := sameOnBoth(ctx, keys, from, to)
		if cmpErr != nil {
			err = fmt.Errorf("%w; %w", err, cmpErr)
		} else {
			args = []any{"migrate", to.Host(), to.Port, "", 0, 5000, "replace", "keys"}
			_, err = do(ctx, from, append(args, keys...)...)
			m.replaced = append(m.replaced, same...)
		}
	}
	if err != nil {
		return fmt.Errorf("redistest: migrate slot %d from %s to %s: %w (%s)", m.slot, from.Addr, to.Addr, err, whereKeys(ctx, keys, from, to))
	}
	m.moved += len(keys)
	return nil
}

// finish moves the keys left on the source, 100 a MIGRATE, and gives the
// slot to the target.
func (m *SlotMove) finish(ctx context.Context) error {
	for {
		v, err := do(ctx, m.from, "cluster", "getkeysinslot", m.slot, 100)
		if err != nil {
			return fmt.Errorf("redistest: getkeysinslot %d: %w", m.slot, err)
		}
		keys, _ := v.([]any)
		if len(keys) == 0 {
			break
		}
		if err := m.migrate(ctx, keys); err != nil {
			return err
		}
	}
	// The target first, so that it owns the slot before the source starts
	// redirecting there; then the source and every other master.
	order := []*Server{m.to, m.from}
	for _, s := range m.c.live() {
		if s != m.to && s != m.from {
			order = append(order, s)
		}
	}
	for _, s := range order {
		if r, _, err := role(ctx, s); err != nil || r != "master" {
			continue
		}
		if _, err := do(ctx, s, "cluster", "setslot", m.slot, "node", m.toID); err != nil {
			return fmt.Errorf("redistest: setslot %d node on %s: %w", m.slot, s.Addr, err)
		}
	}
	return nil
}

// keyOn is key's type and DUMP on node s, read after ASKING: the slot may
// be importing there, and a plain read would answer MOVED.
func keyOn(ctx context.Context, s *Server, key any) (typ, dump string, err error) {
	t, err := askDo(ctx, s, "type", key)
	if err != nil {
		return "", "", err
	}
	d, err := askDo(ctx, s, "dump", key)
	if err != nil && !errors.Is(err, redis.Nil) {
		return "", "", err
	}
	typ, _ = t.(string)
	dump, _ = d.(string)
	return typ, dump, nil
}

// sameOnBoth returns the keys that exist on both nodes, and an error
// unless each has the same value on both.
func sameOnBoth(ctx context.Context, keys []any, from, to *Server) ([]string, error) {
	var both []string
	for _, k := range keys {
		_, a, err := keyOn(ctx, from, k)
		if err != nil {
			return nil, err
		}
		typ, b, err := keyOn(ctx, to, k)
		if err != nil {
			return nil, err
		}
		if typ == "none" {
			continue
		}
		if a != b {
			return nil, fmt.Errorf("redistest: %v differs on %s and %s", k, from.Addr, to.Addr)
		}
		both = append(both, fmt.Sprint(k))
	}
	return both, nil
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
			typ, dump, err := keyOn(ctx, n, k)
			if err != nil {
				typ = err.Error()
			}
			fmt.Fprintf(&b, " %s %v", n.Addr, typ)
			if typ != "none" && err == nil {
				fmt.Fprintf(&b, " (DUMP %d bytes, crc %08x)", len(dump), crc32.ChecksumIEEE([]byte(dump)))
			}
			if typ == "stream" {
				if v, err := askDo(ctx, n, "xinfo", "stream", k); err == nil {
					fmt.Fprintf(&b, " %v", streamSummary(v))
				}
			}
		}
	}
	return b.String()
}

// askDo runs one command on node s after ASKING.
func askDo(ctx context.Context, s *Server, args ...any) (any, error) {
	rc := nodeClient(s)
	defer rc.Close()
	cn := rc.Conn()
	defer cn.Close()
	var cmd *redis.Cmd
	if _, err := cn.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Do(ctx, "asking")
		cmd = p.Do(ctx, args...)
		return nil
	}); err != nil {
		return nil, err
	}
	return cmd.Result()
}

// streamSummary picks length, last id and first and last entry ids from
// an XINFO STREAM reply.
func streamSummary(v any) string {
	var parts []string
	switch m := v.(type) {
	case map[any]any:
		for _, f := range []string{"length", "last-generated-id", "entries-added"} {
			parts = append(parts, fmt.Sprintf("%s=%v", f, m[f]))
		}
	case []any:
		for i := 0; i+1 < len(m); i += 2 {
			switch m[i] {
			case "length", "last-generated-id", "entries-added":
				parts = append(parts, fmt.Sprintf("%v=%v", m[i], m[i+1]))
			}
		}
	}
	return "[" + strings.Join(parts, " ") + "]"
}
