// Package redisconn opens the Redis (or Valkey) client that every binary of
// the feed uses, so that they all parse the same URLs and share the same
// client options, on a single node, a single node watched by Redis
// Sentinel, or a Redis Cluster.
package redisconn

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// ProbeTimeout bounds the look at a plain URL's server that decides
// whether it is a cluster node, and the look at a rediss:// cluster URL's
// nodes that finds whether TLS works with them.
const ProbeTimeout = 2 * time.Second

// minPoolSize is the least connections per node. Every blocking read holds
// a pooled connection for its whole block (go-redis#1002): a renderer
// holds one for its hot read while the lease, the reclaim, the census, the
// status page and the doorbell's rings need their own, so go-redis's
// default of 5 per GOMAXPROCS is too tight on one core.
const minPoolSize = 16

// Open parses url and returns a client for it, in any of these forms:
//
//   - a single-node URL, redis://[user:pass@]host:port[/db] (rediss:// for
//     TLS, unix:// for a socket), as go-redis's ParseURL reads it;
//   - go-redis's cluster URL, redis://h1:p1?addr=h2:p2&addr=h3:p3, as
//     ParseClusterURL reads it: a *redis.ClusterClient seeded with every
//     node named;
//   - go-redis's Sentinel URL, redis://[user:pass@]s1:p1?master_name=NAME
//     &addr=s2:p2&addr=s3:p3[&password=…], as ParseFailoverURL reads it
//     (since 7 Dec 2026): go-redis's failover client, a *redis.Client that
//     asks the Sentinels where the master NAME is. The user information
//     is the Sentinels' credentials, username= and password= the
//     master's. Open asks the Sentinels for the master first and fails
//     when those that answer know no master of that name (see
//     sentinel.go); there is no cluster probe.
//
// A plain redis:// or rediss:// URL that points at a node of a Redis
// Cluster works too: Open asks that node (CLUSTER SLOTS, within
// ProbeTimeout) and returns a cluster client seeded with it. When the node
// does not answer, Open returns a single-node client; name several nodes
// in the cluster form to not depend on one. When the server's ACL refuses
// the probe (NOPERM), Open fails with an error that says to grant
// +cluster|slots: a single-node client of a cluster node would meet MOVED
// on every other node's key. Until 7 Dec 2026 the probe was INFO cluster
// (INFO is in @dangerous), and a refused one gave a single-node client.
//
// The client sends no CLIENT SETINFO on its connections (DisableIdentity;
// since 7 Dec 2026): a least-privilege ACL user would need
// +client|setinfo, a grant that Redis 7.0, which has no such command,
// refuses to take, and go-redis ignores the command's refusal, which the
// server's ACL LOG records all the same.
//
// Over TLS (rediss://) the server's certificate is verified against the
// system's CA pool, which SSL_CERT_FILE and SSL_CERT_DIR extend on Linux
// (docs/operations.md, "Redis over TLS"). A probe that finds TLS cannot
// work, for a plain URL or a rediss:// cluster URL (a certificate not
// trusted or not for the host, a plain-text port, a TLS port spoken to in
// plain text, a server that wants a client certificate), fails Open with
// an error that says so, since 7 Dec 2026.
//
// The client always has ContextTimeoutEnabled set. Without it go-redis
// ignores context deadlines on reads and writes, and a Redis that stops
// answering holds every call (and a shutdown) for go-redis's own timeouts
// and retries; the feed bounds its calls with context deadlines instead.
//
// A cluster client reloads its slot map as soon as a command fails with a
// connection error or a cluster error (CLUSTERDOWN, TRYAGAIN, UNBLOCKED,
// MOVED, ASK), not only after go-redis's own 10-second refresh, so a
// failover costs the time the cluster takes to elect, not ten seconds more.
func Open(rawURL string) (redis.UniversalClient, error) {
	return OpenContext(context.Background(), rawURL)
}

