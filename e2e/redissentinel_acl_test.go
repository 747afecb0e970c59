package e2e_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/internal/gamesim"
	"github.com/codemojex/feed/internal/testkit/acldocs"
	"github.com/codemojex/feed/internal/testkit/proctest"
	"github.com/codemojex/feed/internal/testkit/redistest"
	"github.com/codemojex/feed/internal/testkit/wait"
)

// sentinelUserRule returns the sentinel.conf line of the Sentinels' ACL
// user in docs/operations.md's section acldocs.Section ("user feed-sentinel
// …"), with its password PASSWORD replaced by pw.
func sentinelUserRule(tb testing.TB, pw string) string {
	tb.Helper()
	for _, line := range acldocs.SectionLines(tb) {
		if strings.HasPrefix(line, "user feed-sentinel ") {
			return strings.Replace(line, ">PASSWORD", ">"+pw, 1)
		}
	}
	tb.Fatalf("docs/operations.md, %q, has no line \"user feed-sentinel …\"", acldocs.Section)
	return ""
}

// aclLogEmpty fails tb for every entry of the ACL LOG of the server rdb
// talks to: a command the server refused.
func aclLogEmpty(tb testing.TB, what string, rdb *redis.Client) {
	tb.Helper()
	v, err := rdb.Do(context.Background(), "ACL", "LOG").Slice()
	if err != nil {
		tb.Fatalf("ACL LOG of %s: %v", what, err)
	}
	for _, e := range v {
		tb.Errorf("ACL LOG of %s: %v", what, e)
	}
}

// TestRedisSentinelACL: the ACL users of docs/operations.md, "A Redis with
// ACL users", behind Sentinel, as managed and highly available
// deployments run them. The master and both replicas hold the doc's
// feed-renderer, feed-writer and feedctl users, from the doc's block; the
// three Sentinels hold the doc's feed-sentinel user, from its
// sentinel.conf line. A renderer as feed-renderer, gamesim as
// feed-writer and feedctl status as feedctl, each over the Sentinel URL
// (the Sentinels' user in the user information, the master's in
// username= and password=), work before and after the master is killed
// and a replica promoted: every event is stored once, the same renderer
// process throughout; its subscription on a Sentinel is feed-sentinel's,
// and has been checked with PING; and no server, Sentinel or data node (the killed
// master before the kill, the promoted replica after), has an entry in
// its ACL LOG. Each server keeps its default user, for the Sentinels'
// and replicas' own links and for the test's checks.
func TestRedisSentinelACL(t *testing.T) {
	ctx := context.Background()
	const sentinelPW = "pw-feed-sentinel"
	st := redistest.MustStartSentinel(t, redistest.SentinelOptions{Replicas: 2,
		SentinelConf: sentinelUserRule(t, sentinelPW)})
	acldocs.SetUsers(t, st.Nodes)
	urlOf := func(user string) string { return sentinelURLAs(st, sentinelPW, user) }

	c := &cluster{tb: t, url: urlOf("feed-renderer"), dbPath: filepath.Join(t.TempDir(), "feed.db"), group: "feed",
		renderers: map[string]*renderer{}}
	r1 := c.start("r1")
	pid := r1.Pid()
	simulate := func(prefix string) []string {
		t.Helper()
		sim := proctest.Start(t, "gamesim-"+prefix, "gamesim", []string{"-redis", urlOf("feed-writer"),
			"-games", "3", "-events", "30", "-rate", "300", "-seed", "5", "-prefix", prefix, "-bad", "0.1"})
		wctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		if err := sim.Wait(wctx); err != nil {
			t.Fatalf("gamesim as feed-writer over the Sentinel URL: %v\n%s", err, sim.Output())
		}
		if out := sim.Output(); noPerm(out) {
			t.Errorf("gamesim as feed-writer: %s", out)
		}
		return []string{gamesim.GameName(prefix, 1), gamesim.GameName(prefix, 2), gamesim.GameName(prefix, 3)}
	}
	status := func(games []string) {
		t.Helper()
		out, ok := feedctl(t, urlOf("feedctl"), "-group", c.group, "status")
		if !ok || noPerm(out) {
			t.Fatalf("feedctl status as feedctl over the Sentinel URL (ok %v):\n%s", ok, out)
		}
		for _, g := range games {
			if !strings.Contains(out, g) {
				t.Errorf("feedctl status as feedctl does not show %s:\n%s", g, out)
			}
		}
	}

	first := simulate("sna")
	checkAllHandled(t, st.Master(t).Client(t), c.dbPath, c.group, first, time.Minute)
	status(first)
	// gamesim writes without WAIT: its writes are made to survive the
	// kill, so that the test proves the feed's part, not Redis's.
	st.WaitReplicated(t)
	for _, n := range st.Nodes {
		aclLogEmpty(t, "data node "+n.Addr+" before the kill", n.Client(t))
	}

	killed, promoted := st.KillMaster(t)
	t.Logf("killed master %s; Sentinels promoted %s", killed.Addr, promoted.Addr)
	second := simulate("snb")
	all := append(first, second...)
	checkAllHandled(t, promoted.Client(t), c.dbPath, c.group, all, time.Minute)
	status(all)
	if r1.Exited() || r1.Pid() != pid {
		t.Fatalf("renderer pid %d (exited %v), want the same process %d throughout:\n%s", r1.Pid(), r1.Exited(), pid, r1.Output())
	}
	if out := r1.Output(); noPerm(out) {
		t.Errorf("renderer as feed-renderer: %s", out)
	}

	waitSentinelPing(t, st)
	for _, sn := range st.Sentinels {
		aclLogEmpty(t, "Sentinel "+sn.Addr, sn.Client(t))
	}
	for _, n := range st.Nodes {
		if n == killed {
			continue
		}
		aclLogEmpty(t, fmt.Sprintf("data node %s after the failover", n.Addr), n.Client(t))
	}
}

