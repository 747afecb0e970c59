package redisconn_test

import (
	"bytes"
	"context"
	"fmt"
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
	writeFile(t, to, readFile(t, from))
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
// certificates against the CA its cacert= names, or the CAs of the
// directory its cacertdir= names (each regular file, links followed; the
// files without a certificate add nothing), one CA this process does not
// otherwise trust (SSL_CERT_FILE names another): a single node, the plain
// URL of a node of a cluster (the probe and every master), go-redis's
// cluster URL, and the Sentinel form (the Sentinels and the master they
// name); and with a client certificate as well, for a server that asks
// for one; and each reads the file or the directory again for each new
// connection. The URL's CAs replace the system's pool rather than adding
// to it: a server of the CA that the process trusts is refused under
// another's cacert=. Until 7 Dec 2026 a private CA could only be trusted
// for the whole process, through SSL_CERT_FILE or SSL_CERT_DIR.
func TestOpenCACert(t *testing.T) {
	ca := redistest.NewCA(t) // not the CA of SSL_CERT_FILE
	single := redistest.MustStart(t, redistest.Options{TLS: ca.TLSFiles(t, "no")})
	mutual := redistest.MustStart(t, redistest.Options{TLS: ca.TLSFiles(t, "yes")})
	c := redistest.MustStartCluster(t, redistest.ClusterOptions{Replicas: -1, Node: redistest.Options{TLS: ca.TLSFiles(t, "no")}})
	s := redistest.MustStartSentinel(t, redistest.SentinelOptions{Node: redistest.Options{TLS: ca.TLSFiles(t, "no")}})
	other := redistest.NewCA(t)
	// A place for the CAs: it returns the URL's parameter naming a new
	// one that holds the CA of caFile, and a function that puts another
	// CA, of otherFile, in place of that one.
	type place func(t *testing.T, caFile string) (param string, swap func(otherFile string))
	var (
		file place = func(t *testing.T, caFile string) (string, func(string)) {
			f := filepath.Join(t.TempDir(), "ca.pem")
			copyFile(t, caFile, f)
			return "cacert=" + url.QueryEscape(f), func(otherFile string) { copyFile(t, otherFile, f) }
		}
		dir place = func(t *testing.T, caFile string) (string, func(string)) {
			d := mustCADir(t, caFile)
			return "cacertdir=" + url.QueryEscape(d), func(otherFile string) {
				if err := os.Remove(filepath.Join(d, caDirLink)); err != nil {
					t.Fatal(err)
				}
				copyFile(t, otherFile, filepath.Join(d, "other.pem"))
			}
		}
	)
	for _, tt := range []struct {
		name    string
		url     string
		cluster bool
		nodes   []*redistest.Server // the data nodes
		at      place
	}{
		{"single node", single.URL(), false, []*redistest.Server{single}, file},
		{"plain URL of a cluster node", "rediss://" + c.Nodes[0].Addr, true, c.Nodes, file},
		{"cluster URL", c.URL(), true, c.Nodes, file},
		{"Sentinel URL", s.URL(), false, s.Nodes, file},
		{"single node, with a client certificate", withCert(mutual.URL(), ca.TLSFiles(t, "yes")), false, []*redistest.Server{mutual}, file},
		{"single node, cacertdir=", single.URL(), false, []*redistest.Server{single}, dir},
		{"cluster URL, cacertdir=", c.URL(), true, c.Nodes, dir},
		{"Sentinel URL, cacertdir=", s.URL(), false, s.Nodes, dir},
	} {
		t.Run(tt.name, func(t *testing.T) {
			// Without the CA, the system's pool does not trust the
			// servers, and the hint names the URL's parameters; nor
			// does a place that holds another CA.
			wantOpenRefused(t, tt.url, "certificate signed by unknown authority", "cacert=FILE or cacertdir=DIR")
			param, _ := tt.at(t, other.File)
			wantOpenRefused(t, withQuery(tt.url, param), "certificate signed by unknown authority")

			param, swap := tt.at(t, ca.File)
			rdb := mustOpenForm(t, withQuery(tt.url, param), tt.cluster)
			writeEveryMaster(t, rdb)

			// The place, not what Open read, verifies every new
			// connection: with another CA in place of the CA, the next
			// dial fails, whichever node it goes to (TestCACertRenewed).
			swap(other.File)
			wantRedialUntrusted(t, rdb, tt.nodes)
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

// wantRedialUntrusted drops every client connection of nodes (CLIENT
// KILL), so that rdb's next PING dials anew, and checks that the dial
// fails the server's certificate as signed by an unknown authority.
func wantRedialUntrusted(t *testing.T, rdb redis.UniversalClient, nodes []*redistest.Server) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, n := range nodes {
		if err := n.Client(t).ClientKillByFilter(ctx, "TYPE", "normal", "SKIPME", "yes").Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := rdb.Ping(ctx).Err(); err == nil || !strings.Contains(err.Error(), "certificate signed by unknown authority") {
		t.Fatalf("PING after the CAs changed to another: %v, want unknown authority", err)
	}
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

// TestCACertRenewed: the CA file of cacert=, and the directory of
// cacertdir=, are read again for every new connection, so a CA added (a
// rotation: the servers' certificates then issued by the new CA; a file
// added to the directory) is trusted without a restart, and a place that
// holds no certificate for a moment (a file rewritten half-way, a
// directory emptied to be filled again) leaves the last CAs read in use.
func TestCACertRenewed(t *testing.T) {
	for _, form := range []struct {
		name string
		// at makes a place for the CAs and returns the URL's parameter
		// that names it, and a function that makes it hold pems (none: a
		// rewrite half done).
		at func(t *testing.T) (param string, hold func(pems ...[]byte))
	}{
		{"cacert= file", func(t *testing.T) (string, func(...[]byte)) {
			file := filepath.Join(t.TempDir(), "ca.pem")
			return "cacert=" + url.QueryEscape(file), func(pems ...[]byte) {
				b := []byte("-----BEGIN CERT") // rewritten half-way
				if len(pems) > 0 {
					b = bytes.Join(pems, nil)
				}
				writeFile(t, file, b)
			}
		}},
		{"cacertdir= directory", func(t *testing.T) (string, func(...[]byte)) {
			dir := t.TempDir()
			return "cacertdir=" + url.QueryEscape(dir), func(pems ...[]byte) {
				if err := os.RemoveAll(dir); err != nil {
					t.Fatal(err)
				}
				if err := os.Mkdir(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				for i, pem := range pems {
					writeFile(t, filepath.Join(dir, fmt.Sprintf("ca%d.pem", i)), pem)
				}
			}
		}},
	} {
		t.Run(form.name, func(t *testing.T) {
			oldCA, newCA := redistest.NewCA(t), redistest.NewCA(t)
			srv := redistest.MustStart(t, redistest.Options{TLS: oldCA.TLSFiles(t, "no")})
			param, hold := form.at(t)
			hold(readFile(t, oldCA.File))
			rdb, err := redisconn.Open(withQuery(srv.URL(), param))
			if err != nil {
				t.Fatal(err)
			}
			defer rdb.Close()
			admin := srv.Client(t)
			if err := pingAnew(t, admin, rdb); err != nil {
				t.Fatalf("PING with the first CA: %v", err)
			}

			// The server takes a certificate of the new CA, which the
			// place does not hold yet: refused, so the place is what
			// verifies.
			renewed := newCA.TLSFiles(t, "no")
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := admin.Do(ctx, "CONFIG", "SET", "tls-cert-file", renewed.CertFile, "tls-key-file", renewed.KeyFile).Err(); err != nil {
				t.Fatal(err)
			}
			if err := pingAnew(t, admin, rdb); err == nil || !strings.Contains(err.Error(), "certificate signed by unknown authority") {
				t.Fatalf("PING of a server whose CA is not held: %v, want unknown authority", err)
			}

			hold(readFile(t, oldCA.File), readFile(t, newCA.File)) // the rotation: both CAs
			if err := pingAnew(t, admin, rdb); err != nil {
				t.Fatalf("PING once the new CA is held too: %v", err)
			}
			hold()
			if err := pingAnew(t, admin, rdb); err != nil {
				t.Fatalf("PING while no certificate is held: %v (want the last CAs read)", err)
			}
		})
	}
}

// writeFile writes b to the file name, or fails t.
func writeFile(t *testing.T, name string, b []byte) {
	t.Helper()
	if err := os.WriteFile(name, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