// OpenContext is Open with the cluster probe bounded by ctx as well as by
// ProbeTimeout: a probe that ctx ends (its deadline, a cancel) fails
// OpenContext with an error that wraps ctx's, where one that runs out of
// ProbeTimeout alone gives a single-node client, as Open does. feedctl
// bounds it with -timeout: the probe took its 2 s whatever -timeout said
// (TestHungRedisTimeout).
func OpenContext(ctx context.Context, rawURL string) (redis.UniversalClient, error) {
	if err := checkForm(rawURL); err != nil {
		return nil, err
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("redisconn: %w", redactErr(err))
	}
	if isSentinel(u) {
		return openSentinel(ctx, rawURL, u)
	}
	if u.Query().Has("addr") {
		cc, err := openCluster(rawURL)
		if err != nil {
			return nil, err
		}
		if err := checkClusterTLS(ctx, cc, rawURL); err != nil {
			cc.Close()
			return nil, err
		}
		return cc, nil
	}
	opt, err := redis.ParseURL(rawURL)
	if err != nil {
		return nil, fmt.Errorf("redisconn: %w", redactErr(err))
	}
	opt.ContextTimeoutEnabled = true
	opt.DisableIdentity = true
	if !u.Query().Has("pool_size") {
		opt.PoolSize = poolSize()
	}
	cluster := false
	if opt.Network == "tcp" {
		if cluster, err = isCluster(ctx, opt); err != nil {
			if cerr := Ended(ctx); cerr != nil {
				return nil, fmt.Errorf("redisconn: cluster probe of %s (CLUSTER SLOTS): %w", opt.Addr, cerr)
			}
			if NoPerm(err) {
				return nil, fmt.Errorf("redisconn: cluster probe of %s: the server's ACL refuses CLUSTER SLOTS to this user: grant it +cluster|slots (docs/operations.md, \"A Redis with ACL users\"): %w", opt.Addr, err)
			}
			if hint := tlsMismatch(err, opt.TLSConfig != nil); hint != "" {
				return nil, fmt.Errorf("redisconn: %s: %w (%s)", Redact(rawURL), err, hint)
			}
			if opt.TLSConfig == nil && dropped(err) && speaksTLS(ctx, opt.Addr) {
				return nil, fmt.Errorf("redisconn: %s: %w (the port speaks TLS: use rediss://)", Redact(rawURL), err)
			}
			if opt.TLSConfig != nil && timedOut(err) && speaksPlain(ctx, opt.Addr) {
				return nil, fmt.Errorf("redisconn: %s: no TLS handshake within %v (%s)", Redact(rawURL), ProbeTimeout, plainPort)
			}
		}
	}
	if cluster {
		if opt.DB != 0 {
			return nil, fmt.Errorf("redisconn: %s is a cluster node, which has only database 0 (the URL names %d)", opt.Addr, opt.DB)
		}
		return openCluster(rawURL)
	}
	c := redis.NewClient(opt)
	c.AddHook(aclHook{})
	return c, nil
}

// Check reports whether rawURL is a URL Open takes, in any of its forms,
// without connecting: a binary refuses a bad -redis as a bad value, before
// it opens anything.
func Check(rawURL string) error {
	if err := checkForm(rawURL); err != nil {
		return err
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return fmt.Errorf("redisconn: %w", redactErr(err))
	}
	if isSentinel(u) {
		_, err := parseSentinel(rawURL, u)
		return err
	}
	if u.Query().Has("addr") {
		_, err = parseCluster(rawURL)
	} else {
		_, err = redis.ParseURL(rawURL)
	}
	if err != nil {
		return fmt.Errorf("redisconn: %w", redactErr(err))
	}
	return nil
}

// Redact returns rawURL with the password of its user information, if it
// has one, replaced by "xxxxx", as url.URL.Redacted does, also for a URL
// that url.Parse refuses: an error or a usage that quotes a -redis ends
// up in logs, where $REDIS_URL's password must not. That holds for a value
// that lost its "redis://" ("u:pass@host:6379", "redis:/u:pass@host"),
// whose user information runs up to its first ':', and for a password
// with a '/' (base64's) that was not escaped: the user information is what
// comes before the last '@' ahead of any '?' or '#'. Until 6 Dec 2026
// only a "scheme://" URL whose password has no '/' was redacted.
func Redact(rawURL string) string {
	if prefix, user, _, rest, ok := splitPassword(rawURL); ok {
		rawURL = prefix + user + ":xxxxx" + rest
	}
	return redactQuery(rawURL)
}

