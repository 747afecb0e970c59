package redistest

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/internal/proc"
)

// Sentinel is a Redis master with its replicas (--replicaof) watched by
// Redis Sentinels (redis-server sentinel.conf --sentinel), all owned by a
// test: the high availability of a single Redis, where the Sentinels
// promote a replica when the master dies and tell clients where the
// master is now. Every process is a real server on a reserved port of its
// own (proc.Reserve), each with its own writable directory.
type Sentinel struct {
	// Name is the master's name, as the Sentinels monitor it and a
	// client asks for it (master_name= in the URL).
	Name string
	// Nodes are the data nodes, the first master first; roles change
	// with failovers (see Master).
	Nodes []*Server
	// Sentinels are the Sentinel processes.
	Sentinels []*Server
}

// SentinelOptions configure a Sentinel.
type SentinelOptions struct {
	Name      string        // the master's name; default "feedmaster"
	Replicas  int           // default 1
	Sentinels int           // default 3; the quorum is their majority
	DownAfter time.Duration // down-after-milliseconds; default 1s
	// FailoverTimeout is the Sentinels' failover-timeout (default 5s):
	// a failover that stalls is tried again after twice as long.
	FailoverTimeout time.Duration
	Node            Options // options of every data node
	// SentinelConf is more of every Sentinel's sentinel.conf, after the
	// monitor lines: its own ACL users (user NAME …), or sentinel
	// auth-user and auth-pass for a master whose default user is off.
	// The kit itself talks to the Sentinels as their default user, or
	// as SentinelUser.
	SentinelConf string
	// SentinelUser and SentinelPassword are what the kit logs in to the
	// Sentinels as, when SentinelConf closes them to the default user
	// (user default off, requirepass). The kit logs in to the data nodes
	// as Node.User and Node.Password.
	SentinelUser, SentinelPassword string
	// SentinelTLS are the Sentinels' own TLS files, when they are not
	// Node.TLS's (a Sentinel of a TLS set speaks TLS whichever).
	SentinelTLS *TLSFiles
	Timeout     time.Duration // how long to wait for the set to be ready (default 30s)
}

