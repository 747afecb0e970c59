package redisconn_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/internal/redisconn"
	"github.com/codemojex/feed/internal/testkit/redistest"
)

// TestOpenAsACLUser: Open of a plain URL whose user the server's ACL holds
// to a few commands. Granted CLUSTER SLOTS (and not INFO, in @dangerous),
// the probe finds a cluster node and the client writes on every master,
// and it finds a single node one; the ACL log of every node stays empty.
// Refused CLUSTER SLOTS, Open fails saying what to grant, where until 7
// Dec 2026 the probe (INFO cluster) failed and Open gave a single-node
// client, which met MOVED on every other master's key.
func TestOpenAsACLUser(t *testing.T) {
	single := redistest.MustStart(t)
	c := redistest.MustStartCluster(t, redistest.ClusterOptions{Replicas: -1})
	const writer = "on >pw resetkeys ~codemojex:* resetchannels -@all +ping +command +xadd"
	tests := []struct {
		name    string
		nodes   []*redistest.Server
		rule    string
		cluster bool
		wantErr string
	}{
		{"cluster node, +cluster|slots", c.Nodes, writer + " +cluster|slots", true, ""},
		{"cluster node, no +cluster|slots", c.Nodes, writer, false, "grant it +cluster|slots"},
		{"single node, +cluster|slots", []*redistest.Server{single}, writer + " +cluster|slots", false, ""},
	}
	ctx := context.Background()
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			user := fmt.Sprintf("acl-open-%d", i)
			for _, n := range tt.nodes {
				nc := n.Client(t)
				args := []any{"ACL", "SETUSER", user}
				for _, f := range strings.Fields(tt.rule) {
					args = append(args, f)
				}
				if err := nc.Do(ctx, args...).Err(); err != nil {
					t.Fatalf("ACL SETUSER on %s: %v", n.Addr, err)
				}
				if err := nc.Do(ctx, "ACL", "LOG", "RESET").Err(); err != nil {
					t.Fatal(err)
				}
			}
			url := "redis://" + user + ":pw@" + tt.nodes[0].Addr
			rdb, err := redisconn.Open(url)
			if tt.wantErr != "" {
				if rdb != nil {
					rdb.Close()
				}
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !redisconn.NoPerm(err) {
					t.Fatalf("Open as %s = %v; want a refusal saying %q", user, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer rdb.Close()
			if _, isCluster := rdb.(*redis.ClusterClient); isCluster != tt.cluster {
				t.Fatalf("Open as %s = %T, want cluster %v", user, rdb, tt.cluster)
			}
			for g := range 20 { // 20 games land on every master
				key := fmt.Sprintf("codemojex:{acl-%d}:events", g)
				if err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: key, Values: []string{"k", "v"}}).Err(); err != nil {
					t.Fatalf("XADD %s as %s: %v", key, user, err)
				}
			}
			for _, n := range tt.nodes {
				if log := aclLog(t, n); log != "" {
					t.Errorf("ACL LOG of %s: %s", n.Addr, log)
				}
			}
		})
	}
}

// aclLog returns the entries of the server's ACL LOG, "" when it has none.
func aclLog(tb testing.TB, s *redistest.Server) string {
	tb.Helper()
	v, err := s.Client(tb).Do(context.Background(), "ACL", "LOG").Slice()
	if err != nil {
		tb.Fatal(err)
	}
	if len(v) == 0 {
		return ""
	}
	return fmt.Sprint(v)
}

// lines is a Logger that keeps what it is given.
type lines struct {
	mu  sync.Mutex
	got []string
}

func (l *lines) Printf(_ context.Context, format string, v ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.got = append(l.got, fmt.Sprintf(format, v...))
}

