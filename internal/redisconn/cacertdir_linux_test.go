package redisconn_test

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/codemojex/feed/internal/redisconn"
	"github.com/codemojex/feed/internal/testkit/redistest"
)

// withCADir adds cacertdir= to a URL, after the URL's own parameters.
func withCADir(rawURL, dir string) string {
	return withQuery(rawURL, "cacertdir="+url.QueryEscape(dir))
}

// mustCADir returns a new directory laid out as OpenSSL's CApath often
// is: the CA's certificate reached through a hashed name that is a
// symbolic link to a file elsewhere, beside files that hold no
// certificate (a README, a CRL), a subdirectory and a dangling link.
func mustCADir(t *testing.T, caFile string) string {
	t.Helper()
	dir, elsewhere := t.TempDir(), t.TempDir()
	target := filepath.Join(elsewhere, "ca.pem")
	copyFile(t, caFile, target)
	for _, err := range []error{
		os.Symlink(target, filepath.Join(dir, "5d8e3c1a.0")),
		os.WriteFile(filepath.Join(dir, "README"), []byte("CAs for Redis\n"), 0o644),
		os.WriteFile(filepath.Join(dir, "5d8e3c1a.r0"), []byte("-----BEGIN X509 CRL-----\nMA==\n-----END X509 CRL-----\n"), 0o644),
		os.Mkdir(filepath.Join(dir, "old"), 0o755),
		os.Symlink(filepath.Join(elsewhere, "gone.pem"), filepath.Join(dir, "0badf00d.0")),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestOpenCACertDir: every form of a rediss:// URL verifies the servers'
// certificates against the CAs of the directory its cacertdir= names
// (each regular file, links followed; the files without a certificate
// add nothing), one CA this process does not otherwise trust: a single
// node, go-redis's cluster URL and the Sentinel form; and each new
// connection reads the directory again. The directory's CAs replace the
// system's pool, as cacert='s do.
func TestOpenCACertDir(t *testing.T) {
	ca := redistest.NewCA(t) // not the CA of SSL_CERT_FILE
	single := redistest.MustStart(t, redistest.Options{TLS: ca.TLSFiles(t, "no")})
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
		{"cluster URL", c.URL(), true, c.Nodes},
		{"Sentinel URL", s.URL(), false, s.Nodes},
	} {
		t.Run(tt.name, func(t *testing.T) {
			wantOpenRefused(t, tt.url, "certificate signed by unknown authority", "cacertdir=DIR")
			wantOpenRefused(t, withCADir(tt.url, mustCADir(t, other.File)), "certificate signed by unknown authority")

			dir := mustCADir(t, ca.File)
			rdb := mustOpenForm(t, withCADir(tt.url, dir), tt.cluster)
			writeEveryMaster(t, rdb)

			// The directory, not what Open read, verifies every new
			// connection: with the CA's link gone and another CA put
			// in, the next dial fails, whichever node it goes to.
			if err := os.Remove(filepath.Join(dir, "5d8e3c1a.0")); err != nil {
				t.Fatal(err)
			}
			copyFile(t, other.File, filepath.Join(dir, "other.pem"))
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			for _, n := range tt.nodes {
				if err := n.Client(t).ClientKillByFilter(ctx, "TYPE", "normal", "SKIPME", "yes").Err(); err != nil {
					t.Fatal(err)
				}
			}
			if err := rdb.Ping(ctx).Err(); err == nil || !strings.Contains(err.Error(), "certificate signed by unknown authority") {
				t.Fatalf("PING after the directory changed to another CA: %v, want unknown authority", err)
			}
		})
	}
}

// TestOpenCACertAndDir: a URL that names both cacert= and cacertdir=
// trusts the CAs of both: a server of the file's CA and a server of the
// directory's, with the same URL's parameters.
func TestOpenCACertAndDir(t *testing.T) {
	fileCA, dirCA := redistest.NewCA(t), redistest.NewCA(t)
	byFile := redistest.MustStart(t, redistest.Options{TLS: fileCA.TLSFiles(t, "no")})
	byDir := redistest.MustStart(t, redistest.Options{TLS: dirCA.TLSFiles(t, "no")})
	dir := mustCADir(t, dirCA.File)
	for _, srv := range []*redistest.Server{byFile, byDir} {
		u := withCADir(withCA(srv.URL(), fileCA.File), dir)
		rdb := mustOpenForm(t, u, false)
		writeEveryMaster(t, rdb)
	}
}

// TestOpenCACertDirRefused: a cacertdir= that cannot work fails Check,
// before anything is dialled, saying why: on a URL without TLS, empty, a
// directory that is not there, a file in place of a directory, a
// directory without a certificate, both CA parameters without one, and
// with skip_verify=true.
func TestOpenCACertDirRefused(t *testing.T) {
	ca := redistest.NewCA(t)
	srv := redistest.MustStart(t, redistest.Options{TLS: ca.TLSFiles(t, "no")})
	noCert := t.TempDir()
	if err := os.WriteFile(filepath.Join(noCert, "README"), []byte("nothing here yet\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	keyOnly := ca.TLSFiles(t, "no").KeyFile // PEM, but no certificate
	for _, tt := range []struct {
		name string
		url  string
		want []string
	}{
		{"without TLS", withCADir("redis://"+srv.Addr+"/0", noCert), []string{"need a rediss:// URL"}},
		{"empty", srv.URL() + "?cacertdir=", []string{"cacertdir= is empty"}},
		{"no such directory", withCADir(srv.URL(), filepath.Join(noCert, "none")), []string{"cacertdir=", "none", "no such file"}},
		{"a file, not a directory", withCADir(srv.URL(), ca.File), []string{"cacertdir=", "not a directory"}},
		{"no certificate in the directory", withCADir(srv.URL(), noCert), []string{"CA directory cacertdir=", "holds no PEM certificate"}},
		{"no certificate in either", withCADir(withCA(srv.URL(), keyOnly), noCert), []string{"neither CA file cacert=", "nor directory cacertdir=", "holds a PEM certificate"}},
		{"with skip_verify=true", withCADir(srv.URL()+"?skip_verify=true", mustCADir(t, ca.File)), []string{"cacertdir= names the CAs", "skip_verify=true verifies nothing"}},
	} {
		t.Run(tt.name, func(t *testing.T) { wantRefusedAtOnce(t, tt.url, tt.want...) })
	}
}

// TestCACertDirRenewed: the directory of cacertdir= is read again for
// every new connection, so a CA whose file is added to it (a rotation)
// is trusted without a restart, and a directory emptied for a moment (a
// rewrite half done) leaves the last CAs read in use.
func TestCACertDirRenewed(t *testing.T) {
	oldCA, newCA := redistest.NewCA(t), redistest.NewCA(t)
	srv := redistest.MustStart(t, redistest.Options{TLS: oldCA.TLSFiles(t, "no")})
	dir := t.TempDir()
	copyFile(t, oldCA.File, filepath.Join(dir, "old.pem"))
	rdb, err := redisconn.Open(withCADir(srv.URL(), dir))
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	admin := srv.Client(t)
	if err := pingAnew(t, admin, rdb); err != nil {
		t.Fatalf("PING with the first CA: %v", err)
	}

	renewed := newCA.TLSFiles(t, "no")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := admin.Do(ctx, "CONFIG", "SET", "tls-cert-file", renewed.CertFile, "tls-key-file", renewed.KeyFile).Err(); err != nil {
		t.Fatal(err)
	}
	if err := pingAnew(t, admin, rdb); err == nil || !strings.Contains(err.Error(), "certificate signed by unknown authority") {
		t.Fatalf("PING of a server whose CA the directory does not hold: %v, want unknown authority", err)
	}

	copyFile(t, newCA.File, filepath.Join(dir, "new.pem")) // the rotation: a file added
	if err := pingAnew(t, admin, rdb); err != nil {
		t.Fatalf("PING once the directory holds the new CA too: %v", err)
	}
	for _, f := range []string{"old.pem", "new.pem"} { // emptied, to be filled again
		if err := os.Remove(filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	if err := pingAnew(t, admin, rdb); err != nil {
		t.Fatalf("PING while the directory holds no certificate: %v (want the last CAs read)", err)
	}
}
