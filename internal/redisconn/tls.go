package redisconn

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/redis/go-redis/v9"
)

// dropped reports whether err says the server closed the connection
// without a reply: what a TLS-only port does with a plain-text command
// (OpenSSL sends no alert to what does not look like TLS).
func dropped(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET)
}

// speaksTLS reports whether the server at addr completes a TLS handshake,
// within ctx and ProbeTimeout. It tells a TLS port from a server that
// dropped a plain-text probe for another reason, and sends nothing over
// the connection, which it closes at once: its certificate is not
// verified, as nothing is trusted to it.
func speaksTLS(ctx context.Context, addr string) bool {
	ctx, cancel := context.WithTimeout(ctx, ProbeTimeout)
	defer cancel()
	d := &tls.Dialer{Config: &tls.Config{InsecureSkipVerify: true}} //nolint:gosec // a look at the protocol, nothing sent
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// plainPort is the hint of an error that finds a plain-text port where
// TLS was asked for.
const plainPort = "the port speaks plain text, not TLS: use redis://, or the server's TLS port"

// timedOut reports whether err is a deadline's end: a call's, or a
// read's or a dial's.
func timedOut(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}

// speaksPlain reports whether the server at addr answers a plain-text
// PING with a reply of Redis's protocol (+PONG, or an error such as
// -NOAUTH), within ctx and a quarter of ProbeTimeout. A TLS handshake with
// a plain-text Redis usually hangs: Redis waits for the end of a line the
// ClientHello may never send, and the handshake ends at its deadline
// saying nothing of why. (When the ClientHello holds a newline byte,
// Redis answers its "command" with an error, which the handshake reports
// as no TLS: tlsMismatch.)
func speaksPlain(ctx context.Context, addr string) bool {
	ctx, cancel := context.WithTimeout(ctx, ProbeTimeout/4)
	defer cancel()
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return false
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	}
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return false
	}
	b := make([]byte, 1)
	if _, err := io.ReadFull(c, b); err != nil {
		return false
	}
	return b[0] == '+' || b[0] == '-'
}

// checkCluster asks the nodes of a cluster URL (PING, within ctx and
// ProbeTimeout) whether they take the URL's credentials and whether the
// URL's scheme (TLS or not) is theirs, as the probe of a plain URL does,
// and returns an error only when they do not (WRONGPASS, NOAUTH;
// tlsRefusal): a node down or slow at start is no reason to refuse the
// URL, which names several for that. Until 7 Dec 2026 only a rediss://
// cluster URL was asked, for TLS alone: a plain one with a wrong password,
// or naming TLS-only nodes, started and said not ready.
func checkCluster(ctx context.Context, cc *redis.ClusterClient, rawURL string) error {
	pingCtx, cancel := context.WithTimeout(ctx, ProbeTimeout)
	defer cancel()
	err := cc.Ping(pingCtx).Err()
	if err == nil {
		return nil
	}
	if badCredentials(err) {
		return fmt.Errorf("redisconn: %s: the cluster refuses the URL's user: %w (%s)", Redact(rawURL), err, checkCredentials)
	}
	if terr := tlsRefusal(ctx, cc.Options().Addrs[0], err, cc.Options().TLSConfig != nil); terr != nil {
		return fmt.Errorf("redisconn: %s: %w", Redact(rawURL), terr)
	}
	return nil
}

// tlsMismatch returns what an error of the cluster probe says about TLS,
// "" when it says nothing: the server's certificate not trusted, or not
// for the host; a plain-text port asked for TLS; a server that wants a
// client certificate, or refuses the URL's (cert= and key=, tlsFiles).
// (A TLS port spoken to in plain text only drops the connection:
// speaksTLS tells it.) None of these passes by itself, so
// Open fails with them, where a server that does not answer gives a
// single-node client that tries again (Open). Until 7 Dec 2026 they gave
// that client too, whose calls then failed with the bare error, and the
// renderer started and stayed not ready.
func tlsMismatch(err error, useTLS bool) string {
	const trust = "name its CA in the URL, cacert=FILE or cacertdir=DIR (in place of the system's CAs), or trust it through SSL_CERT_FILE or SSL_CERT_DIR; see docs/operations.md, \"Redis over TLS\""
	var (
		unknown  x509.UnknownAuthorityError
		hostname x509.HostnameError
		invalid  x509.CertificateInvalidError
		verify   *tls.CertificateVerificationError
		record   tls.RecordHeaderError
	)
	switch {
	case errors.As(err, &unknown):
		return "the server's certificate is signed by a CA not trusted here: " + trust
	case errors.As(err, &hostname):
		return "the server's certificate is not for the host of the URL: name a host it is for, in the URL or as sni=NAME (the name every server's certificate must hold, as redis-cli's --sni); see docs/operations.md, \"Redis over TLS\""
	case errors.As(err, &invalid):
		return "the server's certificate is not valid (expired, or not for a server)"
	case errors.As(err, &verify):
		return "the server's certificate did not verify: " + trust
	case errors.As(err, &record):
		return plainPort
	case !useTLS:
		// The TLS alerts below are a TLS handshake's.
	case strings.Contains(err.Error(), "remote error: tls: certificate required"):
		return "the server asks for a client certificate (tls-auth-clients yes): name one in the URL, cert=FILE&key=FILE; " + mutual
	case strings.Contains(err.Error(), "remote error: tls: expired certificate"):
		return "the server finds the URL's client certificate (cert=) expired: renew it; " + mutual
	case strings.Contains(err.Error(), "remote error: tls: unknown certificate authority"),
		strings.Contains(err.Error(), "remote error: tls: bad certificate"),
		strings.Contains(err.Error(), "remote error: tls: unsupported certificate"):
		return "the server refuses the URL's client certificate (cert=): its CA must be in the server's tls-ca-cert-file, and it must allow client authentication; " + mutual
	}
	return ""
}

// mutual is where the hints of a refused client certificate send an
// operator.
const mutual = "see docs/operations.md, \"Redis over TLS\""

// tlsRefusal returns why TLS cannot work with the server at addr, given
// the error of a call to it (with TLS when useTLS), with what to do, as
// the probe of a single node and of the Sentinels say it; nil when the
// error says nothing of TLS (a server down or slow at start).
func tlsRefusal(ctx context.Context, addr string, err error, useTLS bool) error {
	if Ended(ctx) != nil {
		return nil
	}
	if m := tlsMismatch(err, useTLS); m != "" {
		return fmt.Errorf("%w (%s)", err, m)
	}
	switch {
	case !useTLS && dropped(err) && speaksTLS(ctx, addr):
		return fmt.Errorf("%w (the port speaks TLS: use rediss://)", err)
	case useTLS && timedOut(err) && speaksPlain(ctx, addr):
		return fmt.Errorf("no TLS handshake within %v (%s)", ProbeTimeout, plainPort)
	}
	return nil
}
