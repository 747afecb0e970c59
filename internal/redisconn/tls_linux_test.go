package redisconn_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/internal/redisconn"
	"github.com/codemojex/feed/internal/testkit/redistest"
)

// TestMain makes the process trust a CA through SSL_CERT_FILE, as an
// operator makes a binary trust a private CA: Go reads its system pool
// once per process, so it is set before any test runs.
func TestMain(m *testing.M) { os.Exit(redistest.RunTrusting(m)) }

// writeEveryMaster writes a stream entry for 20 games, which land on every
// master of a cluster of 3.
func writeEveryMaster(t *testing.T, rdb redis.UniversalClient) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i := range 20 {
		key := fmt.Sprintf("codemojex:{g-%d}:events", i)
		if err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: key, Values: []string{"k", "v"}}).Err(); err != nil {
			t.Fatalf("XADD %s: %v", key, err)
		}
	}
}

// TestOpenTLS: every form of a rediss:// -redis gives the right kind of
// client, over TLS to every node, trusting the CA of SSL_CERT_FILE: a
// single node (also one that takes a client certificate but asks for
// none, tls-auth-clients optional); a plain URL of a node of a TLS cluster (the probe, over
// TLS, finds the cluster; the cluster client it becomes dials every node
// with TLS, which the nodes' TLS-only ports prove); go-redis's cluster
// URL; and skip_verify, which go-redis's cluster URL refused ("unexpected
// option") after the single-node probe of the same URL had taken it.
func TestOpenTLS(t *testing.T) {
	ca := redistest.TrustedCA(t)
	single := redistest.MustStartTLS(t, ca)
	untrusted := redistest.MustStartTLS(t, redistest.NewCA(t))
	optional := redistest.MustStart(t, redistest.Options{TLS: ca.TLSFiles(t, "optional")})
	c := redistest.MustStartCluster(t, redistest.ClusterOptions{Replicas: -1, Node: redistest.Options{TLS: ca.TLSFiles(t, "no")}})
	node := "rediss://" + c.Nodes[0].Addr
	for _, tt := range []struct {
		name    string
		url     string
		cluster bool
	}{
		{"single node", single.URL(), false},
		{"single node by name", "rediss://localhost:" + fmt.Sprint(single.Port) + "/0", false},
		{"untrusted, skip_verify", untrusted.URL() + "?skip_verify=true", false},
		{"client certificate optional", optional.URL(), false},
		{"plain URL of a cluster node", node, true},
		{"plain URL of a cluster node, skip_verify", node + "?skip_verify=true", true},
		{"cluster URL", c.URL(), true},
		{"cluster URL, skip_verify", c.URL() + "&skip_verify=false", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if err := redisconn.Check(tt.url); err != nil {
				t.Fatalf("Check(%q): %v", tt.url, err)
			}
			rdb, err := redisconn.Open(tt.url)
			if err != nil {
				t.Fatalf("Open(%q): %v", tt.url, err)
			}
			defer rdb.Close()
			if _, isCluster := rdb.(*redis.ClusterClient); isCluster != tt.cluster {
				t.Fatalf("Open(%q) = %T, want cluster %v", tt.url, rdb, tt.cluster)
			}
			writeEveryMaster(t, rdb)
		})
	}
}

// TestOpenClusterServerName: go-redis verifies every node of a cluster
// against the URL's first host. An IP address there is no name for the
// other nodes, which are dialled at their own addresses: each is verified
// against its own (ServerName left empty). A host name stays every
// node's, as a managed cluster's wildcard certificate wants.
func TestOpenClusterServerName(t *testing.T) {
	// Ports where nothing listens: Open's look at the nodes finds none.
	for _, tt := range []struct{ url, want string }{
		{"rediss://127.0.0.1:1?addr=127.0.0.2:1", ""},
		{"rediss://[::1]:1?addr=127.0.0.2:1", ""},
		{"rediss://localhost:1?addr=127.0.0.2:1", "localhost"},
	} {
		rdb, err := redisconn.Open(tt.url)
		if err != nil {
			t.Fatalf("Open(%q): %v", tt.url, err)
		}
		cc, ok := rdb.(*redis.ClusterClient)
		if !ok {
			rdb.Close()
			t.Fatalf("Open(%q) = %T, want a cluster client", tt.url, rdb)
		}
		cfg := cc.Options().TLSConfig
		rdb.Close()
		if cfg == nil || cfg.ServerName != tt.want {
			t.Errorf("Open(%q): TLS config %+v, want ServerName %q", tt.url, cfg, tt.want)
		}
	}
}