// waitSentinelPing waits until a Sentinel of st lists a connection of
// feed-sentinel subscribed to its two channels (a failover client's
// +switch-master and +replica-reconf-done) whose last command is PING:
// go-redis checks that subscription with a PING after 3 s without a
// message, and CLIENT LIST names a connection's last command, refused or
// not. A Sentinel rule without +ping then has its entry in ACL LOG,
// whatever the test's pace.
func waitSentinelPing(tb testing.TB, st *redistest.Sentinel) {
	tb.Helper()
	ctx := context.Background()
	wait.For(tb, 30*time.Second, "a renderer's subscription on a Sentinel, as feed-sentinel, to have sent PING", func() bool {
		for _, sn := range st.Sentinels {
			l, err := sn.Client(tb).ClientList(ctx).Result()
			if err != nil {
				continue
			}
			for _, c := range strings.Split(l, "\n") {
				if strings.Contains(c, " user=feed-sentinel ") && strings.Contains(c, " sub=2 ") && strings.Contains(c, " cmd=ping ") {
					return true
				}
			}
		}
		return false
	})
}

// confBlock returns the lines of the ```conf block of docs/operations.md,
// section acldocs.Section, whose first line is the comment first, without it,
// each PASSWORD (and >PASSWORD) written pw.
func confBlock(tb testing.TB, first, pw string) []string {
	tb.Helper()
	lines := acldocs.SectionLines(tb)
	for i, line := range lines {
		if line != first || i == 0 || lines[i-1] != "```conf" {
			continue
		}
		var out []string
		for _, l := range lines[i+1:] {
			if l == "```" {
				return out
			}
			f := strings.Fields(l)
			for j, w := range f {
				switch w {
				case "PASSWORD":
					f[j] = pw
				case ">PASSWORD":
					f[j] = ">" + pw
				}
			}
			out = append(out, strings.Join(f, " "))
		}
	}
	tb.Fatalf("docs/operations.md, %q, has no ```conf block that starts %q", acldocs.Section, first)
	return nil
}

