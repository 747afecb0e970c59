package e2e_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/internal/gamesim"
	"github.com/codemojex/feed/internal/testkit/proctest"
	"github.com/codemojex/feed/internal/testkit/redistest"
)

// tlsRun runs a binary of the feed to its end with env added to the
// test's own and returns its output and exit error; a binary still
// running after a minute fails the test (a hang).
func tlsRun(tb testing.TB, env []string, bin string, args ...string) (string, error) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(proctest.Binaries(tb), bin), args...)
	cmd.Env = append(cmd.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		tb.Fatalf("%s %v still running after a minute:\n%s", bin, args, out)
	}
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		tb.Fatalf("%s %v: %v", bin, args, err)
	}
	return string(out), err
}

// tlsFeed runs the real programs over TLS, with env added to the test's
// own (SSL_CERT_FILE, ca.Env(), to trust the test's CA as an operator's
// would; nothing when the URLs name it with cacert=): gamesim writes games
// through writeURL, a renderer reads them through readURL, stores every
// well-formed entry and serves it, and feedctl status, through writeURL,
// reports the games.
func tlsFeed(t *testing.T, env []string, rdb redis.UniversalClient, readURL, writeURL string) {
	t.Helper()
	dbPath := filepath.Join(t.TempDir(), "feed.db")
	_, addr := proctest.StartHTTP(t, "r1", "renderer", servingPath, 200, 20*time.Second, func(addr string) []string {
		return []string{"-redis", readURL, "-db", dbPath, "-http", addr, "-group", "feed", "-consumer", "r1",
			"-min-idle", "1s", "-claim-every", "200ms", "-games-refresh", "200ms"}
	}, append(env, "FEED_SHUTDOWN_DELAY=0")...)
	out, err := tlsRun(t, env, "gamesim", "-redis", writeURL, "-games", "3", "-events", "40", "-seed", "7", "-prefix", "tls")
	if err != nil {
		t.Fatalf("gamesim over TLS: %v\n%s", err, out)
	}
	games := []string{gamesim.GameName("tls", 1), gamesim.GameName("tls", 2), gamesim.GameName("tls", 3)}
	checkAllHandled(t, rdb, dbPath, "feed", games, time.Minute)
	resp, err := http.Get("http://" + addr + "/games/" + games[0])
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || pageSeq(t, string(page)) == 0 {
		t.Fatalf("GET /games/%s: %d, want 200 with its lines", games[0], resp.StatusCode)
	}
	out, err = tlsRun(t, env, "feedctl", "-redis", writeURL, "status")
	if err != nil {
		t.Fatalf("feedctl status over TLS: %v\n%s", err, out)
	}
	for _, g := range games {
		if !strings.Contains(out, g) {
			t.Errorf("feedctl status over TLS does not list %s:\n%s", g, out)
		}
	}
}

// TestTLS: the feed runs on a Redis that speaks TLS only (no plain-text
// port), its CA trusted through SSL_CERT_FILE.
func TestTLS(t *testing.T) {
	ca := redistest.NewCA(t)
	srv := redistest.MustStartTLS(t, ca)
	tlsFeed(t, []string{ca.Env()}, srv.Client(t), srv.URL(), srv.URL())
}

// TestTLSMutual: the feed runs on a Redis that asks every client for a
// certificate (tls-auth-clients yes, Redis's default once TLS is on):
// each binary presents the one its URL's cert= and key= name.
func TestTLSMutual(t *testing.T) {
	ca := redistest.NewCA(t)
	srv := redistest.MustStart(t, redistest.Options{TLS: ca.TLSFiles(t, "yes")})
	client := ca.TLSFiles(t, "yes")
	u := srv.URL() + "?cert=" + url.QueryEscape(client.CertFile) + "&key=" + url.QueryEscape(client.KeyFile)
	tlsFeed(t, []string{ca.Env()}, srv.Client(t), u, u)
}

// TestTLSCACert: the feed runs on a Redis Cluster of TLS masters whose
// CA only the URLs name, cacert= (since 7 Dec 2026): no binary trusts it
// otherwise. The renderer is given a node's plain URL, gamesim and
// feedctl the cluster URL.
func TestTLSCACert(t *testing.T) {
	ca := redistest.NewCA(t)
	c := redistest.MustStartCluster(t, redistest.ClusterOptions{Replicas: -1, Node: redistest.Options{TLS: ca.TLSFiles(t, "no")}})
	cacert := "cacert=" + url.QueryEscape(ca.File)
	tlsFeed(t, nil, c.Client(t), "rediss://"+c.Nodes[0].Addr+"?"+cacert, c.URL()+"&"+cacert)
}