// TestOpenTLSRefused: a -redis that cannot work over TLS fails Open with
// an error that says why and what to do, quoting the URL without its
// password, at once: the probe's own error, not the end of its context
// (10 s here). Until 7 Dec 2026 Open returned a single-node client whose
// every call failed with the bare error (a renderer started and stayed
// not ready).
func TestOpenTLSRefused(t *testing.T) {
	untrusted := redistest.MustStartTLS(t, redistest.NewCA(t))
	plain := redistest.MustStart(t)
	ca := redistest.TrustedCA(t)
	mutual := redistest.MustStart(t, redistest.Options{TLS: ca.TLSFiles(t, "yes")})
	elsewhere := redistest.MustStartTLS(t, ca, redistest.Options{TLS: ca.TLSFilesFor(t, "no", "redis.example")})
	for _, tt := range []struct {
		name string
		url  string
		want []string
	}{
		{"CA not trusted", "rediss://:s3cret@" + untrusted.Addr + "/0",
			[]string{"rediss://:xxxxx@" + untrusted.Addr, "x509: certificate signed by unknown authority", "SSL_CERT_FILE"}},
		{"certificate not for the host", elsewhere.URL(),
			[]string{"x509: cannot validate certificate for 127.0.0.1", "not for the host of the URL"}},
		{"rediss:// to a plain-text port", "rediss://" + plain.Addr + "/0",
			[]string{"the port speaks plain text, not TLS: use redis://"}},
		{"redis:// to a TLS port", "redis://" + untrusted.Addr + "/0",
			[]string{"speaks TLS", "use rediss://"}},
		{"cluster URL, CA not trusted", "rediss://" + untrusted.Addr + "?addr=" + untrusted.Addr,
			[]string{"x509: certificate signed by unknown authority", "SSL_CERT_FILE"}},
		{"cluster URL of a plain-text port", "rediss://" + plain.Addr + "?addr=" + plain.Addr,
			[]string{"the port speaks plain text, not TLS: use redis://"}},
		// Until 7 Dec 2026 a plain cluster URL was not asked at start.
		{"redis:// cluster URL of a TLS port", "redis://" + untrusted.Addr + "?addr=" + untrusted.Addr,
			[]string{"speaks TLS", "use rediss://"}},
		{"client certificate required", mutual.URL(),
			[]string{"certificate required", "name one in the URL, cert=FILE&key=FILE"}},
	} {
		t.Run(tt.name, func(t *testing.T) { wantOpenRefused(t, tt.url, tt.want...) })
	}
}

// TestOpenSentinelTLSRefused: a Sentinel URL that cannot work over TLS is
// refused at once, saying why, as the single-node and cluster forms are
// (TestOpenTLSRefused): a rediss:// URL of Sentinels whose certificate
// chains to a CA the host does not trust, a rediss:// URL of plain-text
// Sentinels, a redis:// URL of TLS-only ones. Until 7 Dec 2026 the probe
// took a Sentinel that failed so as one that did not answer: Open
// returned a client whose every call failed (a renderer started and
// stayed not ready), with the bare error and no hint, or, for plain-text
// Sentinels, with the end of the call's deadline.
func TestOpenSentinelTLSRefused(t *testing.T) {
	untrusted := redistest.MustStartSentinel(t, redistest.SentinelOptions{Node: redistest.Options{TLS: redistest.NewCA(t).TLSFiles(t, "no")}})
	plain := redistest.MustStartSentinel(t)
	for _, tt := range []struct {
		name string
		url  string
		want []string
	}{
		{"CA not trusted", strings.Replace(untrusted.URL(), "rediss://", "rediss://:s3cret@", 1),
			[]string{"rediss://:xxxxx@", "x509: certificate signed by unknown authority", "SSL_CERT_FILE"}},
		{"rediss:// to plain-text Sentinels", strings.Replace(plain.URL(), "redis://", "rediss://", 1),
			[]string{"the port speaks plain text, not TLS: use redis://"}},
		{"redis:// to TLS Sentinels", strings.Replace(untrusted.URL(), "rediss://", "redis://", 1),
			[]string{"speaks TLS", "use rediss://"}},
	} {
		t.Run(tt.name, func(t *testing.T) { wantOpenRefused(t, tt.url, tt.want...) })
	}
}

