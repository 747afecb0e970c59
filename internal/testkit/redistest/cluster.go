package redistest

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/internal/proc"
)

// Cluster is a local Redis Cluster owned by a test: masters, each with its
// replicas, made by `redis-cli --cluster create` from the server binary
// Binary chooses. Its helpers cause what a cluster does in production — a
// graceful failover, a master that dies, a slot that moves — and wait until
// every live node agrees on the result.
type Cluster struct {
	// Nodes are every node, masters first as created; a node's role changes
	// with failovers (see Masters, ReplicaOf).
	Nodes []*Server

	pc *proc.Cluster // the same nodes
}

// ClusterOptions configure a Cluster.
type ClusterOptions struct {
	Masters  int           // default 3
	Replicas int           // replicas per master; default 1
	Node     Options       // options of every node (Cluster is set)
	Timeout  time.Duration // how long to wait for cluster_state:ok (default 30s)
}

// MaxClusterPort is the highest port a cluster node may take: its cluster
// bus listens on port+10000, which must stay a valid port.
const MaxClusterPort = proc.MaxClusterPort

// clusterSlots is the number of hash slots of Redis Cluster.
const clusterSlots = 16384

// MustStartCluster starts a cluster of 3 masters, each with one replica (or
// as opts say), waits until every node reports cluster_state:ok, and stops
// every node when the test ends.
func MustStartCluster(tb testing.TB, opts ...ClusterOptions) *Cluster {
	tb.Helper()
	var o ClusterOptions
	if len(opts) > 0 {
		o = opts[0]
	}
	c, err := startCluster(tb.TempDir(), o)
	if c != nil {
		tb.Cleanup(c.Close)
	}
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

func startCluster(dir string, o ClusterOptions) (*Cluster, error) {
	if o.Replicas < 0 {
		o.Replicas = 0
	} else if o.Replicas == 0 {
		o.Replicas = 1
	}
	if o.Timeout <= 0 {
		o.Timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.Timeout)
	defer cancel()
	pc, err := proc.StartCluster(ctx, dir, proc.ClusterOptions{Masters: o.Masters, Replicas: o.Replicas, Node: o.Node})
	c := &Cluster{pc: pc}
	if pc != nil {
		for _, r := range pc.Nodes {
			c.Nodes = append(c.Nodes, &Server{r})
		}
	}
	if err != nil {
		return c, err
	}
	// proc waits for cluster_state:ok; tests also need every node to agree
	// on the slot map and every replica linked.
	if err := c.waitStable(ctx, len(c.Nodes)-len(c.Nodes)/(1+o.Replicas)); err != nil {
		return c, err
	}
	return c, nil
}

// Stop kills every node; the data stays in their directories, and their
// ports stay reserved for them.
func (c *Cluster) Stop() {
	for _, s := range c.Nodes {
		s.Stop()
	}
}

// Close kills every node and releases their ports (proc.Reserve).
func (c *Cluster) Close() {
	for _, s := range c.Nodes {
		s.Close()
	}
}

// Addrs returns the host:port of every node, masters first as created.
func (c *Cluster) Addrs() []string { return c.pc.Addrs() }

// URL returns go-redis's cluster URL of the cluster,
// redis://h1:p1?addr=h2:p2&addr=h3:p3, naming every node.
func (c *Cluster) URL() string { return c.pc.URL() }

// Client returns a cluster client of the cluster, closed when the test ends.
func (c *Cluster) Client(tb testing.TB) *redis.ClusterClient {
	tb.Helper()
	opt := &redis.ClusterOptions{Addrs: c.Addrs(), ContextTimeoutEnabled: true}
	if len(c.Nodes) > 0 {
		opt.TLSConfig = c.Nodes[0].options(tb).TLSConfig
	}
	cc := redis.NewClusterClient(opt)
	tb.Cleanup(func() { cc.Close() })
	return cc
}

// Node returns the node listening on addr, or nil.
func (c *Cluster) Node(addr string) *Server {
	for _, s := range c.Nodes {
		if s.Addr == addr {
			return s
		}
	}
	return nil
}

// nodeClient is a short-lived direct client of one node.
func nodeClient(s *Server) *redis.Client {
	opt, err := s.ClientOptions()
	if err != nil {
		// The node's TLS files went away: every call of this client
		// fails with that error.
		opt = &redis.Options{Addr: s.Addr, Dialer: func(context.Context, string, string) (net.Conn, error) { return nil, err }}
	}
	opt.MaxRetries, opt.ContextTimeoutEnabled = -1, true
	opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout = time.Second, 2*time.Second, 2*time.Second
	return redis.NewClient(opt)
}

// do runs one command on one node.
func do(ctx context.Context, s *Server, args ...any) (any, error) {
	rc := nodeClient(s)
	defer rc.Close()
	return rc.Do(ctx, args...).Result()
}

// info returns the fields of INFO section (or CLUSTER INFO when section is
// "cluster-info") of one node.
func info(ctx context.Context, s *Server, args ...any) (map[string]string, error) {
	v, err := do(ctx, s, args...)
	if err != nil {
		return nil, err
	}
	str, _ := v.(string)
	out := map[string]string{}
	for _, line := range strings.Split(str, "\n") {
		if k, val, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			out[k] = val
		}
	}
	return out, nil
}

