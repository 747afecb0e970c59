package redisconn

import (
	"crypto/tls"
	"encoding/pem"
	"fmt"
	"os"
	"strings"
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
		if encryptedKey(c.keyFile) {
			return nil, fmt.Errorf("client certificate cert=%s key=%s: the key is encrypted (it asks for a passphrase), and keys are read unencrypted: decrypt it once, openssl pkey -in %s -out NEWFILE, and keep NEWFILE readable by the feed's user alone (docs/operations.md, \"Redis over TLS\")", c.certFile, c.keyFile, c.keyFile)
		}
		return nil, fmt.Errorf("client certificate cert=%s key=%s: %w", c.certFile, c.keyFile, err)
	}
	return &pair, nil
}

// encryptedKey reports whether file holds a private key encrypted with a
// passphrase: PKCS #8's ENCRYPTED PRIVATE KEY (OpenSSL 3's genpkey and
// pkcs8 with a cipher), or the older PEM encryption of a key (Proc-Type:
// 4,ENCRYPTED). Neither is read: Go's standard library decrypts neither
// (the older form only through a function deprecated as insecure), and a
// daemon's passphrase would sit beside its key, in its URL or its
// environment, guarding nothing that the key file's permissions do not.
// tls.LoadX509KeyPair said only "failed to parse private key".
func encryptedKey(file string) bool {
	b, err := os.ReadFile(file)
	if err != nil {
		return false
	}
	for {
		var block *pem.Block
		if block, b = pem.Decode(b); block == nil {
			return false
		}
		if block.Type == "ENCRYPTED PRIVATE KEY" || strings.Contains(block.Headers["Proc-Type"], "ENCRYPTED") {
			return true
		}
	}
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
