package proc

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// MaxClusterPort is the highest port a cluster node may take: its cluster
// bus listens on port+10000, which must stay a valid port.
const MaxClusterPort = 55535

// Cluster is a local Redis Cluster made by `redis-cli --cluster create`:
// feedbench's, and the test kit's (internal/testkit/redistest wraps it with
// faults and stricter waits).
type Cluster struct {
	Nodes []*Redis // every node, masters first, in creation order
}

// ClusterOptions configure StartCluster.
type ClusterOptions struct {
	Masters  int          // default 3
	Replicas int          // replicas per master (default 0)
	Node     RedisOptions // options of every node (Cluster is set)
}

// StartCluster starts opts.Masters × (1 + opts.Replicas) cluster nodes,
// each with its data in a new directory under dir, joins them with
// redis-cli (the first Masters nodes become the masters) and waits until
// every node reports cluster_state:ok. On error it returns what it started
// along with the error, for the caller to stop.
func StartCluster(ctx context.Context, dir string, opts ClusterOptions) (*Cluster, error) {
	if opts.Masters < 1 {
		opts.Masters = 3
	}
	opts.Replicas = max(opts.Replicas, 0)
	opts.Node.Cluster = true
	bin, err := RedisBinary()
	if err != nil {
		return nil, err
	}
	cli, err := RedisCLI(bin)
	if err != nil {
		return nil, err
	}
	c := &Cluster{}
	for i := range opts.Masters * (1 + opts.Replicas) {
		d := filepath.Join(dir, "node-"+strconv.Itoa(i))
		if err := os.MkdirAll(d, 0o755); err != nil {
			return c, fmt.Errorf("proc: cluster: %w", err)
		}
		s, err := StartClusterNode(bin, d, opts.Node)
		if err != nil {
			return c, err
		}
		c.Nodes = append(c.Nodes, s)
	}
	args := opts.Node.TLS.cliArgs()
	args = append(args, "--cluster", "create")
	args = append(args, c.Addrs()...)
	args = append(args, "--cluster-replicas", strconv.Itoa(opts.Replicas), "--cluster-yes")
	if out, err := exec.CommandContext(ctx, cli, args...).CombinedOutput(); err != nil {
		return c, fmt.Errorf("proc: %s --cluster create: %v\n%s", filepath.Base(cli), err, tail(out))
	}
	if err := c.waitOK(ctx, 30*time.Second); err != nil {
		return c, err
	}
	return c, nil
}

// StartClusterNode starts the server bin as one cluster node (opts.Cluster
// is set) on a free port whose bus port (port+10000) is free too, both
// reserved for it until Close (Reserve), with its data under dir.
func StartClusterNode(bin, dir string, opts RedisOptions) (*Redis, error) {
	opts.Cluster = true
	return startReserved(bin, dir, opts)
}

func portFree(port int) bool {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return false
	}
	l.Close()
	return true
}

// waitOK waits until every node reports cluster_state:ok.
func (c *Cluster) waitOK(ctx context.Context, timeout time.Duration) error {
	clients := make([]*redis.Client, len(c.Nodes))
	for i, s := range c.Nodes {
		opt, err := s.ClientOptions()
		if err != nil {
			return err
		}
		opt.MaxRetries = -1
		clients[i] = redis.NewClient(opt)
		defer clients[i].Close()
	}
	last := ""
	_, err := Poll(ctx, timeout, "cluster_state:ok on every node", func() (bool, error) {
		for i, rc := range clients {
			info, err := rc.ClusterInfo(ctx).Result()
			if err != nil || !strings.Contains(info, "cluster_state:ok") {
				last = c.Nodes[i].Addr
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("%w (last not ok: %s)", err, last)
	}
	return nil
}

// Addrs returns every node's host:port.
func (c *Cluster) Addrs() []string {
	out := make([]string, len(c.Nodes))
	for i, s := range c.Nodes {
		out[i] = s.Addr
	}
	return out
}

// URL returns go-redis's cluster URL naming every node,
// redis://h1:p1?addr=h2:p2&addr=h3:p3 (rediss:// for a TLS cluster).
func (c *Cluster) URL() string {
	var b strings.Builder
	scheme := "redis://"
	if c.Nodes[0].TLS() != nil {
		scheme = "rediss://"
	}
	b.WriteString(scheme + c.Nodes[0].Addr)
	for i, s := range c.Nodes[1:] {
		sep := "&"
		if i == 0 {
			sep = "?"
		}
		b.WriteString(sep + "addr=" + s.Addr)
	}
	return b.String()
}

// Pids returns the process ids of the running nodes.
func (c *Cluster) Pids() []int {
	var out []int
	for _, s := range c.Nodes {
		if p := s.Pid(); p != 0 {
			out = append(out, p)
		}
	}
	return out
}

// Stop kills every node; the data and the ports' reservations stay.
func (c *Cluster) Stop() {
	for _, s := range c.Nodes {
		s.Stop()
	}
}

// Close kills every node and releases their ports' reservations.
func (c *Cluster) Close() {
	for _, s := range c.Nodes {
		s.Close()
	}
}
