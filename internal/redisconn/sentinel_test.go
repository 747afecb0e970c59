package redisconn_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/internal/redisconn"
	"github.com/codemojex/feed/internal/testkit/redistest"
	"github.com/codemojex/feed/internal/testkit/wait"
)

// TestCheckSentinelForm: a URL with master_name= is go-redis's Sentinel
// form, checked as ParseFailoverURL reads it, and refused when it names
// no master, leaves out a Sentinel's port (go-redis would take 6379, a
// Redis port), or asks for replicas, which refuse the writes every binary
// makes (route_by_latency and route_randomly also panic in go-redis's
// NewFailoverClient). Before 7 Dec 2026 every such URL was refused as
// "unexpected option: master_name".
func TestCheckSentinelForm(t *testing.T) {
	for _, tt := range []struct {
		url  string
		want string // in the error; "" = accepted
	}{
		{"redis://10.0.0.1:26379?master_name=feed", ""},
		{"redis://10.0.0.1:26379/2?master_name=feed&addr=10.0.0.2:26379&addr=10.0.0.3:26379", ""},
		{"redis://:sentinelpw@10.0.0.1:26379?master_name=feed&password=masterpw", ""},
		{"rediss://10.0.0.1:26379?master_name=feed&username=feed&password=pw&dial_timeout=2s", ""},
		{"redis://10.0.0.1:26379?master_name=", "master_name= is empty"},
		{"redis://10.0.0.1?master_name=feed", "names no port"},
		{"redis://10.0.0.1:26379?master_name=feed&route_by_latency=true", "replicas"},
		{"redis://10.0.0.1:26379?master_name=feed&route_randomly=true", "replicas"},
		{"redis://10.0.0.1:26379?master_name=feed&replica_only=true", "replicas"},
		{"redis://10.0.0.1:26379?master_name=feed&addr=10.0.0.2", "unable to parse addr param"},
		{"redis://10.0.0.1:26379?master_name=feed&bogus=1", "unexpected option: bogus"},
		{"unix:///run/sentinel.sock?master_name=feed", "invalid URL scheme: unix"},
	} {
		t.Run(tt.url, func(t *testing.T) {
			wantCheck(t, tt.url, tt.want)
		})
	}
}

// TestRedactSentinelPasswords: the Sentinel form carries two passwords,
// the Sentinels' in the user information and the master's in password=;
// Redact hides both, and an error about such a URL quotes neither.
func TestRedactSentinelPasswords(t *testing.T) {
	for _, tt := range []struct{ url, want string }{
		{"redis://su:s3cret1@h:26379?master_name=m&password=s3cret2&addr=h2:26379",
			"redis://su:xxxxx@h:26379?master_name=m&password=xxxxx&addr=h2:26379"},
		{"redis://h:26379?username=feed&password=s3cret2&master_name=m",
			"redis://h:26379?username=feed&password=xxxxx&master_name=m"},
		{"redis://h:26379?master_name=m&sentinel_password=s3cret2#frag",
			"redis://h:26379?master_name=m&sentinel_password=xxxxx#frag"},
		{"redis://h:26379?master_name=m&password=", "redis://h:26379?master_name=m&password="},
		{"redis://h:6379/0?x=a@b", "redis://h:6379/0?x=a@b"},
	} {
		if got := redisconn.Redact(tt.url); got != tt.want {
			t.Errorf("Redact(%q) = %q, want %q", tt.url, got, tt.want)
		}
	}
	for _, url := range []string{
		"redis://h:bad?master_name=m&password=s3cret2",
		"redis://:s3cret1@h:bad?master_name=m&password=s3cret2",
		"redis://h:26379?master_name=m&password=s3cret2&dial_timeout=x",
		"redis://h:26379?master_name=m&password=s3cret2%zz",
	} {
		err := redisconn.Check(url)
		if err == nil || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("Check(%q) = %v, want an error without the passwords", url, err)
		}
	}
}