// MustStartSentinel starts a master, its replicas and the Sentinels that
// watch it (one replica and three Sentinels unless opts say otherwise),
// waits until every replica is linked and in sync and every Sentinel
// knows the master, its replicas and the other Sentinels (so that a
// failover can be voted), and stops every process when the test ends.
func MustStartSentinel(tb testing.TB, opts ...SentinelOptions) *Sentinel {
	tb.Helper()
	var o SentinelOptions
	if len(opts) > 0 {
		o = opts[0]
	}
	s, err := startSentinel(tb.TempDir(), o)
	tb.Cleanup(s.Close)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

func startSentinel(dir string, o SentinelOptions) (*Sentinel, error) {
	if o.Name == "" {
		o.Name = "feedmaster"
	}
	if o.Replicas <= 0 {
		o.Replicas = 1
	}
	if o.Sentinels <= 0 {
		o.Sentinels = 3
	}
	if o.DownAfter <= 0 {
		o.DownAfter = time.Second
	}
	if o.FailoverTimeout <= 0 {
		o.FailoverTimeout = 5 * time.Second
	}
	if o.Timeout <= 0 {
		o.Timeout = 30 * time.Second
	}
	s := &Sentinel{Name: o.Name}
	start := func(name string, opts Options) (*Server, error) {
		d := filepath.Join(dir, name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("redistest: sentinel set: %w", err)
		}
		r, err := proc.StartRedis(d, opts)
		if err != nil {
			return nil, fmt.Errorf("redistest: sentinel set: %s: %w", name, err)
		}
		return &Server{r}, nil
	}
	master, err := start("master", o.Node)
	if err != nil {
		return s, err
	}
	s.Nodes = append(s.Nodes, master)
	for i := range o.Replicas {
		opts := o.Node
		opts.ReplicaOf = master.Addr
		r, err := start("replica-"+strconv.Itoa(i), opts)
		if err != nil {
			return s, err
		}
		s.Nodes = append(s.Nodes, r)
	}
	conf := fmt.Sprintf("sentinel monitor %[1]s %[2]s %[3]d %[4]d\n"+
		"sentinel down-after-milliseconds %[1]s %[5]d\n"+
		"sentinel failover-timeout %[1]s %[6]d\n"+
		"sentinel parallel-syncs %[1]s 1\n",
		o.Name, master.Host(), master.Port, o.Sentinels/2+1, o.DownAfter.Milliseconds(), o.FailoverTimeout.Milliseconds())
	if o.SentinelConf != "" {
		conf += strings.TrimSuffix(o.SentinelConf, "\n") + "\n"
	}
	for i := range o.Sentinels {
		// A TLS set's Sentinels speak TLS only too, and to the data
		// nodes over TLS (tls-replication, proc.TLSFiles).
		tlsFiles := o.Node.TLS
		if o.SentinelTLS != nil {
			tlsFiles = o.SentinelTLS
		}
		sn, err := start("sentinel-"+strconv.Itoa(i), Options{Sentinel: conf, TLS: tlsFiles,
			User: o.SentinelUser, Password: o.SentinelPassword})
		if err != nil {
			return s, err
		}
		s.Sentinels = append(s.Sentinels, sn)
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.Timeout)
	defer cancel()
	return s, s.waitReady(ctx, master)
}

// Stop kills every process; the data and the Sentinels' files stay, and
// the ports stay reserved.
func (s *Sentinel) Stop() {
	for _, n := range append(s.Sentinels, s.Nodes...) {
		n.Stop()
	}
}

// Close kills every process and releases their ports (proc.Reserve).
func (s *Sentinel) Close() {
	for _, n := range append(s.Sentinels, s.Nodes...) {
		n.Close()
	}
}

// SentinelAddrs returns the host:port of every Sentinel.
func (s *Sentinel) SentinelAddrs() []string {
	out := make([]string, len(s.Sentinels))
	for i, n := range s.Sentinels {
		out[i] = n.Addr
	}
	return out
}

// URL returns go-redis's Sentinel URL of the set, naming every Sentinel:
// redis://s1:p1?master_name=NAME&addr=s2:p2&addr=s3:p3, rediss:// for a
// TLS set.
func (s *Sentinel) URL() string {
	addrs := s.SentinelAddrs()
	scheme := "redis://"
	if s.Sentinels[0].TLS() != nil {
		scheme = "rediss://"
	}
	var b strings.Builder
	b.WriteString(scheme + addrs[0] + "?master_name=" + s.Name)
	for _, a := range addrs[1:] {
		b.WriteString("&addr=" + a)
	}
	return b.String()
}

// Client returns a failover client of the set (go-redis's, which asks the
// Sentinels where the master is), closed when the test ends.
func (s *Sentinel) Client(tb testing.TB) *redis.Client {
	tb.Helper()
	sn, err := s.Sentinels[0].ClientOptions()
	if err != nil {
		tb.Fatal(err)
	}
	node, err := s.Nodes[0].ClientOptions()
	if err != nil {
		tb.Fatal(err)
	}
	opt := &redis.FailoverOptions{MasterName: s.Name, SentinelAddrs: s.SentinelAddrs(), ContextTimeoutEnabled: true,
		SentinelUsername: sn.Username, SentinelPassword: sn.Password, Username: node.Username, Password: node.Password}
	if t := s.Sentinels[0].TLS(); t != nil {
		if opt.TLSConfig, err = t.ClientTLS(); err != nil {
			tb.Fatal(err)
		}
	}
	c := redis.NewFailoverClient(opt)
	tb.Cleanup(func() { c.Close() })
	return c
}

// Node returns the data node listening on addr, or nil.
func (s *Sentinel) Node(addr string) *Server {
	for _, n := range s.Nodes {
		if n.Addr == addr {
			return n
		}
	}
	return nil
}

// Master returns the data node that every live Sentinel names as the
// master and that reports itself one, waiting for them to agree.
func (s *Sentinel) Master(tb testing.TB) *Server {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	m, err := s.waitMaster(ctx, nil)
	if err != nil {
		tb.Fatal(err)
	}
	return m
}

// Replicas returns the live data nodes other than the current master.
func (s *Sentinel) Replicas(tb testing.TB) []*Server {
	tb.Helper()
	m := s.Master(tb)
	var out []*Server
	for _, n := range s.Nodes {
		if n != m && n.Pid() != 0 {
			out = append(out, n)
		}
	}
	return out
}

// WaitReplicated waits until every live replica of the current master has
// every write the master acknowledged so far (its replication offset), so
// that a kill of the master that follows loses none of them. A writer that
// must not lose a write to a failover says so itself with WAIT; this is
// for writes made without it (a gamesim run).
func (s *Sentinel) WaitReplicated(tb testing.TB) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	m := s.Master(tb)
	mi, err := info(ctx, m, "info", "replication")
	if err != nil {
		tb.Fatalf("redistest: info replication on %s: %v", m.Addr, err)
	}
	want, _ := strconv.ParseInt(mi["master_repl_offset"], 10, 64)
	for _, r := range s.Replicas(tb) {
		var last map[string]string
		err := poll(ctx, func() (bool, error) {
			last, err = info(ctx, r, "info", "replication")
			got, _ := strconv.ParseInt(last["slave_repl_offset"], 10, 64)
			return err == nil && last["master_link_status"] == "up" && got >= want, nil
		})
		if err != nil {
			tb.Fatalf("redistest: replica %s has not replicated %s's offset %d: %v (%v)", r.Addr, m.Addr, want, err, last)
		}
	}
}