// splitPassword cuts rawURL around the password of its user information:
// rawURL is prefix + user + ":" + pass + rest, rest starting at the '@'.
// ok is false when rawURL has no password.
func splitPassword(rawURL string) (prefix, user, pass, rest string, ok bool) {
	body := rawURL
	if scheme, r, found := strings.Cut(rawURL, "://"); found {
		prefix, body = scheme+"://", r
	}
	auth := body
	if i := strings.IndexAny(body, "?#"); i >= 0 {
		auth = body[:i]
	}
	at := strings.LastIndex(auth, "@")
	if at < 0 {
		return "", "", "", "", false
	}
	user, pass, ok = strings.Cut(auth[:at], ":")
	if !ok {
		return "", "", "", "", false
	}
	return prefix, user, pass, body[at:], true
}

// redactErr hides the password of the URL that a *url.Error quotes (from
// url.Parse, or go-redis's parsers, which return its errors), and a piece
// of it that the error's own words quote: url.Parse ends the host at a
// '/', so "redis://:ab/cd@h" is refused with `invalid port ":ab" after
// host`.
func redactErr(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		passes := queryPasswords(ue.URL)
		if _, _, pass, _, ok := splitPassword(ue.URL); ok && pass != "" {
			passes = append(passes, pass)
		}
		for _, pass := range passes {
			if ue.Err != nil {
				ue.Err = redactQuotes(ue.Err, pass)
			}
		}
		ue.URL = Redact(ue.URL)
	}
	return err
}

// redactQuotes returns err with every quoted string of its message that is
// a piece of pass (or holds it) written "xxxxx"; err itself when there is
// none.
func redactQuotes(err error, pass string) error {
	msg := err.Error()
	var b strings.Builder
	changed := false
	for i := 0; i < len(msg); {
		if msg[i] == '"' {
			if q, qerr := strconv.QuotedPrefix(msg[i:]); qerr == nil {
				s, _ := strconv.Unquote(q)
				if s = strings.TrimLeft(s, ":@"); s != "" && (strings.Contains(pass, s) || strings.Contains(s, pass)) {
					b.WriteString(`"xxxxx"`)
					changed = true
				} else {
					b.WriteString(q)
				}
				i += len(q)
				continue
			}
		}
		b.WriteByte(msg[i])
		i++
	}
	if !changed {
		return err
	}
	return errors.New(b.String())
}

// checkForm refuses, saying what is wrong and what is meant, what go-redis
// misreads or refuses in words that do not say so: an address that is no
// URL ("127.0.0.1:6379" was `first path segment in URL cannot contain
// colon`, "localhost:6379" `invalid URL scheme: localhost`, "6379"
// `invalid URL scheme: `), and a redis:// or rediss:// URL without a host
// ("redis:6380", "redis:///0", "redis://:6380"), which go-redis takes for
// localhost, on port 6379 when none is given: the default address, where
// someone else's Redis may answer.
func checkForm(rawURL string) error {
	const want = "want redis://HOST:PORT[/DB] (rediss:// for TLS, unix:///PATH for a socket)"
	if rawURL == "" {
		return errors.New("redisconn: empty: " + want)
	}
	u, err := url.Parse(rawURL)
	if err != nil || u.Scheme != "redis" && u.Scheme != "rediss" && u.Scheme != "unix" {
		if !strings.Contains(rawURL, "://") {
			if _, _, err := net.SplitHostPort(rawURL); err == nil {
				return fmt.Errorf("redisconn: %q is no URL: want redis://%s", Redact(rawURL), Redact(rawURL))
			}
			return fmt.Errorf("redisconn: %q is no URL: %s", Redact(rawURL), want)
		}
		if err == nil {
			return fmt.Errorf("redisconn: %q: scheme %q: %s", Redact(rawURL), u.Scheme, want)
		}
		return nil // go-redis says what is wrong with it
	}
	if u.Scheme != "unix" && u.Hostname() == "" {
		return fmt.Errorf("redisconn: %q names no host (go-redis would take localhost): %s", Redact(rawURL), want)
	}
	return nil
}

