package feed_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/feed"
	"github.com/codemojex/feed/internal/event"
)

// A group door (XGROUP CREATE) refused by the server's ACL is the door's
// own failure, said as a refusal: one ERROR line a pass that names the
// command, the grant it lacks and where the grants are listed, retried
// with the door's backoff (1 s doubling), and the stream read once the
// grant is given, without a restart. Until 7 Dec 2026 it took the path of
// a node that did not answer: the stream was set aside and said "not
// reachable" (or, nothing else answering, the loop backed off), which sent
// an operator to the network.
func TestACLRefusedDoorSaidAndRetried(t *testing.T) {
	ctx := context.Background()
	srv, admin := mustStart(t)
	s := stream("acldoor")
	ids := []string{add(t, admin, s), add(t, admin, s)} // a stream without the group
	user := userWithout(t, srv, admin, "-xgroup|create")
	var rec recorder
	cfg := baseConfig(t, user, "r1", s)
	logs := captureLogs(t, &cfg)
	cfg.Handler = rec.handler
	c := mustOpen(t, cfg)
	const said = "the server's ACL refuses XGROUP CREATE"
	waitFor(t, 10*time.Second, "three refused doors said", func() bool { return len(waits(logs, said, "retry_in")) >= 3 })
	for l := range strings.Lines(logText(logs)) {
		if strings.Contains(l, said) && (!strings.Contains(l, "level=ERROR") || !strings.Contains(l, "+xgroup|create") ||
			!strings.Contains(l, `A Redis with ACL users`) || !strings.Contains(l, "NOPERM")) {
			t.Errorf("the refusal is said without its level ERROR, its grant, its docs section or the reply: %s", l)
		}
	}
	if n := logs.count("not reachable"); n != 0 {
		t.Errorf("%d lines say the refused stream is not reachable", n)
	}
	if w := waits(logs, said, "retry_in"); slices.Max(w) < 2*time.Second {
		t.Errorf("waits after the refused doors %v: none reached 2s, the door is retried at a fixed pace", w)
	}
	if st := c.Stats(); st.GroupErrors == 0 {
		t.Errorf("no group error counted for the refused doors")
	}
	if err := admin.Do(ctx, "ACL", "SETUSER", "r", "+xgroup|create").Err(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "the entries handled once granted", func() bool {
		return rec.count(ids[0]) == 1 && rec.count(ids[1]) == 1 && pending(t, admin, s) == 0
	})
	handledOnce(t, rec.ids(), len(ids))
	waitFor(t, 5*time.Second, "ready", func() bool { return c.Ready() == nil })
}

// Every game's group door refused (a user without +xgroup|create, and no
// game's group created yet): the consumer reads nothing, says so at ERROR,
// and stays ready while the registry answers, for longer than a silent
// Redis is tolerated (2 Block + 5 s). That is a decision, not an accident
// (docs/operations.md, "A Redis with ACL users"): a renderer serves its
// store's pages and websockets meanwhile, and the replicas share one ACL,
// so a 503 would take every game off the load balancer for a grant that
// only games without a group need; the refusal is for the logs and
// codemojex_feed_group_errors_total{code="NOPERM"}.
func TestACLEveryDoorRefusedStaysReady(t *testing.T) {
	srv, admin := mustStart(t)
	s := stream("acldoorall")
	add(t, admin, s) // no group on it
	r := openOnRegistry(t, admin, userWithout(t, srv, admin, "-xgroup|create"), "acldoorall")
	const said = "the server's ACL refuses XGROUP CREATE"
	waitFor(t, 10*time.Second, "a refused door said", func() bool { return len(waits(r.logs, said, "retry_in")) >= 1 })
	stale := 2*r.cfg.Block + 5*time.Second
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for end := time.Now().Add(stale + time.Second); time.Now().Before(end); <-tick.C {
		if err := r.c.Ready(); err != nil {
			t.Fatalf("not ready while every door is refused and the registry answers: %v", err)
		}
	}
	if n := aclLogged(t, admin, "xgroup|create"); n < 2 {
		t.Errorf("the door was refused %d times in %v, want it retried", n, stale)
	}
	if got := r.rec.ids(); len(got) != 0 {
		t.Errorf("handled %v from a stream whose group could not be created", got)
	}
}

// registryRun is a consumer opened by openOnRegistry, with what it was
// opened with, its logs and what its handler was handed.
type registryRun struct {
	c    *feed.Consumer
	cfg  feed.Config
	logs *logBuffer
	rec  *recorder
}

// openOnRegistry lists game in the registry and opens consumer r1 as user
// on the registry's games, its beat every 50 ms: the beat answers while
// the commands on a game's stream are refused, so the consumer is not
// left with nothing answering.
func openOnRegistry(t *testing.T, admin, user *redis.Client, game string) registryRun {
	t.Helper()
	if err := admin.ZAdd(context.Background(), event.RegistryKey, redisZ(game)).Err(); err != nil {
		t.Fatal(err)
	}
	r := registryRun{rec: &recorder{}}
	r.cfg = baseConfig(t, user, "r1")
	r.cfg.Streams, r.cfg.Registry = nil, event.RegistryKey
	r.cfg.WakeEvery = 50 * time.Millisecond
	r.logs = captureLogs(t, &r.cfg)
	r.cfg.Handler = r.rec.handler
	r.c = mustOpen(t, r.cfg)
	return r
}

