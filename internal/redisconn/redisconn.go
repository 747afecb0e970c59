// Package redisconn opens the Redis (or Valkey) client that every binary of
// the feed uses, so that they all parse the same URLs and share the same
// client options, on a single node, a single node watched by Redis
// Sentinel, or a Redis Cluster.
package redisconn

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"runtime"
	"strings"
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
//     when those that answer know no master of that name, and (since 7
//     Dec 2026) when the master they name refuses the URL's master
//     credentials (see sentinel.go); there is no cluster probe.
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
// (docs/operations.md, "Redis over TLS"), or, when the URL names one with
// cacert= (a PEM file, as redis-cli's --cacert; since 7 Dec 2026) or
// cacertdir= (a directory of them, as redis-cli's --cacertdir; since 7
// Dec 2026), against those CAs alone, read again at each new connection
// (caCert). The URL's
// cert= and key= (PEM files, as redis-cli's --cert and --key) name the
// client certificate of every form, for a server that asks for one
// (mutual TLS; since 7 Dec 2026), read again at each new connection
// (clientCert). The URL's sni= (as redis-cli's --sni; since 7 Dec 2026)
// names the host every server's certificate must be for, in place of the
// host each is dialled at: nodes that announce their addresses and
// present a certificate for a name. These parameters are taken out of
// the URL before go-redis parses it (tlsFiles). A probe that
// finds TLS cannot work, for a plain URL or a rediss:// cluster URL (a
// certificate not trusted or not for the host, a plain-text port, a TLS
// port spoken to in plain text, a server that wants a client
// certificate), fails Open with an error that says so, since 7 Dec 2026.
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
	rawURL, files, err := splitTLSFiles(rawURL)
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("redisconn: %w", redactErr(err))
	}
	if isSentinel(u) {
		return openSentinel(ctx, rawURL, u, files)
	}
	if u.Query().Has("addr") {
		cc, err := openCluster(rawURL, files)
		if err != nil {
			return nil, err
		}
		if err := checkCluster(ctx, cc, rawURL); err != nil {
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
	files.apply(opt.TLSConfig, &opt.Dialer, opt.DialTimeout)
	cluster := false
	if opt.Network == "tcp" {
		if cluster, err = isCluster(ctx, opt); err != nil {
			if cerr := Ended(ctx); cerr != nil {
				return nil, fmt.Errorf("redisconn: cluster probe of %s (CLUSTER SLOTS): %w", opt.Addr, cerr)
			}
			if NoPerm(err) {
				return nil, fmt.Errorf("redisconn: cluster probe of %s: the server's ACL refuses CLUSTER SLOTS to this user: grant it +cluster|slots (docs/operations.md, \"A Redis with ACL users\"): %w", opt.Addr, err)
			}
			if badCredentials(err) {
				// A mistake in the URL, as the Sentinel form's: until 7
				// Dec 2026 the binary started and every call failed.
				return nil, fmt.Errorf("redisconn: %s: the server %s refuses the URL's user: %w (%s)", Redact(rawURL), opt.Addr, err, checkCredentials)
			}
			if terr := tlsRefusal(ctx, opt.Addr, err, opt.TLSConfig != nil); terr != nil {
				return nil, fmt.Errorf("redisconn: %s: %w", Redact(rawURL), terr)
			}
		}
	}
	if cluster {
		if opt.DB != 0 {
			return nil, fmt.Errorf("redisconn: %s is a cluster node, which has only database 0 (the URL names %d)", opt.Addr, opt.DB)
		}
		return openCluster(rawURL, files)
	}
	if err := checkDB(ctx, opt); err != nil {
		return nil, fmt.Errorf("redisconn: %s: %w", Redact(rawURL), err)
	}
	c := redis.NewClient(opt)
	c.AddHook(aclHook{})
	return c, nil
}

// checkDB asks a single node whether it has the URL's database (/N past
// 0: go-redis selects it on every connection), within ctx and
// ProbeTimeout, and returns an error only when it says it has not: a node
// down or slow at start is left to the client. Until 7 Dec 2026 the
// binary started and every call failed with "ERR DB index is out of
// range".
func checkDB(ctx context.Context, opt *redis.Options) error {
	if opt.DB == 0 {
		return nil
	}
	c := probeClient(opt, opt.DB)
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, ProbeTimeout)
	defer cancel()
	err := c.Ping(ctx).Err()
	if err != nil && strings.Contains(err.Error(), "DB index is out of range") {
		return fmt.Errorf("the server %s has no database %d: %w (use a database below its \"databases\" setting, 16 by default; docs/operations.md, \"Redis refuses the renderer\")", opt.Addr, opt.DB, err)
	}
	return nil
}

// Check reports whether rawURL is a URL Open takes, in any of its forms,
// without connecting: a binary refuses a bad -redis as a bad value, before
// it opens anything.
func Check(rawURL string) error {
	if err := checkForm(rawURL); err != nil {
		return err
	}
	rawURL, _, err := splitTLSFiles(rawURL)
	if err != nil {
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

// probeClient is a client of opt's server for one look at start, on
// database db: one connection, no retries, dials within ProbeTimeout.
func probeClient(opt *redis.Options, db int) *redis.Client {
	probe := *opt
	probe.DB = db
	probe.MaxRetries = -1
	probe.PoolSize = 1
	probe.DialTimeout = ProbeTimeout
	return redis.NewClient(&probe)
}