// TestRedisSentinelClosedServers: behind Sentinel, with no server open to
// the default user, as docs/operations.md, "A Redis with ACL users",
// says to set them up: the data nodes' and the Sentinels' conf blocks
// from the page (default off on all of them; the Sentinels' user on the
// data nodes, the replicas' user on the master, the Sentinels' user on
// one another) and the feed's users from it too. The set starts (every
// replica in sync, every Sentinel knowing the others), a renderer as
// feed-renderer stores what gamesim as feed-writer writes, both over the
// Sentinel URL as the page writes it; the master killed, the Sentinels
// agree and promote a replica, which the other follows; and no server
// has an entry in its ACL LOG (the killed master before the kill):
// nothing the servers' own links or the binaries sent was refused. The kit logs in as a user of its own ("kit"), the test's only
// addition.
func TestRedisSentinelClosedServers(t *testing.T) {
	const pw, kitPW = "pw-servers", "pw-kit"
	var nodeArgs []string
	for _, l := range confBlock(t, "# redis.conf of the master and every replica", pw) {
		f := strings.Fields(l)
		nodeArgs = append(append(nodeArgs, "--"+f[0]), f[1:]...)
	}
	nodeArgs = append(nodeArgs, "--user", "kit", "on", ">"+kitPW, "~*", "&*", "+@all")
	snConf := strings.Join(confBlock(t, `# sentinel.conf of every Sentinel, after its "sentinel monitor feed …" line`, pw), "\n") + "\n" +
		sentinelUserRule(t, "pw-feed-sentinel") + "\n" +
		"user kit on >" + kitPW + " allchannels +@all\n"
	st := redistest.MustStartSentinel(t, redistest.SentinelOptions{Name: "feed", Replicas: 2,
		Node:         redistest.Options{Args: nodeArgs, User: "kit", Password: kitPW},
		SentinelConf: snConf, SentinelUser: "kit", SentinelPassword: kitPW})
	acldocs.SetUsers(t, st.Nodes)
	// Closed indeed: the default user is refused everywhere.
	for _, n := range append(st.Nodes, st.Sentinels...) {
		c := redis.NewClient(&redis.Options{Addr: n.Addr, MaxRetries: -1})
		err := c.Ping(context.Background()).Err()
		c.Close()
		if err == nil {
			t.Fatalf("%s answers PING as the default user", n.Addr)
		}
	}
	urlOf := func(user string) string { return sentinelURLAs(st, "pw-feed-sentinel", user) }
	c := &cluster{tb: t, url: urlOf("feed-renderer"), dbPath: filepath.Join(t.TempDir(), "feed.db"), group: "feed",
		renderers: map[string]*renderer{}}
	r1 := c.start("r1")
	sim := proctest.Start(t, "gamesim", "gamesim", []string{"-redis", urlOf("feed-writer"),
		"-games", "2", "-events", "20", "-rate", "300", "-seed", "7", "-prefix", "cls"})
	wctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := sim.Wait(wctx); err != nil {
		t.Fatalf("gamesim as feed-writer: %v\n%s", err, sim.Output())
	}
	games := []string{gamesim.GameName("cls", 1), gamesim.GameName("cls", 2)}
	checkAllHandled(t, st.Master(t).Client(t), c.dbPath, c.group, games, 30*time.Second)
	if out := r1.Output() + sim.Output(); noPerm(out) {
		t.Errorf("a refusal: %s", out)
	}
	for _, n := range st.Nodes {
		aclLogEmpty(t, "data node "+n.Addr+" before the kill", n.Client(t))
	}
	// The Sentinels' links to one another carry their votes: only a
	// failover shows that they log in (a Sentinel not logged in is
	// answered NOAUTH, which ACL LOG does not record).
	killed, promoted := st.KillMaster(t)
	t.Logf("killed master %s; Sentinels promoted %s", killed.Addr, promoted.Addr)
	for _, sn := range st.Sentinels {
		aclLogEmpty(t, "Sentinel "+sn.Addr, sn.Client(t))
	}
	for _, n := range st.Nodes {
		if n != killed {
			aclLogEmpty(t, "data node "+n.Addr+" after the failover", n.Client(t))
		}
	}
}

// sentinelURLAs is the Sentinel URL of st, logged in to the Sentinels as
// the docs' feed-sentinel (password sentinelPW) and to the data nodes as
// user, one of the docs' users (acldocs.Password).
func sentinelURLAs(st *redistest.Sentinel, sentinelPW, user string) string {
	addrs := st.SentinelAddrs()
	u := "redis://feed-sentinel:" + sentinelPW + "@" + addrs[0] + "?master_name=" + st.Name +
		"&username=" + user + "&password=" + acldocs.Password(user)
	for _, a := range addrs[1:] {
		u += "&addr=" + a
	}
	return u
}