// KillMaster SIGKILLs the current master and waits until the Sentinels
// have promoted a replica: every live Sentinel names it, it reports
// itself master, and every other live replica follows it. It returns the
// killed node (which stays down; Server.Start brings it back, and the
// Sentinels then make it a replica) and the new master.
//
// Nothing is paused before the kill: what the master acknowledged but had
// not yet sent to a replica is lost, as in production (Redis replicates
// asynchronously). Call WaitReplicated first, or write with WAIT, to keep
// a test's writes.
func (s *Sentinel) KillMaster(tb testing.TB) (killed, promoted *Server) {
	tb.Helper()
	killed = s.Master(tb)
	killed.Kill(tb)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	promoted, err := s.waitMaster(ctx, killed)
	if err != nil {
		tb.Fatalf("redistest: after the kill of master %s: %v", killed.Addr, err)
	}
	if err := s.waitFollowers(ctx, promoted); err != nil {
		tb.Fatalf("redistest: after %s took over from %s: %v", promoted.Addr, killed.Addr, err)
	}
	return killed, promoted
}

// waitReady waits until every replica is linked to master and in sync,
// and every Sentinel names master, knows every replica and every other
// Sentinel, and flags nothing down.
func (s *Sentinel) waitReady(ctx context.Context, master *Server) error {
	if err := s.waitFollowers(ctx, master); err != nil {
		return err
	}
	var why string
	err := poll(ctx, func() (bool, error) {
		for _, sn := range s.Sentinels {
			m, err := sentinelMaster(ctx, sn, s.Name)
			if err != nil {
				why = err.Error()
				return false, nil
			}
			addr := net.JoinHostPort(m["ip"], m["port"])
			switch {
			case addr != master.Addr:
				why = fmt.Sprintf("sentinel %s names master %s, want %s", sn.Addr, addr, master.Addr)
			case m["flags"] != "master":
				why = fmt.Sprintf("sentinel %s flags the master %q", sn.Addr, m["flags"])
			case m["num-slaves"] != strconv.Itoa(len(s.Nodes)-1):
				why = fmt.Sprintf("sentinel %s knows %s replicas of %d", sn.Addr, m["num-slaves"], len(s.Nodes)-1)
			case m["num-other-sentinels"] != strconv.Itoa(len(s.Sentinels)-1):
				why = fmt.Sprintf("sentinel %s knows %s other sentinels of %d", sn.Addr, m["num-other-sentinels"], len(s.Sentinels)-1)
			default:
				continue
			}
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("redistest: sentinel set not ready: %w: %s", err, why)
	}
	return nil
}

// waitMaster waits until every live Sentinel names the same data node as
// the master, other than not (nil for any), and that node reports itself
// master.
func (s *Sentinel) waitMaster(ctx context.Context, not *Server) (*Server, error) {
	var found *Server
	var why string
	err := poll(ctx, func() (bool, error) {
		found = nil
		for _, sn := range s.Sentinels {
			if sn.Pid() == 0 {
				continue
			}
			addr, err := masterAddr(ctx, sn, s.Name)
			if err != nil {
				why = err.Error()
				return false, nil
			}
			n := s.Node(addr)
			switch {
			case n == nil:
				return false, fmt.Errorf("sentinel %s names master %s, no node of this set", sn.Addr, addr)
			case n == not:
				why = fmt.Sprintf("sentinel %s still names %s", sn.Addr, addr)
				return false, nil
			case found != nil && found != n:
				why = fmt.Sprintf("sentinels disagree: %s and %s", found.Addr, n.Addr)
				return false, nil
			}
			found = n
		}
		if found == nil {
			why = "no live sentinel"
			return false, nil
		}
		if r, _, err := role(ctx, found); err != nil || r != "master" {
			why = fmt.Sprintf("the sentinels name %s, which is not a master yet (%s, %v)", found.Addr, r, err)
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		return nil, fmt.Errorf("redistest: no master agreed on: %w: %s", err, why)
	}
	return found, nil
}

// waitFollowers waits until every live data node other than master is its
// replica, linked and in sync.
func (s *Sentinel) waitFollowers(ctx context.Context, master *Server) error {
	var why string
	err := poll(ctx, func() (bool, error) {
		for _, n := range s.Nodes {
			if n == master || n.Pid() == 0 {
				continue
			}
			rep, err := info(ctx, n, "info", "replication")
			if err != nil {
				why = err.Error()
				return false, nil
			}
			of := net.JoinHostPort(rep["master_host"], rep["master_port"])
			if rep["role"] != "slave" || of != master.Addr || rep["master_link_status"] != "up" || rep["master_sync_in_progress"] != "0" {
				why = fmt.Sprintf("%s: role %s of %s, link %s, sync in progress %s",
					n.Addr, rep["role"], of, rep["master_link_status"], rep["master_sync_in_progress"])
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("redistest: replicas of %s: %w: %s", master.Addr, err, why)
	}
	return nil
}

// masterAddr asks one Sentinel where the master is (SENTINEL
// get-master-addr-by-name).
func masterAddr(ctx context.Context, sn *Server, name string) (string, error) {
	v, err := do(ctx, sn, "sentinel", "get-master-addr-by-name", name)
	if err != nil {
		return "", fmt.Errorf("sentinel %s: get-master-addr-by-name %s: %w", sn.Addr, name, err)
	}
	hp, ok := v.([]any)
	if !ok || len(hp) != 2 {
		return "", fmt.Errorf("sentinel %s: get-master-addr-by-name %s: %v", sn.Addr, name, v)
	}
	return net.JoinHostPort(fmt.Sprint(hp[0]), fmt.Sprint(hp[1])), nil
}

// sentinelMaster returns one Sentinel's state of the master (SENTINEL
// MASTER).
func sentinelMaster(ctx context.Context, sn *Server, name string) (map[string]string, error) {
	v, err := do(ctx, sn, "sentinel", "master", name)
	if err != nil {
		return nil, fmt.Errorf("sentinel %s: master %s: %w", sn.Addr, name, err)
	}
	out := map[string]string{}
	switch v := v.(type) {
	case []any: // RESP2: field, value, …
		for i := 0; i+1 < len(v); i += 2 {
			out[fmt.Sprint(v[i])] = fmt.Sprint(v[i+1])
		}
	case map[any]any: // RESP3
		for k, val := range v {
			out[fmt.Sprint(k)] = fmt.Sprint(val)
		}
	default:
		return nil, fmt.Errorf("sentinel %s: master %s: %T", sn.Addr, name, v)
	}
	return out, nil
}

// poll calls cond every 50 ms until it returns true or an error, or ctx
// ends.
func poll(ctx context.Context, cond func() (bool, error)) error {
	for {
		ok, err := cond()
		if err != nil || ok {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("timed out: %w", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}
