package redisconn_test

import (
	"context"
	"crypto/x509"
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

// certQuery is the parameters that name a client certificate.
func certQuery(cert, key string) string {
	return "cert=" + url.QueryEscape(cert) + "&key=" + url.QueryEscape(key)
}

// withCert adds a client certificate to a URL: cert= and key=, after the
// URL's own parameters.
func withCert(rawURL string, f *redistest.TLSFiles) string {
	return withQuery(rawURL, certQuery(f.CertFile, f.KeyFile))
}

// wantRefusedAtOnce checks that Check refuses url, before anything is
// dialled, and Open too, each saying every one of want.
func wantRefusedAtOnce(t *testing.T, url string, want ...string) {
	t.Helper()
	err := redisconn.Check(url)
	if err == nil {
		t.Fatalf("Check(%q) = nil, want an error", url)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("Check(%q) = %v, want it to say %q", url, err, w)
		}
	}
	wantOpenRefused(t, url, want...)
}

// pingAnew drops every connection of the server but admin's (CLIENT
// KILL), so that rdb's PING dials anew, and returns the PING's error.
func pingAnew(t *testing.T, admin, rdb redis.UniversalClient) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := admin.ClientKillByFilter(ctx, "TYPE", "normal", "SKIPME", "yes").Err(); err != nil {
		t.Fatal(err)
	}
	return rdb.Ping(ctx).Err()
}

// withQuery adds parameters to a URL, after its own.
func withQuery(rawURL, query string) string {
	sep := "?"
	if strings.Contains(rawURL, "?") {
		sep = "&"
	}
	return rawURL + sep + query
}