// TestTLSSNI: the feed runs on a Redis Cluster of TLS masters that share
// a certificate for a name, redis.test, and announce their addresses,
// which it does not hold; the URLs name the host with sni= (since 7 Dec
// 2026), and the CA with cacert=. The renderer is given a node's plain
// URL, gamesim and feedctl the cluster URL.
func TestTLSSNI(t *testing.T) {
	ca := redistest.NewCA(t)
	c := redistest.MustStartCluster(t, redistest.ClusterOptions{Replicas: -1, Node: redistest.Options{TLS: ca.TLSFilesFor(t, "no", "redis.test")}})
	q := "cacert=" + url.QueryEscape(ca.File) + "&sni=redis.test"
	tlsFeed(t, nil, c.Client(t), "rediss://"+c.Nodes[0].Addr+"?"+q, c.URL()+"&"+q)
}

// TestTLSCluster: the feed runs on a Redis Cluster of 3 TLS masters (bus
// and replication over TLS, no plain-text port): the renderer is given
// the plain rediss:// URL of one node, which its probe finds to be a
// cluster node, and must reach the other masters over TLS; gamesim and
// feedctl are given the cluster URL.
func TestTLSCluster(t *testing.T) {
	ca := redistest.NewCA(t)
	c := redistest.MustStartCluster(t, redistest.ClusterOptions{Replicas: -1, Node: redistest.Options{TLS: ca.TLSFiles(t, "no")}})
	tlsFeed(t, []string{ca.Env()}, c.Client(t), "rediss://"+c.Nodes[0].Addr, c.URL())
}

// TestTLSTrustedByCertDir: a binary trusts a CA in a directory named by
// SSL_CERT_DIR, the other way docs/operations.md gives ("Redis over
// TLS").
func TestTLSTrustedByCertDir(t *testing.T) {
	ca := redistest.NewCA(t)
	srv := redistest.MustStartTLS(t, ca)
	out, err := tlsRun(t, []string{"SSL_CERT_DIR=" + filepath.Dir(ca.File)}, "feedctl", "-redis", srv.URL(), "ping")
	if err != nil {
		t.Fatalf("feedctl ping with the CA in SSL_CERT_DIR: %v\n%s", err, out)
	}
}

// TestTLSRefused: each binary refuses, at once and saying why, a -redis
// that cannot work over TLS: a certificate of a CA it does not trust (the
// URL's password hidden), a rediss:// URL of a plain-text port, a
// redis:// URL of a TLS port; and, over plain text or TLS, a password the
// server refuses. Until 7 Dec 2026 the renderer started with them and
// stayed not ready, its calls failing with the bare error.
func TestTLSRefused(t *testing.T) {
	untrusted := redistest.MustStartTLS(t, redistest.NewCA(t))
	plain := redistest.MustStart(t)
	if err := plain.Client(t).ConfigSet(context.Background(), "requirepass", "right").Err(); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		url  string
		want []string
	}{
		{"CA not trusted", "rediss://:s3cret@" + untrusted.Addr + "/0",
			[]string{"rediss://:xxxxx@" + untrusted.Addr, "certificate signed by unknown authority", "SSL_CERT_FILE"}},
		{"rediss:// to a plain-text port", "rediss://" + plain.Addr + "/0",
			[]string{"the port speaks plain text, not TLS: use redis://"}},
		{"redis:// to a TLS port", "redis://" + untrusted.Addr + "/0",
			[]string{"speaks TLS", "use rediss://"}},
		{"a wrong password", "redis://:s3cret@" + plain.Addr + "/0",
			[]string{"redis://:xxxxx@" + plain.Addr, "refuses the URL's user", "WRONGPASS", "Redis refuses the renderer"}},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			runs := map[string][]string{
				"renderer": {"-redis", tt.url, "-db", filepath.Join(t.TempDir(), "feed.db"), "-http", proctest.FreeAddr(t), "-consumer", "r1"},
				"gamesim":  {"-redis", tt.url, "-games", "1", "-events", "1"},
				"feedctl":  {"-redis", tt.url, "status"},
			}
			for bin, args := range runs {
				out, err := tlsRun(t, nil, bin, args...)
				t.Logf("%s: %v\n%s", bin, err, out)
				if err == nil {
					t.Errorf("%s %s: exit 0, want a refusal\n%s", bin, tt.name, out)
					continue
				}
				for _, w := range tt.want {
					if !strings.Contains(out, w) {
						t.Errorf("%s %s: output does not say %q:\n%s", bin, tt.name, w, out)
					}
				}
				if strings.Contains(out, "s3cret") {
					t.Errorf("%s %s: the password is in the output:\n%s", bin, tt.name, out)
				}
			}
		})
	}
}
