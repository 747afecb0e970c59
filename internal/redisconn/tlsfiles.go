package redisconn

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"
)

// tlsFiles is what the files a URL names add to its TLS, in every form
// (single node, cluster, Sentinel), named as redis-cli names them:
// cacert= and cacertdir= the CAs that the servers' certificates must
// chain to, in place of the system's pool (caCert); cert= and key= the
// client certificate (mutual TLS, clientCert); and, though no file, sni=
// the host name that every server's certificate must be for, sent as the
// handshake's server name, in place of the host each server is dialled at.
type tlsFiles struct {
	ca   *caCert     // nil: the system's pool
	cert *clientCert // nil: no client certificate
	sni  string      // "": each server's own host (its address)
}

// caCert is the CAs of a URL's cacert= (a PEM file, one CA or a bundle)
// and cacertdir= (a directory of PEM files, as OpenSSL's CApath and
// redis-cli's --cacertdir; files without a certificate in it, a CRL or a
// README, add nothing), the union when it names both. They are read again
// at every new connection (dialer), so that a CA added to the file or the
// directory (a rotation) is trusted without a restart; while they hold no
// certificate (a rewrite half done) the last CAs read stay in use.
type caCert struct {
	file, dir string // "": not named

	mu   sync.Mutex
	pem  []byte // the certificates as last taken
	pool *x509.CertPool
}

// roots returns the CAs as the file and the directory hold them now, or
// the last ones read when they hold none or cannot be read.
func (c *caCert) roots() *x509.CertPool {
	b, err := c.read()
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil || bytes.Equal(b, c.pem) {
		return c.pool
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return c.pool
	}
	c.pem, c.pool = b, pool
	return pool
}

// read returns the PEM of the file and of each file of the directory
// (its entries in name order, symbolic links followed, as OpenSSL's
// hashed links are; subdirectories not walked), one after the other.
func (c *caCert) read() ([]byte, error) {
	var all []byte
	if c.file != "" {
		b, err := os.ReadFile(c.file)
		if err != nil {
			return nil, fmt.Errorf("CA file cacert=%s: %w", c.file, err)
		}
		all = append(all, b...)
	}
	if c.dir == "" {
		return all, nil
	}
	entries, err := os.ReadDir(c.dir)
	if err != nil {
		return nil, fmt.Errorf("CA directory cacertdir=%s: %w", c.dir, err)
	}
	for _, e := range entries {
		name := filepath.Join(c.dir, e.Name())
		if fi, err := os.Stat(name); err != nil || !fi.Mode().IsRegular() {
			continue // a dangling link or a subdirectory holds no CA
		}
		b, err := os.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("CA directory cacertdir=%s: %w", c.dir, err)
		}
		// A file whose last line has no newline would hide the next
		// file's BEGIN line from the PEM decoder.
		all = append(append(all, '\n'), b...)
	}
	return all, nil
}

