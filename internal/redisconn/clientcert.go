package redisconn

import (
	"crypto/tls"
	"fmt"
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