// TestACLRefusalSaid: a command the server's ACL refuses, alone, in a
// pipeline or inside a script, is said through SetLogger's Logger with
// the command (a script's, whose refusal on Redis 7.0 does not name the
// command, with where the ACL LOG names it) and the doc section. The
// command's own error is the server's, unchanged.
func TestACLRefusalSaid(t *testing.T) {
	s := redistest.MustStart(t)
	ctx := context.Background()
	if err := s.Client(t).Do(ctx, "ACL", "SETUSER", "acl-said", "on", ">pw", "resetkeys", "~k*", "-@all",
		"+ping", "+cluster|slots", "+evalsha", "+eval", "+set").Err(); err != nil {
		t.Fatal(err)
	}
	l := &lines{}
	redisconn.SetLogger(l)
	rdb, err := redisconn.Open("redis://acl-said:pw@" + s.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	tests := []struct {
		name string
		run  func() error
		want string
	}{
		{"command", func() error { return rdb.Get(ctx, "k").Err() }, "refuses GET to this user"},
		{"in a pipeline", func() error {
			_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error { p.XLen(ctx, "k"); return nil })
			return err
		}, "refuses XLEN to this user"},
		{"in a script", func() error {
			return redis.NewScript("return redis.call('DEL', KEYS[1])").Run(ctx, rdb, []string{"k"}).Err()
		}, "refuses a command of a script (EVAL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l.mu.Lock()
			l.got = nil
			l.mu.Unlock()
			err := tt.run()
			if !redisconn.NoPerm(err) {
				t.Fatalf("err %v, want the ACL's refusal", err)
			}
			l.mu.Lock()
			defer l.mu.Unlock()
			if len(l.got) != 1 || !strings.Contains(l.got[0], tt.want) || !strings.Contains(l.got[0], `"A Redis with ACL users"`) ||
				!strings.Contains(l.got[0], err.Error()) {
				t.Fatalf("logged %q, want one line saying %q, the section and %q", l.got, tt.want, err)
			}
		})
	}
}

// TestAskingAsACLUser: on a cluster whose slot is migrating, a write to a
// key already moved is sent on with ASK, which go-redis follows with
// ASKING on the target: an ACL user needs +asking for it (the rules of
// docs/operations.md, "A Redis with ACL users", grant it), and without it
// the write fails and the target's ACL LOG says ASKING.
func TestAskingAsACLUser(t *testing.T) {
	c := redistest.MustStartCluster(t, redistest.ClusterOptions{Replicas: -1})
	admin := c.Client(t)
	ctx := context.Background()
	tests := []struct {
		name   string
		asking bool
	}{
		{"+asking", true},
		{"no +asking", false},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			user := fmt.Sprintf("acl-ask-%d", i)
			rule := "on >pw resetkeys ~codemojex:* resetchannels -@all +ping +cluster|slots +command +xadd"
			if tt.asking {
				rule += " +asking"
			}
			for _, n := range c.Nodes {
				nc := n.Client(t)
				args := []any{"ACL", "SETUSER", user}
				for _, f := range strings.Fields(rule) {
					args = append(args, f)
				}
				if err := nc.Do(ctx, args...).Err(); err != nil {
					t.Fatal(err)
				}
				if err := nc.Do(ctx, "ACL", "LOG", "RESET").Err(); err != nil {
					t.Fatal(err)
				}
			}
			key := fmt.Sprintf("codemojex:{ask-%d}:events", i)
			if err := admin.XAdd(ctx, &redis.XAddArgs{Stream: key, Values: []string{"k", "v"}}).Err(); err != nil {
				t.Fatal(err)
			}
			rdb, err := redisconn.Open("redis://" + user + ":pw@" + c.Nodes[0].Addr)
			if err != nil {
				t.Fatal(err)
			}
			defer rdb.Close()
			if err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: key, Values: []string{"k", "v"}}).Err(); err != nil {
				t.Fatalf("XADD before the move: %v", err)
			}
			slot := c.Slot(t, key)
			from := c.MasterOfSlot(t, slot)
			to := c.OtherMaster(t, from)
			m := c.StartSlotMove(t, slot, to)
			m.Migrate(t, key)
			err = rdb.XAdd(ctx, &redis.XAddArgs{Stream: key, Values: []string{"k", "v"}}).Err()
			if tt.asking {
				if err != nil {
					t.Fatalf("XADD to a key moved mid-migration: %v", err)
				}
				for _, n := range c.Nodes {
					if log := aclLog(t, n); log != "" {
						t.Errorf("ACL LOG of %s: %s", n.Addr, log)
					}
				}
			} else {
				if err == nil {
					t.Fatal("XADD to a key moved mid-migration passed without +asking")
				}
				if log := aclLog(t, to); !strings.Contains(log, "asking") {
					t.Errorf("ACL LOG of the target %s: %q, want ASKING refused (XADD: %v)", to.Addr, log, err)
				}
			}
			m.Finish(t)
		})
	}
}