// live returns the nodes whose process runs.
func (c *Cluster) live() []*Server {
	var out []*Server
	for _, s := range c.Nodes {
		if s.Pid() != 0 {
			out = append(out, s)
		}
	}
	return out
}

// NodeID returns a node's cluster node id.
func (c *Cluster) NodeID(tb testing.TB, s *Server) string {
	tb.Helper()
	id, err := nodeID(context.Background(), s)
	if err != nil {
		tb.Fatal(err)
	}
	return id
}

func nodeID(ctx context.Context, s *Server) (string, error) {
	v, err := do(ctx, s, "cluster", "myid")
	if err != nil {
		return "", fmt.Errorf("redistest: cluster myid on %s: %w", s.Addr, err)
	}
	id, _ := v.(string)
	return id, nil
}

// role returns "master" or "slave" and, for a replica, its master's address.
func role(ctx context.Context, s *Server) (string, string, error) {
	m, err := info(ctx, s, "info", "replication")
	if err != nil {
		return "", "", err
	}
	if m["role"] == "slave" {
		return "slave", net.JoinHostPort(m["master_host"], m["master_port"]), nil
	}
	return m["role"], "", nil
}

// Masters returns the live nodes that are masters now.
func (c *Cluster) Masters(tb testing.TB) []*Server {
	tb.Helper()
	var out []*Server
	for _, s := range c.live() {
		r, _, err := role(context.Background(), s)
		if err != nil {
			tb.Fatalf("redistest: role of %s: %v", s.Addr, err)
		}
		if r == "master" {
			out = append(out, s)
		}
	}
	return out
}

// OtherMaster returns a live master other than not, the first that
// Masters lists (a slot's new home in a move, say), or fails tb when
// there is none. Servers are compared by address, so not may come from
// MasterOfSlot or Masters alike.
func (c *Cluster) OtherMaster(tb testing.TB, not *Server) *Server {
	tb.Helper()
	for _, m := range c.Masters(tb) {
		if m.Addr != not.Addr {
			return m
		}
	}
	tb.Fatalf("redistest: no live master other than %s", not.Addr)
	return nil
}

// ReplicaOf returns a live replica of master, or fails tb.
func (c *Cluster) ReplicaOf(tb testing.TB, master *Server) *Server {
	tb.Helper()
	for _, s := range c.live() {
		r, of, err := role(context.Background(), s)
		if err == nil && r == "slave" && of == master.Addr {
			return s
		}
	}
	tb.Fatalf("redistest: %s has no live replica", master.Addr)
	return nil
}

