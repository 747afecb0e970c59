package redistest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/codemojex/feed/internal/proc"
)

// TLSFiles are the PEM files of a TLS server (Options.TLS).
type TLSFiles = proc.TLSFiles

// CertEnv names the environment variable through which a Go program on
// Linux trusts a private CA: its system pool is read from the file it
// names (crypto/x509), once per process.
const CertEnv = "SSL_CERT_FILE"

// CA is a throwaway certificate authority (ECDSA P-256, valid for a day)
// whose certificates a test's TLS servers present: nothing trusts it
// unless the test says so.
type CA struct {
	// File is the CA's certificate (PEM), what an operator names in
	// SSL_CERT_FILE.
	File string

	dir  string
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

// NewCA makes a CA in a temporary directory of tb.
func NewCA(tb testing.TB) *CA {
	tb.Helper()
	ca, err := newCA(tb.TempDir(), "codemojex test CA")
	if err != nil {
		tb.Fatal(err)
	}
	return ca
}

// Env returns the environment entry that makes a Go program (a binary a
// test runs) trust ca: SSL_CERT_FILE=File.
func (ca *CA) Env() string { return CertEnv + "=" + ca.File }

// TLSFiles issues a certificate signed by ca for 127.0.0.1 and localhost,
// for server and client authentication, and returns the files that start
// a server with it (Options.TLS) and with --tls-auth-clients auth ("no",
// "optional" or "yes").
func (ca *CA) TLSFiles(tb testing.TB, auth string) *TLSFiles {
	tb.Helper()
	return ca.TLSFilesFor(tb, auth, "127.0.0.1", "localhost")
}

// TLSFilesFor is TLSFiles with a certificate for hosts (IP addresses or
// DNS names) only: a certificate not for the address a client dials.
func (ca *CA) TLSFilesFor(tb testing.TB, auth string, hosts ...string) *TLSFiles {
	tb.Helper()
	certFile, keyFile, err := ca.issue(tb.TempDir(), hosts...)
	if err != nil {
		tb.Fatal(err)
	}
	return &TLSFiles{CertFile: certFile, KeyFile: keyFile, CAFile: ca.File, AuthClients: auth}
}

// ClientFiles issues a client certificate signed by ca, made otherwise by
// mod (a validity that has ended, an extended key usage without client
// authentication), and returns its files, CAFile set. A server's own
// certificate is TLSFiles'.
func (ca *CA) ClientFiles(tb testing.TB, mod func(*x509.Certificate)) *TLSFiles {
	tb.Helper()
	certFile, keyFile, err := ca.issueWith(tb.TempDir(), mod, "127.0.0.1")
	if err != nil {
		tb.Fatal(err)
	}
	return &TLSFiles{CertFile: certFile, KeyFile: keyFile, CAFile: ca.File}
}

// MustStartTLS starts a server that speaks TLS only (no plain-text port)
// with a certificate of ca, clients not asked for theirs, as MustStart
// does; its URL is rediss://. Options.TLS, when given, wins.
func MustStartTLS(tb testing.TB, ca *CA, opts ...Options) *Server {
	tb.Helper()
	var o Options
	if len(opts) > 0 {
		o = opts[0]
	}
	if o.TLS == nil {
		o.TLS = ca.TLSFiles(tb, "no")
	}
	return MustStart(tb, o)
}

func newCA(dir, name string) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("redistest: ca: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("redistest: ca: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("redistest: ca: %w", err)
	}
	file := filepath.Join(dir, "ca.pem")
	if err := writePEM(file, "CERTIFICATE", der, 0o644); err != nil {
		return nil, err
	}
	return &CA{File: file, dir: dir, cert: cert, key: key}, nil
}

// issue writes a certificate signed by ca for hosts (IP addresses or DNS
// names), and its key, to dir.
func (ca *CA) issue(dir string, hosts ...string) (certFile, keyFile string, err error) {
	return ca.issueWith(dir, nil, hosts...)
}

// issueWith is issue with the certificate's template changed by mod
// (when not nil) before it is signed.
func (ca *CA) issueWith(dir string, mod func(*x509.Certificate), hosts ...string) (certFile, keyFile string, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", fmt.Errorf("redistest: certificate: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: hosts[0]},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		// Client too: a cluster node presents it on its bus and to its
		// master, and the kit's clients present it to a server that asks.
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	if mod != nil {
		mod(tmpl)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return "", "", fmt.Errorf("redistest: certificate: %w", err)
	}
	pk, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return "", "", fmt.Errorf("redistest: certificate: %w", err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := writePEM(certFile, "CERTIFICATE", der, 0o644); err != nil {
		return "", "", err
	}
	if err := writePEM(keyFile, "PRIVATE KEY", pk, 0o600); err != nil {
		return "", "", err
	}
	return certFile, keyFile, nil
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	return n
}

func writePEM(file, typ string, der []byte, perm os.FileMode) error {
	if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), perm); err != nil {
		return fmt.Errorf("redistest: %w", err)
	}
	return nil
}

// trusted is the CA RunTrusting made the process trust.
var trusted *CA

// RunTrusting runs m with a CA that the test process trusts the way an
// operator makes a Go binary trust a private CA: SSL_CERT_FILE names it
// before anything reads the system pool, which Go reads once per process.
// Call it from TestMain, os.Exit(redistest.RunTrusting(m)), and get the
// CA with TrustedCA. The binaries a test runs inherit SSL_CERT_FILE.
func RunTrusting(m *testing.M) int {
	dir, err := os.MkdirTemp("", "codemojex-ca-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "redistest:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	ca, err := newCA(dir, "codemojex trusted test CA")
	if err == nil {
		err = os.Setenv(CertEnv, ca.File)
	}
	if err == nil {
		err = ca.checkTrusted(dir)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "redistest:", err)
		return 1
	}
	trusted = ca
	return m.Run()
}

// checkTrusted verifies a certificate of ca against the system pool: it
// fails when the pool was read before SSL_CERT_FILE named ca.
func (ca *CA) checkTrusted(dir string) error {
	certFile, _, err := ca.issue(dir, "127.0.0.1")
	if err != nil {
		return err
	}
	b, err := os.ReadFile(certFile)
	if err != nil {
		return fmt.Errorf("redistest: %w", err)
	}
	blk, _ := pem.Decode(b)
	cert, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		return fmt.Errorf("redistest: %w", err)
	}
	if _, err := cert.Verify(x509.VerifyOptions{}); err != nil {
		return fmt.Errorf("redistest: the system pool does not hold the CA of $%s (read before it was set?): %w", CertEnv, err)
	}
	return nil
}

// TrustedCA returns the CA that the process trusts (RunTrusting), or
// fails tb when the test binary's TestMain did not call RunTrusting.
func TrustedCA(tb testing.TB) *CA {
	tb.Helper()
	if trusted == nil {
		tb.Fatal("redistest: no trusted CA: call os.Exit(redistest.RunTrusting(m)) from TestMain")
	}
	return trusted
}