// TestOpenSentinelTLSEachHost: the Sentinel form verifies each server
// for the host it is dialled at: the first Sentinel for the URL's host
// (a name here, localhost), the master for the address the Sentinels
// give, 127.0.0.1, which its certificate alone names. go-redis names the
// first Sentinel's host as every dial's server name, so until 7 Dec 2026
// the master was verified for localhost: the start went on, and every
// call failed. A master whose certificate is not for its address now
// fails the start, naming the master.
func TestOpenSentinelTLSEachHost(t *testing.T) {
	ca := redistest.TrustedCA(t)
	sentinels := ca.TLSFilesFor(t, "no", "localhost", "127.0.0.1")
	for _, tt := range []struct {
		name   string
		master []string // the hosts the data nodes' certificate names
		want   []string // what the refusal says; nil: the URL works
	}{
		{"master certificate for its address", []string{"127.0.0.1"}, nil},
		{"master certificate for another name", []string{"redis.test"}, []string{"the master 127.0.0.1:", "named by Sentinel", "not for the host"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := redistest.MustStartSentinel(t, redistest.SentinelOptions{
				Node: redistest.Options{TLS: ca.TLSFilesFor(t, "no", tt.master...)}, SentinelTLS: sentinels})
			u := strings.Replace(s.URL(), "rediss://127.0.0.1:", "rediss://localhost:", 1)
			if tt.want != nil {
				wantOpenRefused(t, u, tt.want...)
				return
			}
			writeEveryMaster(t, mustOpenForm(t, u, false))
		})
	}
}

// TestSentinelTLSRefusedAtRunTime: Sentinels that come back, after Open,
// with a certificate of a CA this process does not trust (a renewal
// signed by another CA) fail the next dial with an error, on one line,
// that quotes the verification's failure and says what to trust, as
// Open's probe says it; until 7 Dec 2026 it said only that no Sentinel
// answered, with go-redis's x509 lines.
func TestSentinelTLSRefusedAtRunTime(t *testing.T) {
	ca, other := redistest.TrustedCA(t), redistest.NewCA(t)
	// The Sentinels trust both CAs, for the data nodes' certificates
	// (the first's) and the kit's look at them once renewed (the
	// other's); this process trusts the first only.
	bundle := filepath.Join(t.TempDir(), "bundle.pem")
	var pems []byte
	for _, f := range []string{ca.File, other.File} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		pems = append(pems, b...)
	}
	if err := os.WriteFile(bundle, pems, 0o644); err != nil {
		t.Fatal(err)
	}
	snFiles := ca.TLSFiles(t, "no")
	snFiles.CAFile = bundle
	s := redistest.MustStartSentinel(t, redistest.SentinelOptions{Node: redistest.Options{TLS: ca.TLSFiles(t, "no")}, SentinelTLS: snFiles})
	rdb, err := redisconn.Open(s.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	renewed := other.TLSFiles(t, "no")
	for _, f := range [][2]string{{renewed.CertFile, snFiles.CertFile}, {renewed.KeyFile, snFiles.KeyFile}} {
		b, err := os.ReadFile(f[0])
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f[1], b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, sn := range s.Sentinels {
		sn.Restart(t)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = rdb.Ping(ctx).Err()
	if err == nil {
		t.Fatal("PING succeeded with the Sentinels' certificate not trusted")
	}
	t.Logf("PING: %v", err)
	for _, want := range []string{"x509: certificate signed by unknown authority", "a Sentinel: the server's certificate is signed by a CA not trusted here", "SSL_CERT_FILE"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("PING: %v, want it to say %s", err, want)
		}
	}
	if strings.Contains(err.Error(), "\n") {
		t.Errorf("PING: %q, want one line", err)
	}
}
