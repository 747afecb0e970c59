package redisconn

import (
	"crypto/tls"
	"fmt"
	"net/url"
	"sync"
)

// clientCert is the client certificate of a URL's cert= and key=
// parameters (mutual TLS, a server with tls-auth-clients yes), named as
// redis-cli's --cert and --key name them. The files are read again at
// every TLS handshake, so a renewed certificate is presented on the next
// connection without a restart; a pair that cannot be read then (a renewal
// half written, the certificate and the key not yet a pair) leaves the
// last pair read in use.
type clientCert struct {
	certFile, keyFile string

	mu   sync.Mutex
	last *tls.Certificate
}

// splitClientCert takes the cert= and key= parameters out of rawURL and
// returns the URL without them, which go-redis's parsers take (they refuse
// a parameter they do not know), and the certificate they name, read once
// here so that a missing file or a certificate and key that are not a pair
// fail at once; nil when the URL names none. They need a rediss:// URL,
// and each needs the other.
func splitClientCert(rawURL string) (string, *clientCert, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return rawURL, nil, nil // the URL's parser says what is wrong with it
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil || !q.Has("cert") && !q.Has("key") {
		return rawURL, nil, nil
	}
	c := &clientCert{certFile: q.Get("cert"), keyFile: q.Get("key")}
	switch {
	case u.Scheme != "rediss":
		return "", nil, fmt.Errorf("redisconn: %s: cert= and key= are a TLS client certificate: they need a rediss:// URL", Redact(rawURL))
	case c.certFile == "" || c.keyFile == "":
		return "", nil, fmt.Errorf("redisconn: %s: a client certificate needs both cert=FILE and key=FILE (PEM)", Redact(rawURL))
	}
	if c.last, err = c.load(); err != nil {
		return "", nil, fmt.Errorf("redisconn: %s: %w", Redact(rawURL), err)
	}
	q.Del("cert")
	q.Del("key")
	u.RawQuery = q.Encode()
	return u.String(), c, nil
}

// load reads the certificate and key files.
func (c *clientCert) load() (*tls.Certificate, error) {
	pair, err := tls.LoadX509KeyPair(c.certFile, c.keyFile)
	if err != nil {
		return nil, fmt.Errorf("client certificate cert=%s key=%s: %w", c.certFile, c.keyFile, err)
	}
	return &pair, nil
}

// get is tls.Config.GetClientCertificate: the pair as the files hold it
// now, or the last pair read when they hold none.
func (c *clientCert) get(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
	pair, err := c.load()
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		if c.last != nil {
			return c.last, nil
		}
		return nil, err
	}
	c.last = pair
	return pair, nil
}

// apply makes cfg present c, when both are there: cfg is nil only for a
// URL without TLS, which splitClientCert refused with a certificate.
func (c *clientCert) apply(cfg *tls.Config) {
	if c != nil && cfg != nil {
		cfg.GetClientCertificate = c.get
	}
}