func openCluster(rawURL string) (*redis.ClusterClient, error) {
	opt, err := parseCluster(rawURL)
	if err != nil {
		return nil, fmt.Errorf("redisconn: %w", redactErr(err))
	}
	opt.ContextTimeoutEnabled = true
	opt.DisableIdentity = true
	if u, _ := url.Parse(rawURL); !u.Query().Has("pool_size") {
		opt.PoolSize = poolSize()
	}
	cc := redis.NewClusterClient(opt)
	cc.AddHook(&reloader{cc: cc})
	cc.AddHook(aclHook{})
	return cc, nil
}

// parseCluster is go-redis's ParseClusterURL that also takes the
// skip_verify parameter of its ParseURL, so a URL that a single node
// takes works for a cluster too (the probe of a plain URL passed it, and
// the cluster client refused it: "unexpected option: skip_verify").
// go-redis verifies every node's certificate against the first host of
// the URL (its ServerName); that host being an IP address, each node's is
// verified against the address it is dialled at: a node announced as
// 10.0.0.2 cannot present a certificate for 10.0.0.1. Until 7 Dec 2026
// every node had to.
func parseCluster(rawURL string) (*redis.ClusterOptions, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, err
	}
	q := u.Query()
	skip, hasSkip := q.Get("skip_verify"), q.Has("skip_verify")
	if hasSkip {
		q.Del("skip_verify")
		u.RawQuery = q.Encode()
	}
	opt, err := redis.ParseClusterURL(u.String())
	if err != nil {
		return nil, err
	}
	if opt.TLSConfig != nil {
		opt.TLSConfig.MinVersion = tls.VersionTLS12
		if net.ParseIP(opt.TLSConfig.ServerName) != nil {
			opt.TLSConfig.ServerName = ""
		}
		if hasSkip {
			if opt.TLSConfig.InsecureSkipVerify, err = strconv.ParseBool(skip); err != nil {
				return nil, fmt.Errorf("skip_verify=%q: want true or false", skip)
			}
		}
	}
	return opt, nil
}

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

// checkClusterTLS asks the nodes of a rediss:// cluster URL (PING,
// within ctx and ProbeTimeout) whether TLS works with them, as the probe
// of a plain URL does, and returns an error only when it does not (a
// certificate not trusted, a plain-text port; tlsMismatch): a node down
// or slow at start is no reason to refuse the URL, which names several
// for that. A plain redis:// cluster URL is not asked.
func checkClusterTLS(ctx context.Context, cc *redis.ClusterClient, rawURL string) error {
	if cc.Options().TLSConfig == nil {
		return nil
	}
	pingCtx, cancel := context.WithTimeout(ctx, ProbeTimeout)
	defer cancel()
	err := cc.Ping(pingCtx).Err()
	if err == nil {
		return nil
	}
	if hint := tlsMismatch(err, true); hint != "" {
		return fmt.Errorf("redisconn: %s: %w (%s)", Redact(rawURL), err, hint)
	}
	if addrs := cc.Options().Addrs; timedOut(err) && speaksPlain(ctx, addrs[0]) {
		return fmt.Errorf("redisconn: %s: no TLS handshake with %s within %v (%s)", Redact(rawURL), addrs[0], ProbeTimeout, plainPort)
	}
	return nil
}

// tlsMismatch returns what an error of the cluster probe says about TLS,
// "" when it says nothing: the server's certificate not trusted, or not
// for the host; a plain-text port asked for TLS; a server that wants a
// client certificate. (A TLS port spoken to in plain text only drops the
// connection: speaksTLS tells it.) None of these passes by itself, so
// Open fails with them, where a server that does not answer gives a
// single-node client that tries again (Open). Until 7 Dec 2026 they gave
// that client too, whose calls then failed with the bare error, and the
// renderer started and stayed not ready.
func tlsMismatch(err error, useTLS bool) string {
	const trust = "trust its CA through SSL_CERT_FILE or SSL_CERT_DIR; see docs/operations.md, \"Redis over TLS\""
	var (
		unknown  x509.UnknownAuthorityError
		hostname x509.HostnameError
		invalid  x509.CertificateInvalidError
		verify   *tls.CertificateVerificationError
		record   tls.RecordHeaderError
	)
	switch {
	case errors.As(err, &unknown):
		return "the server's certificate is signed by a CA this host does not trust: " + trust
	case errors.As(err, &hostname):
		return "the server's certificate is not for the host of the URL"
	case errors.As(err, &invalid):
		return "the server's certificate is not valid (expired, or not for a server)"
	case errors.As(err, &verify):
		return "the server's certificate did not verify: " + trust
	case errors.As(err, &record):
		return plainPort
	case useTLS && strings.Contains(err.Error(), "remote error: tls: certificate required"),
		useTLS && strings.Contains(err.Error(), "remote error: tls: bad certificate"):
		return "the server asks for a client certificate (tls-auth-clients yes), which the feed's binaries do not present: mutual TLS is not supported"
	}
	return ""
}