// TestOpenMutualTLS: every form of a rediss:// URL presents the client
// certificate its cert= and key= name to servers that ask for one
// (tls-auth-clients yes), which refuse a connection without it: a single
// node, the plain URL of a node of a cluster (the probe and the cluster
// client it becomes, to every master), go-redis's cluster URL, and the
// Sentinel form (the Sentinels and the master they name). Until 7 Dec
// 2026 no binary could present one: mutual TLS was not supported.
func TestOpenMutualTLS(t *testing.T) {
	ca := redistest.TrustedCA(t)
	single := redistest.MustStart(t, redistest.Options{TLS: ca.TLSFiles(t, "yes")})
	c := redistest.MustStartCluster(t, redistest.ClusterOptions{Replicas: -1, Node: redistest.Options{TLS: ca.TLSFiles(t, "yes")}})
	s := redistest.MustStartSentinel(t, redistest.SentinelOptions{Node: redistest.Options{TLS: ca.TLSFiles(t, "yes")}})
	client := ca.TLSFiles(t, "yes") // a certificate of its own, not a server's
	for _, tt := range []struct {
		name    string
		url     string
		cluster bool
	}{
		{"single node", withCert(single.URL(), client), false},
		{"plain URL of a cluster node", withCert("rediss://"+c.Nodes[0].Addr, client), true},
		{"cluster URL", withCert(c.URL(), client), true},
		{"Sentinel URL", withCert(s.URL(), client), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if err := redisconn.Check(tt.url); err != nil {
				t.Fatalf("Check(%q): %v", tt.url, err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			rdb, err := redisconn.OpenContext(ctx, tt.url)
			if err != nil {
				t.Fatalf("OpenContext(%q): %v", tt.url, err)
			}
			defer rdb.Close()
			if _, isCluster := rdb.(*redis.ClusterClient); isCluster != tt.cluster {
				t.Fatalf("OpenContext(%q) = %T, want cluster %v", tt.url, rdb, tt.cluster)
			}
			writeEveryMaster(t, rdb)
		})
	}
	// Without the certificate, each is refused, saying what to add.
	for _, u := range []string{single.URL(), c.URL(), s.URL()} {
		wantOpenRefused(t, u, "certificate required", "cert=FILE&key=FILE")
	}
}

// TestOpenClientCertRefused: a client certificate that cannot work fails
// Check (what can be known without a server) or Open, at once, saying
// why: cert= on a URL without TLS, one of cert= and key= without the
// other, a file that is not there, a certificate and a key that are not
// a pair, a key encrypted with a passphrase (until 7 Dec 2026 said only
// as "failed to parse private key"); and a certificate the server refuses: of a CA it does not
// trust, expired, or for servers only (a server's certificate reused).
func TestOpenClientCertRefused(t *testing.T) {
	ca := redistest.TrustedCA(t)
	srv := redistest.MustStart(t, redistest.Options{TLS: ca.TLSFiles(t, "yes")})
	own, other := ca.TLSFiles(t, "yes"), ca.TLSFiles(t, "yes")
	for _, tt := range []struct {
		name string
		url  string
		want []string
	}{
		{"cert= without TLS", "redis://" + srv.Addr + "/0?" + certQuery(own.CertFile, own.KeyFile),
			[]string{"need a rediss:// URL"}},
		{"cert= without key=", srv.URL() + "?cert=" + url.QueryEscape(own.CertFile),
			[]string{"needs both cert=FILE and key=FILE"}},
		{"key= without cert=", srv.URL() + "?key=" + url.QueryEscape(own.KeyFile),
			[]string{"needs both cert=FILE and key=FILE"}},
		{"no such file", srv.URL() + "?" + certQuery(filepath.Join(t.TempDir(), "none.pem"), own.KeyFile),
			[]string{"none.pem", "no such file"}},
		{"not a pair", srv.URL() + "?" + certQuery(own.CertFile, other.KeyFile),
			[]string{"private key does not match public key"}},
		{"cluster URL, not a pair", "rediss://" + srv.Addr + "?addr=" + srv.Addr + "&" + certQuery(own.CertFile, other.KeyFile),
			[]string{"private key does not match public key"}},
		// Keys encrypted by OpenSSL 3.0 (testdata: genpkey -aes-256-cbc,
		// then ec -aes256 for the older form), passphrase feed-test.
		{"key encrypted, PKCS #8", srv.URL() + "?" + certQuery(own.CertFile, "testdata/encrypted-pkcs8.key"),
			[]string{"key=testdata/encrypted-pkcs8.key: the key is encrypted", "openssl pkey -in testdata/encrypted-pkcs8.key -out NEWFILE"}},
		{"key encrypted, older PEM form", srv.URL() + "?" + certQuery(own.CertFile, "testdata/encrypted-legacy.key"),
			[]string{"the key is encrypted (it asks for a passphrase)", "openssl pkey"}},
	} {
		t.Run(tt.name, func(t *testing.T) { wantRefusedAtOnce(t, tt.url, tt.want...) })
	}
	// What only the server can tell: each refusal names the certificate
	// and what is wrong with it.
	for _, tt := range []struct {
		name  string
		files *redistest.TLSFiles
		want  []string
	}{
		{"certificate of a CA the server does not trust", redistest.NewCA(t).TLSFiles(t, "yes"),
			[]string{"unknown certificate authority", "refuses the URL's client certificate", "tls-ca-cert-file"}},
		{"expired certificate", ca.ClientFiles(t, func(c *x509.Certificate) {
			c.NotBefore, c.NotAfter = time.Now().Add(-2*time.Hour), time.Now().Add(-time.Hour)
		}), []string{"expired certificate", "client certificate (cert=) expired: renew it"}},
		{"certificate for servers only", ca.ClientFiles(t, func(c *x509.Certificate) {
			c.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		}), []string{"unsupported certificate", "refuses the URL's client certificate", "client authentication"}},
	} {
		t.Run(tt.name, func(t *testing.T) { wantOpenRefused(t, withCert(srv.URL(), tt.files), tt.want...) })
	}
}

// TestClientCertRenewed: the client certificate's files are read again
// for every new connection, so a renewed certificate is presented without
// a restart, and a renewal half written (a certificate and a key that are
// not a pair yet) leaves the last pair read in use.
func TestClientCertRenewed(t *testing.T) {
	ca := redistest.TrustedCA(t)
	srv := redistest.MustStart(t, redistest.Options{TLS: ca.TLSFiles(t, "yes")})
	first := ca.TLSFiles(t, "yes")
	dir := t.TempDir()
	files := &redistest.TLSFiles{CertFile: filepath.Join(dir, "client.pem"), KeyFile: filepath.Join(dir, "client.key")}
	put := func(cert, key string) {
		t.Helper()
		for _, f := range [][2]string{{cert, files.CertFile}, {key, files.KeyFile}} {
			b, err := os.ReadFile(f[0])
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(f[1], b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	put(first.CertFile, first.KeyFile)
	rdb, err := redisconn.Open(withCert(srv.URL(), files))
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	admin := srv.Client(t)
	ping := func() error { t.Helper(); return pingAnew(t, admin, rdb) }
	if err := ping(); err != nil {
		t.Fatalf("PING with the first certificate: %v", err)
	}

	renewed := ca.TLSFiles(t, "yes")
	put(renewed.CertFile, first.KeyFile) // half written: the new certificate, the old key
	if err := ping(); err != nil {
		t.Fatalf("PING while the files are no pair: %v (want the last pair read)", err)
	}
	put(renewed.CertFile, renewed.KeyFile)
	if err := ping(); err != nil {
		t.Fatalf("PING with the renewed certificate: %v", err)
	}

	// The renewal read: a certificate the server does not trust is
	// presented, and refused.
	stranger := redistest.NewCA(t).TLSFiles(t, "yes")
	put(stranger.CertFile, stranger.KeyFile)
	if err := ping(); err == nil || !strings.Contains(err.Error(), "unknown certificate authority") {
		t.Fatalf("PING with a certificate of another CA: %v, want the server's refusal", err)
	}
}
