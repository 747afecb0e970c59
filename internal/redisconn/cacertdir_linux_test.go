package redisconn_test

import (
	"net/url"
	"os"
	"path/filepath"
	"testing"

	"github.com/codemojex/feed/internal/testkit/redistest"
)

// withCADir adds cacertdir= to a URL, after the URL's own parameters.
func withCADir(rawURL, dir string) string {
	return withQuery(rawURL, "cacertdir="+url.QueryEscape(dir))
}

// caDirLink is the name mustCADir gives the CA's certificate, a hashed
// name as OpenSSL's c_rehash makes.
const caDirLink = "5d8e3c1a.0"

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
		os.Symlink(target, filepath.Join(dir, caDirLink)),
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