func poolSize() int { return max(minPoolSize, 5*runtime.GOMAXPROCS(0)) }

// Ended returns ctx's error, or context.DeadlineExceeded once its deadline
// has passed: a read cut at that deadline (i/o timeout) can return before
// ctx's own timer has fired, and the call is then over by its deadline
// although ctx.Err is still nil.
func Ended(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
		return context.DeadlineExceeded
	}
	return nil
}

// isCluster asks the server at opt whether it runs in cluster mode, within
// ctx and ProbeTimeout. The question is CLUSTER SLOTS, which a cluster
// client sends anyway to load its slot map, so a least-privilege ACL user
// needs no more than that (INFO, the question until 7 Dec 2026, is in
// @dangerous): a cluster node answers it, a server without cluster support
// answers an error that says so, which is no error here.
func isCluster(ctx context.Context, opt *redis.Options) (bool, error) {
	probe := *opt
	probe.DB = 0 // a cluster node refuses SELECT
	probe.MaxRetries = -1
	probe.PoolSize = 1
	probe.DialTimeout = ProbeTimeout
	c := redis.NewClient(&probe)
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, ProbeTimeout)
	defer cancel()
	err := c.ClusterSlots(ctx).Err()
	if err != nil && strings.Contains(err.Error(), "cluster support disabled") {
		return false, nil
	}
	return err == nil, err
}

// reloader is a hook that reloads a cluster client's slot map, in the
// background and at most once per reloadEvery, after a command fails in a
// way that says the map is stale.
type reloader struct {
	cc      *redis.ClusterClient
	running atomic.Bool
	last    atomic.Int64 // unix ns of the last reload
}

const reloadEvery = 100 * time.Millisecond

func (r *reloader) DialHook(next redis.DialHook) redis.DialHook { return next }

func (r *reloader) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if stale(err) {
			r.reload()
		}
		return err
	}
}

func (r *reloader) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		for _, c := range cmds {
			if stale(c.Err()) {
				r.reload()
				break
			}
		}
		return err
	}
}

func (r *reloader) reload() {
	if time.Since(time.Unix(0, r.last.Load())) < reloadEvery || !r.running.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer r.running.Store(false)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		r.cc.ReloadState(ctx)
		r.last.Store(time.Now().UnixNano())
	}()
}

// stale reports whether err says the client's slot map may be stale: a
// node that cannot be reached or closed the connection, or a cluster
// error. A context's end or a plain server error is not.
func stale(err error) bool {
	if err == nil || errors.Is(err, redis.Nil) || errors.Is(err, context.Canceled) {
		return false
	}
	var ne net.Error
	if errors.As(err, &ne) && !ne.Timeout() {
		return true
	}
	var oe *net.OpError
	if errors.As(err, &oe) {
		return true
	}
	if errors.Is(err, redis.ErrClosed) {
		return false
	}
	if s := err.Error(); strings.Contains(s, "EOF") || strings.Contains(s, "connection reset") {
		return true
	}
	var re redis.Error
	if errors.As(err, &re) {
		code, _, _ := strings.Cut(re.Error(), " ")
		switch code {
		case "MOVED", "ASK", "TRYAGAIN", "CLUSTERDOWN", "UNBLOCKED", "READONLY", "LOADING", "MASTERDOWN":
			return true
		}
	}
	return false
}
