package redisconn_test

import (
	"context"
	"net/url"
	"path/filepath"
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

// TestOpenCACert: every form of a rediss:// URL verifies the servers'
// certificates against the CA its cacert= names, one this process does
// not otherwise trust (SSL_CERT_FILE names another): a single node, the
// plain URL of a node of a cluster (the probe and every master), go-redis's
// cluster URL, and the Sentinel form (the Sentinels and the master they
// name); and with a client certificate as well, for a server that asks
// for one. The URL's CA replaces the system's pool rather than adding to
// it: a server of the CA that the process trusts is refused under
// another's cacert=. Until 7 Dec 2026 a private CA could only be trusted
// for the whole process, through SSL_CERT_FILE or SSL_CERT_DIR.
func TestOpenCACert(t *testing.T) {
	ca := redistest.NewCA(t) // not the CA of SSL_CERT_FILE
	single := redistest.MustStart(t, redistest.Options{TLS: ca.TLSFiles(t, "no")})
	mutual := redistest.MustStart(t, redistest.Options{TLS: ca.TLSFiles(t, "yes")})
	c := redistest.MustStartCluster(t, redistest.ClusterOptions{Replicas: -1, Node: redistest.Options{TLS: ca.TLSFiles(t, "no")}})
	s := redistest.MustStartSentinel(t, redistest.SentinelOptions{Node: redistest.Options{TLS: ca.TLSFiles(t, "no")}})
	for _, tt := range []struct {
		name    string
		url     string
		cluster bool
	}{
		{"single node", single.URL(), false},
		{"plain URL of a cluster node", "rediss://" + c.Nodes[0].Addr, true},
		{"cluster URL", c.URL(), true},
		{"Sentinel URL", s.URL(), false},
		{"single node, with a client certificate", withCert(mutual.URL(), ca.TLSFiles(t, "yes")), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			// Without the CA, the system's pool does not trust the
			// servers, and the hint names cacert=.
			wantOpenRefused(t, tt.url, "certificate signed by unknown authority", "cacert=FILE")

			u := withCA(tt.url, ca.File)
			if err := redisconn.Check(u); err != nil {
				t.Fatalf("Check(%q): %v", u, err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			rdb, err := redisconn.OpenContext(ctx, u)
			if err != nil {
				t.Fatalf("OpenContext(%q): %v", u, err)
			}
			defer rdb.Close()
			if _, isCluster := rdb.(*redis.ClusterClient); isCluster != tt.cluster {
				t.Fatalf("OpenContext(%q) = %T, want cluster %v", u, rdb, tt.cluster)
			}
			writeEveryMaster(t, rdb)
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
