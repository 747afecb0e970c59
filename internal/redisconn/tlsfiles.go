package redisconn

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/url"
	"os"
	"strconv"
)

// tlsFiles is what the files a URL names add to its TLS, in every form
// (single node, cluster, Sentinel), named as redis-cli names them:
// cacert= the CA that the servers' certificates must chain to, in place
// of the system's pool; cert= and key= the client certificate (mutual
// TLS, clientCert).
type tlsFiles struct {
	caFile string
	roots  *x509.CertPool // nil: the system's pool
	cert   *clientCert    // nil: no client certificate
}

// splitTLSFiles takes the cacert=, cert= and key= parameters out of
// rawURL and returns the URL without them, which go-redis's parsers take
// (they refuse a parameter they do not know), and what they name, read
// here so that a missing file, a CA file without a certificate or a
// certificate and key that are not a pair fail at once; nil when the URL
// names none. They need a rediss:// URL; cert= and key= need each other,
// and cacert= has no use with skip_verify=true, which verifies nothing.
func splitTLSFiles(rawURL string) (string, *tlsFiles, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return rawURL, nil, nil // the URL's parser says what is wrong with it
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil || !q.Has("cacert") && !q.Has("cert") && !q.Has("key") {
		return rawURL, nil, nil
	}
	fail := func(format string, a ...any) (string, *tlsFiles, error) {
		return "", nil, fmt.Errorf("redisconn: %s: "+format, append([]any{Redact(rawURL)}, a...)...)
	}
	if u.Scheme != "rediss" {
		return fail("cacert=, cert= and key= are files of TLS: they need a rediss:// URL")
	}
	f := &tlsFiles{}
	if q.Has("cacert") {
		f.caFile = q.Get("cacert")
		if skip, _ := strconv.ParseBool(q.Get("skip_verify")); skip {
			return fail("cacert= names the CA to verify the server's certificate against, and skip_verify=true verifies nothing: leave one of them out")
		}
		if f.roots, err = loadCA(f.caFile); err != nil {
			return fail("%w", err)
		}
	}
	if q.Has("cert") || q.Has("key") {
		c := &clientCert{certFile: q.Get("cert"), keyFile: q.Get("key")}
		if c.certFile == "" || c.keyFile == "" {
			return fail("a client certificate needs both cert=FILE and key=FILE (PEM)")
		}
		if c.last, err = c.load(); err != nil {
			return fail("%w", err)
		}
		f.cert = c
	}
	q.Del("cacert")
	q.Del("cert")
	q.Del("key")
	u.RawQuery = q.Encode()
	return u.String(), f, nil
}

// loadCA reads a CA file: PEM, one certificate or several (a bundle).
func loadCA(file string) (*x509.CertPool, error) {
	if file == "" {
		return nil, fmt.Errorf("cacert= is empty: name the CA's certificate file (PEM)")
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("CA file cacert=%s: %w", file, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("CA file cacert=%s holds no PEM certificate", file)
	}
	return pool, nil
}

// apply makes cfg verify the servers against f's CA and present f's
// client certificate, when each is there: cfg is nil only for a URL
// without TLS, which splitTLSFiles refused with any of them.
func (f *tlsFiles) apply(cfg *tls.Config) {
	if f == nil || cfg == nil {
		return
	}
	if f.roots != nil {
		cfg.RootCAs = f.roots
	}
	if f.cert != nil {
		cfg.GetClientCertificate = f.cert.get
	}
}