// logText returns what logs holds so far.
func logText(logs *logBuffer) string {
	logs.mu.Lock()
	defer logs.mu.Unlock()
	return logs.b.String()
}

// Streams set aside because the server's ACL refused their read (a user
// without +xreadgroup) while the rest of the turn answered (the registry's
// beat) are said refused, naming the grant and where the grants are
// listed: the node answered, and nothing is wrong with the network. Until
// 7 Dec 2026 the line said "streams not reachable", with the NOPERM only
// in its err, and sent an operator to look at the network.
func TestACLRefusedReadSaidRefused(t *testing.T) {
	ctx := context.Background()
	srv, admin := mustStart(t)
	s := stream("aclread")
	if err := admin.XGroupCreateMkStream(ctx, s, group, "0").Err(); err != nil {
		t.Fatal(err)
	}
	ids := []string{add(t, admin, s), add(t, admin, s)}
	r := openOnRegistry(t, admin, userWithout(t, srv, admin, "-xreadgroup"), "aclread")
	rec, logs := r.rec, r.logs
	const said = "streams refused by the server's ACL"
	waitFor(t, 10*time.Second, "the refused streams said", func() bool { return logs.count(said) >= 2 })
	for l := range strings.Lines(logText(logs)) {
		if strings.Contains(l, said) && (!strings.Contains(l, "level=WARN") || !strings.Contains(l, "grant=+xreadgroup") ||
			!strings.Contains(l, `A Redis with ACL users`) || !strings.Contains(l, "NOPERM")) {
			t.Errorf("the refusal is said without its level WARN, its grant, its docs section or the reply: %s", l)
		}
	}
	if n := logs.count("not reachable"); n != 0 {
		t.Errorf("%d lines say the refused streams are not reachable", n)
	}
	if err := admin.Do(ctx, "ACL", "SETUSER", "r", "+xreadgroup").Err(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 15*time.Second, "the entries handled once granted", func() bool {
		return rec.count(ids[0]) == 1 && rec.count(ids[1]) == 1 && pending(t, admin, s) == 0
	})
	handledOnce(t, rec.ids(), len(ids))
}

// A PING refused by the server's ACL at the check of a stream set aside is
// an answer of the node: the stream goes back to the steps at its retry,
// no probe failure is counted and no line blames the PING, and once its
// own command is granted it is read, the PING still refused. Until 7 Dec
// 2026 the refused PING counted as a node that did not answer: the stream
// was set aside again at every retry, a probe failure counted each time,
// and the PING's NOPERM was said as the streams' (on a cluster the node's
// every game held aside for as long as PING was refused).
func TestACLRefusedPingIsAnAnswer(t *testing.T) {
	ctx := context.Background()
	srv, admin := mustStart(t)
	s := stream("aclping")
	if err := admin.XGroupCreateMkStream(ctx, s, group, "0").Err(); err != nil {
		t.Fatal(err)
	}
	ids := []string{add(t, admin, s), add(t, admin, s)}
	r := openOnRegistry(t, admin, userWithout(t, srv, admin, "-xreadgroup", "-ping"), "aclping")
	c, rec, logs := r.c, r.rec, r.logs
	waitFor(t, 10*time.Second, "three refused PINGs", func() bool { return aclLogged(t, admin, "ping") >= 3 })
	if n := feed.LoopErrorsOf(c, "probe"); n != 0 {
		t.Errorf("%d probe failures counted for refused PINGs: the node answered", n)
	}
	for l := range strings.Lines(logText(logs)) {
		if strings.Contains(l, "'ping'") {
			t.Errorf("the refused PING is said as the streams' failure: %s", l)
		}
	}
	if err := admin.Do(ctx, "ACL", "SETUSER", "r", "+xreadgroup").Err(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 15*time.Second, "the entries handled once XREADGROUP is granted, PING still refused", func() bool {
		return rec.count(ids[0]) == 1 && rec.count(ids[1]) == 1 && pending(t, admin, s) == 0
	})
	handledOnce(t, rec.ids(), len(ids))
}

// aclLogged returns how many times the server's ACL refused cmd, from ACL
// LOG (its entries count their repeats).
func aclLogged(tb testing.TB, rdb *redis.Client, cmd string) int64 {
	tb.Helper()
	entries, err := rdb.ACLLog(context.Background(), 100).Result()
	if err != nil {
		tb.Fatalf("acl log: %v", err)
	}
	var n int64
	for _, e := range entries {
		if e.Object == cmd {
			n += e.Count
		}
	}
	return n
}
