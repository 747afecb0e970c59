package redisconn_test

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/internal/redisconn"
	"github.com/codemojex/feed/internal/testkit/redistest"
)

// withCA adds cacert= to a URL, after the URL's own parameters.
func withCA(rawURL, caFile string) string {
	return withQuery(rawURL, "cacert="+url.QueryEscape(caFile))
}

// readFile returns the bytes of a file, or fails t.
func readFile(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// copyFile writes the bytes of the file from to the file to, or fails t.
func copyFile(t *testing.T, from, to string) {
	t.Helper()
	if err := os.WriteFile(to, readFile(t, from), 0o644); err != nil {
		t.Fatal(err)
	}
}

// mustOpenForm checks that Check takes u and OpenContext opens it, as a
// cluster client when cluster and as a single-node or failover client
// otherwise, and returns the client, closed when the test ends.
func mustOpenForm(t *testing.T, u string, cluster bool) redis.UniversalClient {
	t.Helper()
	if err := redisconn.Check(u); err != nil {
		t.Fatalf("Check(%q): %v", u, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rdb, err := redisconn.OpenContext(ctx, u)
	if err != nil {
		t.Fatalf("OpenContext(%q): %v", u, err)
	}
	t.Cleanup(func() { rdb.Close() })
	if _, isCluster := rdb.(*redis.ClusterClient); isCluster != cluster {
		t.Fatalf("OpenContext(%q) = %T, want cluster %v", u, rdb, cluster)
	}
	return rdb
}

// TestOpenCACert: every form of a rediss:// URL verifies the servers'
// certificates against the CA its cacert= names, one this process does
// not otherwise trust (SSL_CERT_FILE names another): a single node, the
// plain URL of a node of a cluster (the probe and every master), go-redis's
// cluster URL, and the Sentinel form (the Sentinels and the master they
// name); and with a client certificate as well, for a server that asks
// for one; and each reads the file again for each new connection. The URL's CA replaces the system's pool rather than adding to
// it: a server of the CA that the process trusts is refused under
// another's cacert=. Until 7 Dec 2026 a private CA could only be trusted
// for the whole process, through SSL_CERT_FILE or SSL_CERT_DIR.
func TestOpenCACert(t *testing.T) {
	ca := redistest.NewCA(t) // not the CA of SSL_CERT_FILE
	single := redistest.MustStart(t, redistest.Options{TLS: ca.TLSFiles(t, "no")})
	mutual := redistest.MustStart(t, redistest.Options{TLS: ca.TLSFiles(t, "yes")})
	c := redistest.MustStartCluster(t, redistest.ClusterOptions{Replicas: -1, Node: redistest.Options{TLS: ca.TLSFiles(t, "no")}})
	s := redistest.MustStartSentinel(t, redistest.SentinelOptions{Node: redistest.Options{TLS: ca.TLSFiles(t, "no")}})
	other := redistest.NewCA(t)
	for _, tt := range []struct {
		name    string
		url     string
		cluster bool
		nodes   []*redistest.Server // the data nodes
	}{
		{"single node", single.URL(), false, []*redistest.Server{single}},
		{"plain URL of a cluster node", "rediss://" + c.Nodes[0].Addr, true, c.Nodes},
		{"cluster URL", c.URL(), true, c.Nodes},
		{"Sentinel URL", s.URL(), false, s.Nodes},
		{"single node, with a client certificate", withCert(mutual.URL(), ca.TLSFiles(t, "yes")), false, []*redistest.Server{mutual}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			// Without the CA, the system's pool does not trust the
			// servers, and the hint names cacert=.
			wantOpenRefused(t, tt.url, "certificate signed by unknown authority", "cacert=FILE")

			file := filepath.Join(t.TempDir(), "ca.pem")
			copyFile(t, ca.File, file)
			rdb := mustOpenForm(t, withCA(tt.url, file), tt.cluster)
			writeEveryMaster(t, rdb)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()

			// The file, not what Open read, verifies every new
			// connection: with another CA in it, the next dial fails,
			// whichever node it goes to (TestCACertRenewed).
			copyFile(t, other.File, file)
			for _, n := range tt.nodes {
				if err := n.Client(t).ClientKillByFilter(ctx, "TYPE", "normal", "SKIPME", "yes").Err(); err != nil {
					t.Fatal(err)
				}
			}
			if err := rdb.Ping(ctx).Err(); err == nil || !strings.Contains(err.Error(), "certificate signed by unknown authority") {
				t.Fatalf("PING after the file changed to another CA: %v, want unknown authority", err)
			}
		})
	}

	trusted := redistest.MustStartTLS(t, redistest.TrustedCA(t))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if rdb, err := redisconn.OpenContext(ctx, trusted.URL()); err != nil { // the process trusts its CA
		t.Fatalf("OpenContext(%q) without cacert=: %v", trusted.URL(), err)
	} else {
		rdb.Close()
	}
	wantOpenRefused(t, withCA(trusted.URL(), ca.File), "certificate signed by unknown authority")
}

// TestOpenCACertRefused: a cacert= that cannot work fails Check, before
// anything is dialled, saying why: on a URL without TLS, empty, a file
// that is not there, a file that holds no certificate, and with
// skip_verify=true, which would verify nothing against it.
func TestOpenCACertRefused(t *testing.T) {
	ca := redistest.NewCA(t)
	srv := redistest.MustStart(t, redistest.Options{TLS: ca.TLSFiles(t, "no")})
	keyOnly := ca.TLSFiles(t, "no").KeyFile // PEM, but no certificate
	for _, tt := range []struct {
		name string
		url  string
		want []string
	}{
		{"without TLS", withCA("redis://"+srv.Addr+"/0", ca.File), []string{"need a rediss:// URL"}},
		{"empty", srv.URL() + "?cacert=", []string{"cacert= is empty"}},
		{"no such file", withCA(srv.URL(), filepath.Join(t.TempDir(), "none.pem")), []string{"cacert=", "none.pem", "no such file"}},
		{"no certificate in the file", withCA(srv.URL(), keyOnly), []string{"holds no PEM certificate"}},
		{"with skip_verify=true", withCA(srv.URL()+"?skip_verify=true", ca.File), []string{"skip_verify=true verifies nothing"}},
		{"cluster URL, no such file", withCA("rediss://"+srv.Addr+"?addr="+srv.Addr, filepath.Join(t.TempDir(), "none.pem")), []string{"no such file"}},
	} {
		t.Run(tt.name, func(t *testing.T) { wantRefusedAtOnce(t, tt.url, tt.want...) })
	}
}

// TestCACertRenewed: the CA file of cacert= is read again for every new
// connection, so a CA added to it (a rotation: the servers' certificates
// then issued by the new CA) is trusted without a restart, and a file
// rewritten half-way (no certificate in it yet) leaves the last CAs read
// in use.
func TestCACertRenewed(t *testing.T) {
	oldCA, newCA := redistest.NewCA(t), redistest.NewCA(t)
	srv := redistest.MustStart(t, redistest.Options{TLS: oldCA.TLSFiles(t, "no")})
	file := filepath.Join(t.TempDir(), "ca.pem")
	put := func(pem []byte) {
		t.Helper()
		if err := os.WriteFile(file, pem, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	copyFile(t, oldCA.File, file)
	rdb, err := redisconn.Open(withCA(srv.URL(), file))
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	admin := srv.Client(t)
	if err := pingAnew(t, admin, rdb); err != nil {
		t.Fatalf("PING with the first CA: %v", err)
	}

	// The server takes a certificate of the new CA, which the file does
	// not hold yet: refused, so the file is what verifies.
	renewed := newCA.TLSFiles(t, "no")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := admin.Do(ctx, "CONFIG", "SET", "tls-cert-file", renewed.CertFile, "tls-key-file", renewed.KeyFile).Err(); err != nil {
		t.Fatal(err)
	}
	if err := pingAnew(t, admin, rdb); err == nil || !strings.Contains(err.Error(), "certificate signed by unknown authority") {
		t.Fatalf("PING of a server whose CA the file does not hold: %v, want unknown authority", err)
	}

	put(append(readFile(t, oldCA.File), readFile(t, newCA.File)...)) // the rotation: both CAs
	if err := pingAnew(t, admin, rdb); err != nil {
		t.Fatalf("PING once the file holds the new CA too: %v", err)
	}
	put([]byte("-----BEGIN CERT")) // rewritten half-way
	if err := pingAnew(t, admin, rdb); err != nil {
		t.Fatalf("PING while the file holds no certificate: %v (want the last CAs read)", err)
	}
}
