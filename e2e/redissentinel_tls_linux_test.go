package e2e_test

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/codemojex/feed/internal/gamesim"
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
// feedctl status lists every game.
func TestRedisSentinelTLS(t *testing.T) {
	ca := redistest.NewCA(t)
	st := redistest.MustStartSentinel(t, redistest.SentinelOptions{Replicas: 2,
		Node: redistest.Options{TLS: ca.TLSFiles(t, "no")}})
	url := st.URL()
	if !strings.HasPrefix(url, "rediss://") {
		t.Fatalf("the TLS set's URL is %s, want rediss://", url)
	}
	// No data node has a plain-text port, and each replicates over TLS
	// (the Sentinels are started with the same flags).
	ctx := context.Background()
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
		return []string{"-redis", url, "-db", dbPath, "-http", addr, "-group", "feed", "-consumer", "r1",
			"-min-idle", "1s", "-claim-every", "200ms", "-games-refresh", "200ms"}
	}, append(env, "FEED_SHUTDOWN_DELAY=0")...)
	pid := r1.Pid()
	simulate := func(prefix string) []string {
		t.Helper()
		out, err := tlsRun(t, env, "gamesim", "-redis", url, "-games", "3", "-events", "30", "-rate", "300", "-seed", "7", "-prefix", prefix)
		if err != nil {
			t.Fatalf("gamesim over the rediss:// Sentinel URL: %v\n%s", err, out)
		}
		return []string{gamesim.GameName(prefix, 1), gamesim.GameName(prefix, 2), gamesim.GameName(prefix, 3)}
	}
	status := func(games []string) {
		t.Helper()
		out, err := tlsRun(t, env, "feedctl", "-redis", url, "status")
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
}