// splitTLSFiles takes the cacert=, cacertdir=, cert=, key= and sni=
// parameters out of rawURL and returns the URL without them, which
// go-redis's parsers take (they refuse a parameter they do not know), and
// what they name, read here so that a missing file, CAs without a
// certificate or a certificate and key that are not a pair fail at once;
// nil when the URL names none. They need a rediss:// URL; cert= and key=
// need each other, and the CAs have no use with skip_verify=true, which
// verifies nothing.
func splitTLSFiles(rawURL string) (string, *tlsFiles, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return rawURL, nil, nil // the URL's parser says what is wrong with it
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil || !slices.ContainsFunc(tlsParams, q.Has) {
		return rawURL, nil, nil
	}
	fail := func(format string, a ...any) (string, *tlsFiles, error) {
		return "", nil, fmt.Errorf("redisconn: %s: "+format, append([]any{Redact(rawURL)}, a...)...)
	}
	if u.Scheme != "rediss" {
		return fail("cacert=, cacertdir=, cert=, key= and sni= are TLS's: they need a rediss:// URL")
	}
	f := &tlsFiles{}
	if q.Has("sni") {
		if f.sni = q.Get("sni"); f.sni == "" {
			return fail("sni= is empty: name the host the servers' certificates are for")
		}
	}
	if q.Has("cacert") || q.Has("cacertdir") {
		if skip, _ := strconv.ParseBool(q.Get("skip_verify")); skip {
			return fail("%s names the CAs to verify the server's certificate against, and skip_verify=true verifies nothing: leave one of them out", caParams(q))
		}
		if f.ca, err = loadCA(q); err != nil {
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
	for _, p := range tlsParams {
		q.Del(p)
	}
	u.RawQuery = q.Encode()
	return u.String(), f, nil
}

// tlsParams are the URL's parameters that tlsFiles takes.
var tlsParams = []string{"cacert", "cacertdir", "cert", "key", "sni"}

// caParams names the CA parameters of q, for a message.
func caParams(q url.Values) string {
	switch {
	case !q.Has("cacertdir"):
		return "cacert="
	case !q.Has("cacert"):
		return "cacertdir="
	}
	return "cacert= and cacertdir="
}

// loadCA reads the CAs of q's cacert= (a PEM file: one certificate or
// several, a bundle) and cacertdir= (a directory of them), either or both.
func loadCA(q url.Values) (*caCert, error) {
	c := &caCert{file: q.Get("cacert"), dir: q.Get("cacertdir")}
	if q.Has("cacert") && c.file == "" {
		return nil, fmt.Errorf("cacert= is empty: name the CA's certificate file (PEM)")
	}
	if q.Has("cacertdir") && c.dir == "" {
		return nil, fmt.Errorf("cacertdir= is empty: name a directory of CA certificate files (PEM)")
	}
	b, err := c.read()
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		switch {
		case c.dir == "":
			return nil, fmt.Errorf("CA file cacert=%s holds no PEM certificate", c.file)
		case c.file == "":
			return nil, fmt.Errorf("CA directory cacertdir=%s holds no PEM certificate", c.dir)
		}
		return nil, fmt.Errorf("neither CA file cacert=%s nor directory cacertdir=%s holds a PEM certificate", c.file, c.dir)
	}
	c.pem, c.pool = b, pool
	return c, nil
}

// apply makes cfg verify the servers for f's server name and against
// f's CA, and present f's client certificate, when each is there (cfg is
// nil only for a URL without TLS, which splitTLSFiles refused with any of
// them), and with a CA sets *dial, the Dialer of go-redis's options
// (Options, ClusterOptions, FailoverOptions: every node, Sentinel and
// master) whose DialTimeout is timeout, to one that reads the CAs
// again (dialer). cfg keeps the CAs read at start, for the probes'
// clients, which dial with it.
func (f *tlsFiles) apply(cfg *tls.Config, dial *func(context.Context, string, string) (net.Conn, error), timeout time.Duration) {
	if f == nil || cfg == nil {
		return
	}
	if f.sni != "" {
		cfg.ServerName = f.sni
	}
	if f.cert != nil {
		cfg.GetClientCertificate = f.cert.get
	}
	if f.ca != nil {
		cfg.RootCAs = f.ca.pool
		*dial = f.dialer(cfg, timeout) // cfg complete: each dial clones it
	}
}

// keepAlive is go-redis's own dialers' TCP keep-alive (defaultKeepAliveConfig).
var keepAlive = net.KeepAliveConfig{Enable: true, Idle: 30 * time.Second, Interval: 5 * time.Second, Count: 3}

// dialer returns a go-redis Dialer that dials as go-redis's own does,
// TLS with cfg, but with the CAs of the URL's cacert= and cacertdir= as
// the file and the directory hold them at that dial. timeout bounds the
// connection and its handshake (DialTimeout; 0: go-redis's default of 5 s).
func (f *tlsFiles) dialer(cfg *tls.Config, timeout time.Duration) func(ctx context.Context, network, addr string) (net.Conn, error) {
	if timeout == 0 {
		timeout = 5 * time.Second
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c := cfg.Clone()
		c.RootCAs = f.ca.roots()
		d := &tls.Dialer{NetDialer: &net.Dialer{Timeout: timeout, KeepAliveConfig: keepAlive}, Config: c}
		return d.DialContext(ctx, network, addr)
	}
}