// TestOpenSentinel: Open of the Sentinel form gives go-redis's failover
// client (a *redis.Client, no cluster probe) with the options every binary
// relies on, writing to the master the Sentinels name; after the master
// is SIGKILLed and a replica promoted, the same client writes on, to the
// new master, and reads what was replicated before the kill.
func TestOpenSentinel(t *testing.T) {
	s := redistest.MustStartSentinel(t)
	if err := redisconn.Check(s.URL()); err != nil {
		t.Fatal(err)
	}
	rdb, err := redisconn.Open(s.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	c, ok := rdb.(*redis.Client)
	if !ok {
		t.Fatalf("Open(%q) = %T, want *redis.Client", s.URL(), rdb)
	}
	if o := c.Options(); !o.ContextTimeoutEnabled || o.PoolSize < 16 {
		t.Errorf("options: ContextTimeoutEnabled %v, PoolSize %d; want true and at least 16", o.ContextTimeoutEnabled, o.PoolSize)
	}
	ctx := context.Background()
	const key = "codemojex:sentinel:open"
	push := func(what, v string) {
		t.Helper()
		wait.For(t, 30*time.Second, "a write "+what, func() bool {
			c, cancel := context.WithTimeout(ctx, time.Second)
			defer cancel()
			return rdb.RPush(c, key, v).Err() == nil
		})
	}
	push("at start", "1")
	first := s.Master(t)
	if n, err := first.Client(t).LLen(ctx, key).Result(); err != nil || n != 1 {
		t.Fatalf("the master %s holds %d entries (%v), want the one written", first.Addr, n, err)
	}
	s.WaitReplicated(t)
	_, promoted := s.KillMaster(t)
	push("after the kill of the master", "2")
	if got, err := promoted.Client(t).LRange(ctx, key, 0, -1).Result(); err != nil || fmt.Sprint(got) != "[1 2]" {
		t.Fatalf("the new master %s holds %q (%v), want [1 2]", promoted.Addr, got, err)
	}
}

// TestOpenSentinelUnknownMaster: a master_name no Sentinel monitors (a
// typo) fails Open at once, saying which names they do monitor; go-redis
// would have returned a client whose every call failed with "all
// sentinels specified in configuration are unreachable: redis: nil".
func TestOpenSentinelUnknownMaster(t *testing.T) {
	s := redistest.MustStartSentinel(t)
	url := strings.Replace(s.URL(), "master_name="+s.Name, "master_name=fedmaster", 1)
	start := time.Now()
	rdb, err := redisconn.Open(url)
	if err == nil {
		rdb.Close()
		t.Fatalf("Open(%q) succeeded, want it refused", url)
	}
	if took := time.Since(start); took >= redisconn.ProbeTimeout {
		t.Errorf("Open took %v, want less than the probe's %v", took, redisconn.ProbeTimeout)
	}
	for _, want := range []string{`"fedmaster"`, "no Sentinel", `"` + s.Name + `"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Open(%q) = %v, want it to say %s", url, err, want)
		}
	}
}

// TestSentinelForgetsMaster: when the Sentinels stop knowing the master
// after Open (SENTINEL REMOVE, a redeployment under another name), a
// call fails with an error that says so and that is neither redis.Nil
// nor a reply of Redis. go-redis's error wrapped the Sentinels' nil
// answers (redis.Nil): the feed takes redis.Nil for "no entry", "the
// lease is held by another", so a renderer idled or exited as if its
// consumer name were taken, instead of waiting for Redis as for one that
// is down.
func TestSentinelForgetsMaster(t *testing.T) {
	s := redistest.MustStartSentinel(t)
	rdb, err := redisconn.Open(s.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	ctx := context.Background()
	for _, sn := range s.Sentinels {
		if err := sn.Client(t).Do(ctx, "sentinel", "remove", s.Name).Err(); err != nil {
			t.Fatal(err)
		}
	}
	c, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	err = rdb.Get(c, "codemojex:sentinel:any").Err()
	var re redis.Error
	switch {
	case err == nil:
		t.Fatal("GET succeeded with no Sentinel knowing the master")
	case errors.Is(err, redis.Nil):
		t.Fatalf("GET: %v, which is redis.Nil (a missing key)", err)
	case errors.As(err, &re):
		t.Fatalf("GET: %v, which is a reply of Redis (%T)", err, re)
	case !strings.Contains(err.Error(), "no Sentinel") || !strings.Contains(err.Error(), s.Name):
		t.Fatalf("GET: %v, want it to say that no Sentinel knows %q", err, s.Name)
	}
}

// TestOpenSentinelNoneReachable: with no Sentinel reachable Open returns a
// client, as it does for a single Redis that is down (a binary started
// before Redis waits for it), and its calls fail with the connection
// error, saying that no Sentinel answered; with Sentinels that accept and never answer,
// OpenContext's probe ends at its context's deadline with an error that
// wraps it, as the cluster probe does (feedctl -timeout).
func TestOpenSentinelNoneReachable(t *testing.T) {
	// Nothing listens on ports 1 and 2 of the loopback.
	url := "redis://127.0.0.1:1?master_name=feed&addr=127.0.0.1:2"
	rdb, err := redisconn.Open(url)
	if err != nil {
		t.Fatalf("Open(%q): %v, want a client that waits for Redis", url, err)
	}
	defer rdb.Close()
	// go-redis's retries nested (the command's, the pool's dial's, each
	// Sentinel client's) held a call about 50 s, so it ended at this
	// deadline, as "context deadline exceeded"; it must end first, with
	// its cause, and be no answer of Redis.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = rdb.Ping(ctx).Err()
	var re redis.Error
	var oe *net.OpError
	if err == nil || errors.Is(err, redis.Nil) || errors.As(err, &re) || errors.Is(err, context.DeadlineExceeded) ||
		!errors.As(err, &oe) || !strings.Contains(err.Error(), `no Sentinel of 127.0.0.1:1, 127.0.0.1:2 answered for master "feed"`) ||
		strings.Contains(err.Error(), "\n") {
		t.Fatalf("PING with no Sentinel up: %q, want one line saying no Sentinel answered, with the connection error", err)
	}

	silent := silentListener(t)
	url = "redis://" + silent + "?master_name=feed"
	probe, cancelProbe := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancelProbe()
	rdb, err = redisconn.OpenContext(probe, url)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), silent) {
		if rdb != nil {
			rdb.Close()
		}
		t.Fatalf("OpenContext of a silent Sentinel with a 100ms deadline: %v, want the probe ended by the deadline", err)
	}
}

// TestOpenSentinelRefusesUser: Sentinels that refuse the URL's user (its
// user information: a wrong password, a user without the grant of
// SENTINEL get-master-addr-by-name) fail Open, with an error that names
// the Sentinel, quotes its refusal and says whose credentials the user
// information is, not that no Sentinel knows the master (which they were
// not allowed to say): until 7 Dec 2026 it said "no Sentinel knows a
// master named …", sending the operator to master_name=.
func TestOpenSentinelRefusesUser(t *testing.T) {
	s := redistest.MustStartSentinel(t, redistest.SentinelOptions{SentinelConf: "user sn on >right -@all +ping +sentinel|masters\n" +
		"user sn-ok on >right -@all +ping +sentinel|get-master-addr-by-name\n"})
	_, rest, _ := strings.Cut(s.URL(), "://")
	for _, tt := range []struct {
		name, user string
		want       []string
	}{
		{"wrong password", "sn-ok:wrong", []string{"WRONGPASS", "Sentinel 127.0.0.1:", "the Sentinels' user"}},
		{"no grant", "sn:right", []string{"NOPERM", "get-master-addr-by-name", "Sentinel 127.0.0.1:", "the Sentinels' user"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			url := "redis://" + tt.user + "@" + rest
			rdb, err := redisconn.Open(url)
			if err == nil {
				rdb.Close()
				t.Fatalf("Open(%q) succeeded, want it refused", url)
			}
			t.Logf("Open(%q): %v", url, err)
			for _, want := range tt.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("Open(%q) = %v, want it to say %s", url, err, want)
				}
			}
			if strings.Contains(err.Error(), "no Sentinel knows") || strings.Contains(err.Error(), "right") || strings.Contains(err.Error(), "wrong") {
				t.Errorf("Open(%q) = %v: says no Sentinel knows the master, or shows the password", url, err)
			}
		})
	}
	rdb, err := redisconn.Open("redis://sn-ok:right@" + rest)
	if err != nil {
		t.Fatalf("Open with the granted Sentinel user: %v", err)
	}
	rdb.Close()
}

// TestOpenSentinelMasterRefusesUser: Sentinels that accept the URL's
// user but a master that refuses its own credentials (a wrong
// password=; the master's password written in the user information,
// which is the Sentinels', and no password=) fail Open, with an error
// that names the master, quotes its refusal, says which part of the URL
// is the master's, and shows no password. Until 7 Dec 2026 Open
// succeeded and every call of the binary failed with the master's
// WRONGPASS or NOAUTH, which did not say which of the URL's two
// credentials was wrong.
func TestOpenSentinelMasterRefusesUser(t *testing.T) {
	s := redistest.MustStartSentinel(t)
	ctx := context.Background()
	for _, n := range s.Nodes {
		if err := n.Client(t).Do(ctx, "acl", "setuser", "feed", "on", ">right-master", "~*", "&*", "+@all").Err(); err != nil {
			t.Fatal(err)
		}
	}
	_, rest, _ := strings.Cut(s.URL(), "://")
	refused := func(url string, want ...string) {
		t.Helper()
		rdb, err := redisconn.Open(url)
		if err == nil {
			rdb.Close()
			t.Fatalf("Open(%q) succeeded, want the master's refusal", url)
		}
		t.Logf("Open(%q): %v", url, err)
		for _, w := range append(want, "the master 127.0.0.1:", "refuses the URL's master user", "Sentinel 127.0.0.1:") {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("Open(%q) = %v, want it to say %s", url, err, w)
			}
		}
		if strings.Contains(err.Error(), "-master") {
			t.Errorf("Open(%q) = %v: shows a password", url, err)
		}
	}
	refused("redis://"+rest+"&username=feed&password=wrong-master", "WRONGPASS", "username= and password= are the master's")
	rdb, err := redisconn.Open("redis://" + rest + "&username=feed&password=right-master")
	if err != nil {
		t.Fatalf("Open with the master's user: %v", err)
	}
	rdb.Close()

	// The default user of the data nodes gets a password (requirepass),
	// the replicas and the Sentinels are told it first; the Sentinels
	// still need none.
	for _, n := range s.Nodes {
		if err := n.Client(t).ConfigSet(ctx, "masterauth", "s3cret-master").Err(); err != nil {
			t.Fatal(err)
		}
	}
	for _, sn := range s.Sentinels {
		if err := sn.Client(t).Do(ctx, "sentinel", "set", s.Name, "auth-pass", "s3cret-master").Err(); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range s.Nodes {
		if err := n.Client(t).ConfigSet(ctx, "requirepass", "s3cret-master").Err(); err != nil {
			t.Fatal(err)
		}
	}
	refused("redis://:s3cret-master@"+rest, "NOAUTH", "no password=", "give the master's as password=")
	rdb, err = redisconn.Open("redis://" + rest + "&password=s3cret-master")
	if err != nil {
		t.Fatalf("Open with the master's password in password=: %v", err)
	}
	rdb.Close()
}

// TestSentinelRefusesUserAtRunTime: a Sentinel user taken away after
// Open (ACL DELUSER on every Sentinel, a password rotated on the
// Sentinels and not in the URL) fails the next dial with an error, on
// one line, that quotes the refusal and says that the Sentinels refuse
// the URL's user, whose user information it is, as Open's probe says;
// until 7 Dec 2026 it said only that the Sentinels "named no master",
// with go-redis's WRONGPASS lines.
func TestSentinelRefusesUserAtRunTime(t *testing.T) {
	s := redistest.MustStartSentinel(t, redistest.SentinelOptions{SentinelConf: "user sn on >right -@all +ping +sentinel|get-master-addr-by-name\n"})
	_, rest, _ := strings.Cut(s.URL(), "://")
	url := "redis://sn:right@" + rest
	rdb, err := redisconn.Open(url)
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	ctx := context.Background()
	for _, sn := range s.Sentinels {
		if err := sn.Client(t).Do(ctx, "acl", "deluser", "sn").Err(); err != nil {
			t.Fatal(err)
		}
	}
	c, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	err = rdb.Ping(c).Err()
	if err == nil {
		t.Fatal("PING succeeded with the Sentinels' user deleted")
	}
	t.Logf("PING: %v", err)
	for _, want := range []string{"WRONGPASS", "a Sentinel refuses the URL's user", "the Sentinels' user"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("PING: %v, want it to say %s", err, want)
		}
	}
	var re redis.Error
	if errors.As(err, &re) || strings.Contains(err.Error(), "\n") || strings.Contains(err.Error(), "right") {
		t.Errorf("PING: %q, want one line, no reply of Redis, no password", err)
	}
}

// TestOpenSentinelRequirepass: Sentinels closed by requirepass (the
// default user's password, which they also give one another through
// sentinel sentinel-pass) take the password of the URL's user
// information, without a user name, and a URL without it fails Open,
// saying that the Sentinel refuses the URL's user (NOAUTH).
func TestOpenSentinelRequirepass(t *testing.T) {
	s := redistest.MustStartSentinel(t, redistest.SentinelOptions{
		SentinelConf:     "requirepass s3cret-sn\nsentinel sentinel-pass s3cret-sn\n",
		SentinelPassword: "s3cret-sn"})
	_, rest, _ := strings.Cut(s.URL(), "://")
	rdb, err := redisconn.Open("redis://:s3cret-sn@" + rest)
	if err != nil {
		t.Fatalf("Open with the Sentinels' password: %v", err)
	}
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := rdb.Set(ctx, "codemojex:sentinel:requirepass", "1", 0).Err(); err != nil {
		t.Fatalf("SET through Sentinels closed by requirepass: %v", err)
	}
	rdb2, err := redisconn.Open("redis://" + rest)
	if err == nil {
		rdb2.Close()
		t.Fatal("Open without the Sentinels' password succeeded")
	}
	for _, want := range []string{"NOAUTH", "refuses the URL's user", "the Sentinels' user"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Open without the Sentinels' password: %v, want it to say %s", err, want)
		}
	}
}
