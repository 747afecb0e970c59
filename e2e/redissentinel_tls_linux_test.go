package e2e_test

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/codemojex/feed/internal/gamesim"
	"github.com/codemojex/feed/internal/testkit/acldocs"
	"github.com/codemojex/feed/internal/testkit/proctest"
	"github.com/codemojex/feed/internal/testkit/redistest"
)

// TestRedisSentinelTLS: the feed behind Sentinel over TLS, the form of a
// managed highly available Redis: the master, two replicas and three
// Sentinels speak TLS only (no plain-text port; replication and the
// Sentinels' links to the data nodes over TLS too), and every binary is
// given the rediss:// Sentinel URL and trusts the test's CA through
// SSL_CERT_FILE. A renderer stores what gamesim writes and feedctl status
// lists the games; the master is killed and a replica promoted, and the
// same renderer stores a second run of gamesim, every event once, and
// feedctl status lists every game. Once as the servers' default user, and
// once with everything at once, as managed deployments run it: TLS,
// Sentinel and the docs' ACL users (TestRedisSentinelACL's), with no
// entry in any server's ACL LOG.
func TestRedisSentinelTLS(t *testing.T) {
	for _, tt := range []struct {
		name string
		acl  bool // the docs' ACL users on the data nodes and the Sentinels
	}{
		{"default user", false},
		{"ACL users", true},
	} {
		t.Run(tt.name, func(t *testing.T) { sentinelTLS(t, tt.acl) })
	}
}

// sentinelTLS is TestRedisSentinelTLS, with the docs' ACL users when acl
// (as TestRedisSentinelACL: each binary as its own, the Sentinels' user
// in the URL's user information, no entry in any server's ACL LOG).
func sentinelTLS(t *testing.T, acl bool) {
	ctx := context.Background()
	ca := redistest.NewCA(t)
	opts := redistest.SentinelOptions{Replicas: 2, Node: redistest.Options{TLS: ca.TLSFiles(t, "no")}}
	const sentinelPW = "pw-feed-sentinel"
	if acl {
		opts.SentinelConf = sentinelUserRule(t, sentinelPW)
	}
	st := redistest.MustStartSentinel(t, opts)
	url := st.URL()
	if !strings.HasPrefix(url, "rediss://") {
		t.Fatalf("the TLS set's URL is %s, want rediss://", url)
	}
	urlOf := func(string) string { return url }
	if acl {
		acldocs.SetUsers(t, st.Nodes)
		urlOf = func(user string) string {
			return strings.Replace(url, "rediss://", "rediss://feed-sentinel:"+sentinelPW+"@", 1) + "&username=" + user + "&password=" + acldocs.Password(user)
		}
	}
	// No data node has a plain-text port, and each replicates over TLS
	// (the Sentinels are started with the same flags).
	for _, n := range st.Nodes {
		got, err := n.Client(t).ConfigGet(ctx, "*port").Result()
		if err != nil {
			t.Fatal(err)
		}
		repl, err := n.Client(t).ConfigGet(ctx, "tls-replication").Result()
		if err != nil {
			t.Fatal(err)
		}
		if got["port"] != "0" || got["tls-port"] != strconv.Itoa(n.Port) || repl["tls-replication"] != "yes" {
			t.Fatalf("%s: port %s, tls-port %s, tls-replication %s; want TLS only, replication too", n.Addr, got["port"], got["tls-port"], repl["tls-replication"])
		}
	}
	env := []string{ca.Env()}
	rdb := st.Client(t)
	dbPath := filepath.Join(t.TempDir(), "feed.db")
	r1, _ := proctest.StartHTTP(t, "r1", "renderer", servingPath, 200, 20*time.Second, func(addr string) []string {
		return []string{"-redis", urlOf("feed-renderer"), "-db", dbPath, "-http", addr, "-group", "feed", "-consumer", "r1",
			"-min-idle", "1s", "-claim-every", "200ms", "-games-refresh", "200ms"}
	}, append(env, "FEED_SHUTDOWN_DELAY=0")...)
	pid := r1.Pid()
	simulate := func(prefix string) []string {
		t.Helper()
		out, err := tlsRun(t, env, "gamesim", "-redis", urlOf("feed-writer"), "-games", "3", "-events", "30", "-rate", "300", "-seed", "7", "-prefix", prefix)
		if err != nil {
			t.Fatalf("gamesim over the rediss:// Sentinel URL: %v\n%s", err, out)
		}
		return []string{gamesim.GameName(prefix, 1), gamesim.GameName(prefix, 2), gamesim.GameName(prefix, 3)}
	}
	status := func(games []string) {
		t.Helper()
		out, err := tlsRun(t, env, "feedctl", "-redis", urlOf("feedctl"), "status")
		if err != nil {
			t.Fatalf("feedctl status over the rediss:// Sentinel URL: %v\n%s", err, out)
		}
		for _, g := range games {
			if !strings.Contains(out, g) {
				t.Errorf("feedctl status over the rediss:// Sentinel URL does not list %s:\n%s", g, out)
			}
		}
	}

	first := simulate("stl")
	checkAllHandled(t, rdb, dbPath, "feed", first, time.Minute)
	status(first)
	st.WaitReplicated(t) // gamesim writes without WAIT: its writes survive the kill
	killed, promoted := st.KillMaster(t)
	t.Logf("killed master %s; Sentinels promoted %s over TLS", killed.Addr, promoted.Addr)
	all := append(first, simulate("stm")...)
	checkAllHandled(t, rdb, dbPath, "feed", all, time.Minute)
	status(all)
	if r1.Exited() || r1.Pid() != pid {
		t.Fatalf("renderer pid %d (exited %v), want the same process %d throughout:\n%s", r1.Pid(), r1.Exited(), pid, r1.Output())
	}
	if !acl {
		return
	}
	if out := r1.Output(); noPerm(out) {
		t.Errorf("renderer as feed-renderer: %s", out)
	}
	waitSentinelPing(t, st)
	for _, sn := range st.Sentinels {
		aclLogEmpty(t, "Sentinel "+sn.Addr, sn.Client(t))
	}
	for _, n := range st.Nodes {
		if n != killed {
			aclLogEmpty(t, "data node "+n.Addr+" after the failover", n.Client(t))
		}
	}
}