// Slot returns the hash slot of key (CLUSTER KEYSLOT).
func (c *Cluster) Slot(tb testing.TB, key string) int {
	tb.Helper()
	v, err := do(context.Background(), c.live()[0], "cluster", "keyslot", key)
	if err != nil {
		tb.Fatalf("redistest: cluster keyslot %s: %v", key, err)
	}
	n, _ := v.(int64)
	return int(n)
}

// MasterOfSlot returns the node that serves slot now, as the live nodes
// agree (call after a helper has waited for them to agree).
func (c *Cluster) MasterOfSlot(tb testing.TB, slot int) *Server {
	tb.Helper()
	owners, err := c.slotOwners(context.Background(), c.live()[0])
	if err != nil {
		tb.Fatal(err)
	}
	s := c.Node(owners[slot])
	if s == nil {
		tb.Fatalf("redistest: slot %d is served by %q, not a node of this cluster", slot, owners[slot])
	}
	return s
}

// slotOwners returns, as seen by node s, the address of the master that
// serves each slot ("" when none does).
func (c *Cluster) slotOwners(ctx context.Context, s *Server) ([]string, error) {
	rc := nodeClient(s)
	defer rc.Close()
	slots, err := rc.ClusterSlots(ctx).Result()
	if err != nil {
		return nil, fmt.Errorf("redistest: cluster slots on %s: %w", s.Addr, err)
	}
	owners := make([]string, clusterSlots)
	for _, r := range slots {
		if len(r.Nodes) == 0 {
			continue
		}
		for i := r.Start; i <= r.End && i < clusterSlots; i++ {
			owners[i] = r.Nodes[0].Addr
		}
	}
	return owners, nil
}

// WaitStable waits until every live node reports cluster_state:ok, they all
// agree on which master serves each of the 16384 slots, and each of those
// masters knows itself to be one.
func (c *Cluster) WaitStable(tb testing.TB) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.waitStable(ctx, 0); err != nil {
		tb.Fatal(err)
	}
}

// WaitReplicas is WaitStable that also waits until n replicas report their
// link to their master up (after a killed node was started again, say).
func (c *Cluster) WaitReplicas(tb testing.TB, n int) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.waitStable(ctx, n); err != nil {
		tb.Fatal(err)
	}
}

// waitStable is WaitStable; with replicas > 0 it also waits until that many
// replicas report their link to their master up.
func (c *Cluster) waitStable(ctx context.Context, replicas int) error {
	var last string
	for {
		ok, why := c.stable(ctx, replicas)
		if ok {
			return nil
		}
		last = why
		select {
		case <-ctx.Done():
			return fmt.Errorf("redistest: cluster not stable: %s", last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (c *Cluster) stable(ctx context.Context, replicas int) (bool, string) {
	var want []string
	linked := 0
	for _, s := range c.live() {
		ci, err := info(ctx, s, "cluster", "info")
		if err != nil {
			return false, err.Error()
		}
		if ci["cluster_state"] != "ok" {
			return false, s.Addr + ": cluster_state:" + ci["cluster_state"]
		}
		owners, err := c.slotOwners(ctx, s)
		if err != nil {
			return false, err.Error()
		}
		if want == nil {
			want = owners
		} else if !slices.Equal(want, owners) {
			return false, s.Addr + " disagrees on the slot map"
		}
		rep, err := info(ctx, s, "info", "replication")
		if err != nil {
			return false, err.Error()
		}
		if rep["role"] == "slave" && rep["master_link_status"] == "up" {
			linked++
		}
	}
	masters := map[string]bool{}
	for _, a := range want {
		if a == "" {
			return false, "a slot has no master"
		}
		masters[a] = true
	}
	for a := range masters {
		s := c.Node(a)
		if s == nil || s.Pid() == 0 {
			return false, "slot master " + a + " is not running"
		}
		if r, _, err := role(ctx, s); err != nil || r != "master" {
			return false, a + " serves slots but is not a master yet"
		}
	}
	if linked < replicas {
		return false, fmt.Sprintf("%d of %d replicas linked", linked, replicas)
	}
	return true, ""
}

func lastBytes(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
