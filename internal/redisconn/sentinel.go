package redisconn

// The Sentinel form: a single Redis made highly available by Redis
// Sentinel (since 7 Dec 2026). Open and Check dispatch here on
// master_name=; everything else about it is in this file.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// isSentinel reports whether u is go-redis's Sentinel form: it names the
// master that the Sentinels watch.
func isSentinel(u *url.URL) bool { return u.Query().Has("master_name") }

// parseSentinel reads rawURL as go-redis's ParseFailoverURL does, and
// refuses what that lets through but would not work: no master name; a
// Sentinel without a port, where go-redis takes 6379, a Redis port (a
// Sentinel listens on 26379 by default); and the options that send
// commands to replicas, which refuse the writes every binary makes
// (XREADGROUP, XACK, XADD), two of which panic in NewFailoverClient. A
// query that does not parse is refused too: url.Values drops the pair it
// cannot read, so a password= with a stray '%' was left out, and the
// master then answered NOAUTH.
func parseSentinel(rawURL string, u *url.URL) (*redis.FailoverOptions, error) {
	if _, err := url.ParseQuery(u.RawQuery); err != nil {
		return nil, fmt.Errorf("redisconn: %q: query: %w (escape a '%%' in a password as %%25)", Redact(rawURL), err)
	}
	opt, err := redis.ParseFailoverURL(rawURL)
	if err != nil {
		return nil, fmt.Errorf("redisconn: %w", redactErr(err))
	}
	if opt.TLSConfig != nil {
		// go-redis names the first Sentinel's host as the server name of
		// every dial: the other Sentinels and the master, which is dialled
		// at the address the Sentinels give, were then verified for that
		// host, and a master with a certificate of its own could not be
		// reached (until 7 Dec 2026). Without a name, each dial verifies
		// its server for the host it dials; sni= sets one for all.
		opt.TLSConfig.ServerName = ""
	}
	switch {
	case opt.MasterName == "":
		return nil, fmt.Errorf("redisconn: %q: master_name= is empty: want the name the Sentinels monitor (sentinel monitor NAME …)", Redact(rawURL))
	case u.Port() == "":
		return nil, fmt.Errorf("redisconn: %q names no port for the Sentinel %s (go-redis would take 6379, a Redis port; Sentinel's own is 26379)", Redact(rawURL), u.Hostname())
	case opt.RouteByLatency || opt.RouteRandomly || opt.ReplicaOnly:
		return nil, fmt.Errorf("redisconn: %q: route_by_latency, route_randomly and replica_only send commands to replicas, which refuse the writes of every binary: leave them out", Redact(rawURL))
	}
	return opt, nil
}

// openSentinel returns go-redis's failover client for the Sentinel form:
// a *redis.Client that asks the Sentinels where the master is whenever it
// dials, and drops its connections to the old master when they announce
// a new one (+switch-master). Before it returns, it asks the Sentinels
// for the master within ctx and ProbeTimeout (probeSentinels).
func openSentinel(ctx context.Context, rawURL string, u *url.URL, files *tlsFiles) (*redis.Client, error) {
	opt, err := parseSentinel(rawURL, u)
	if err != nil {
		return nil, err
	}
	files.apply(opt.TLSConfig, &opt.Dialer, opt.DialTimeout)
	opt.ContextTimeoutEnabled = true
	opt.DisableIdentity = true // as Open's other clients: no +client|setinfo (acl.go)
	if !u.Query().Has("pool_size") {
		opt.PoolSize = poolSize()
	}
	if err := probeSentinels(ctx, rawURL, opt); err != nil {
		return nil, err
	}
	c := redis.NewFailoverClient(opt)
	c.AddHook(&sentinelDial{master: opt.MasterName, sentinels: opt.SentinelAddrs, tls: opt.TLSConfig != nil})
	c.AddHook(aclHook{})
	return c, nil
}

// probeSentinels asks every Sentinel at once where the master is
// (SENTINEL get-master-addr-by-name), within ctx and ProbeTimeout. It
// returns once one names it, with probeMaster's answer (nil unless the
// master refuses the URL's master credentials or TLS cannot work with
// it), and nil when none answers: a binary started while Redis is down
// waits for it, as with a single node. It fails when Sentinels answered and none named the master (a master_name
// they do not monitor, an address that is no Sentinel), saying what they
// monitor; when a Sentinel refuses the URL's user (refusesUser), saying
// so; when TLS cannot work with a Sentinel (its certificate not
// trusted, TLS asked of a plain-text port or plain text of a TLS port;
// tlsMismatch), saying so, as Open does for the other forms: such a
// Sentinel never answers, and until 7 Dec 2026 it was taken for one that
// did not answer yet; and when ctx ends first, with ctx's error.
func probeSentinels(ctx context.Context, rawURL string, opt *redis.FailoverOptions) error {
	probe, cancel := context.WithTimeout(ctx, ProbeTimeout)
	defer cancel()
	type answer struct {
		addr   string
		found  bool
		master string // the master's host:port, when found
		why    string // what the Sentinel answered instead, "" when it did not answer
		tls    error  // why TLS cannot work with it, with the hint; nil when it can
		user   error  // its refusal of the URL's user (WRONGPASS, NOAUTH, NOPERM)
	}
	answers := make(chan answer, len(opt.SentinelAddrs))
	var wg sync.WaitGroup
	for _, addr := range opt.SentinelAddrs {
		wg.Go(func() {
			sc := redis.NewSentinelClient(&redis.Options{Addr: addr, Username: opt.SentinelUsername, Password: opt.SentinelPassword,
				TLSConfig: opt.TLSConfig, MaxRetries: -1, PoolSize: 1, DialTimeout: ProbeTimeout, ContextTimeoutEnabled: true,
				DisableIdentity: true}) // no +client|setinfo on the Sentinels either (acl.go)
			defer sc.Close()
			hp, err := sc.GetMasterAddrByName(probe, opt.MasterName).Result()
			var re redis.Error
			switch {
			case err == nil && len(hp) == 2:
				cancel() // the others need not answer
				answers <- answer{addr: addr, found: true, master: net.JoinHostPort(hp[0], hp[1])}
			case err == nil:
				answers <- answer{addr: addr, why: fmt.Sprintf("answered %q", hp)}
			case errors.Is(err, redis.Nil):
				answers <- answer{addr: addr, why: "monitors " + monitored(probe, sc)}
			case errors.As(err, &re) && refusesUser(err):
				answers <- answer{addr: addr, user: err}
			case errors.As(err, &re):
				answers <- answer{addr: addr, why: "answered " + err.Error()}
			default:
				answers <- answer{addr: addr, tls: tlsRefusal(ctx, addr, err, opt.TLSConfig != nil)}
			}
		})
	}
	wg.Wait()
	close(answers)
	var said []string
	var refused error
	for a := range answers {
		if a.found {
			return probeMaster(ctx, rawURL, opt, a.addr, a.master)
		}
		if a.tls != nil && refused == nil {
			refused = fmt.Errorf("redisconn: %s: Sentinel %s: %w", Redact(rawURL), a.addr, a.tls)
		}
		if a.user != nil && refused == nil {
			refused = fmt.Errorf("redisconn: %s: Sentinel %s refuses the URL's user: %w (a Sentinel URL's user information is the Sentinels' user, username= and password= the master's; docs/operations.md, \"A Redis with ACL users\")",
				Redact(rawURL), a.addr, a.user)
		}
		if a.why != "" {
			said = append(said, a.addr+" "+a.why)
		}
	}
	if refused != nil {
		return refused
	}
	if err := Ended(ctx); err != nil {
		return fmt.Errorf("redisconn: Sentinel probe of %s (SENTINEL get-master-addr-by-name %s): %w", strings.Join(opt.SentinelAddrs, ", "), opt.MasterName, err)
	}
	if len(said) == 0 {
		return nil
	}
	slices.Sort(said)
	return fmt.Errorf("redisconn: no Sentinel knows a master named %q (master_name=): %s", opt.MasterName, strings.Join(said, "; "))
}

// probeMaster logs in to the master at addr, which the Sentinel sentinel
// named, as the URL's master user (username= and password=) and sends it
// PING, within ctx and ProbeTimeout. It fails when the master refuses
// those credentials (WRONGPASS, NOAUTH), saying that it is the master,
// not a Sentinel, that refused them: until 7 Dec 2026 the binary started,
// and every call failed with the master's refusal, which did not say
// which of the URL's two credentials was wrong. It fails too when TLS
// cannot work with the master (tlsRefusal: its certificate not trusted or
// not for its address, a plain-text port), as it does with a Sentinel;
// until 7 Dec 2026 such a start went on and every call failed. A master
// that does not answer, or answers anything else, is left to the client,
// as a single node is.
func probeMaster(ctx context.Context, rawURL string, opt *redis.FailoverOptions, sentinel, addr string) error {
	probe, cancel := context.WithTimeout(ctx, ProbeTimeout)
	defer cancel()
	mc := redis.NewClient(&redis.Options{Addr: addr, Username: opt.Username, Password: opt.Password, TLSConfig: opt.TLSConfig,
		Protocol: opt.Protocol, MaxRetries: -1, PoolSize: 1, DialTimeout: ProbeTimeout, ContextTimeoutEnabled: true,
		DisableIdentity: true})
	defer mc.Close()
	err := mc.Ping(probe).Err()
	if err == nil {
		return nil
	}
	if !badCredentials(err) {
		if refused := tlsRefusal(ctx, addr, err, opt.TLSConfig != nil); refused != nil {
			return fmt.Errorf("redisconn: %s: the master %s (named by Sentinel %s): %w", Redact(rawURL), addr, sentinel, refused)
		}
		return nil
	}
	hint := "username= and password= are the master's credentials, the user information the Sentinels'"
	if opt.Password == "" && opt.SentinelPassword != "" {
		hint = "the URL has no password=: the password of its user information goes to the Sentinels only; give the master's as password=, its user as username="
	}
	return fmt.Errorf("redisconn: %s: the master %s (named by Sentinel %s) refuses the URL's master user: %w (%s; docs/operations.md, \"Redis with Sentinel\")",
		Redact(rawURL), addr, sentinel, err, hint)
}

// refusesUser reports whether err, a Sentinel's reply, refuses the user
// that logged in (WRONGPASS, NOAUTH) or a command to it (NOPERM): an
// answer about the credentials, not about the master.
func refusesUser(err error) bool {
	return badCredentials(err) || NoPerm(err)
}

// monitored lists, quoted, the names of the masters the Sentinel sc
// monitors (SENTINEL MASTERS), for an error about a name it does not.
func monitored(ctx context.Context, sc *redis.SentinelClient) string {
	ms, err := sc.Masters(ctx).Result()
	if err != nil {
		return "(SENTINEL MASTERS: " + err.Error() + ")"
	}
	var names []string
	for _, m := range ms {
		if name, ok := masterName(m); ok {
			names = append(names, fmt.Sprintf("%q", name))
		}
	}
	if len(names) == 0 {
		return "no master"
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// masterName returns the "name" field of one SENTINEL MASTERS entry, a
// flat field-value list in RESP2 and a map in RESP3.
func masterName(m any) (string, bool) {
	switch m := m.(type) {
	case []any:
		for i := 0; i+1 < len(m); i += 2 {
			if m[i] == "name" {
				s, ok := m[i+1].(string)
				return s, ok
			}
		}
	case map[any]any:
		s, ok := m["name"].(string)
		return s, ok
	case map[string]any:
		s, ok := m["name"].(string)
		return s, ok
	}
	return "", false
}

// sentinelRetryAfter is how long a failover client, once no Sentinel
// answered for the master, fails its dials at once with that error before
// it asks them again.
const sentinelRetryAfter = time.Second

// unreachable is the start of go-redis's error (v9.23, sentinel.go) when
// no Sentinel named the master: none could be reached, or each answered
// something else.
const unreachable = "all sentinels specified in configuration are unreachable"

// sentinelDial is a hook of the failover client around its dials, each of
// which asks the Sentinels where the master is before it connects.
//
// It rewrites an error that came from the Sentinels' answers rather than
// from a connection. go-redis's error wraps them: redis.Nil when no
// Sentinel knows the master any more, which the feed reads as "no entry"
// or "the lease is held by another", and a Sentinel's error reply, which
// it reads as Redis refusing the command. Either way the master cannot
// be reached, and the error now says so as a plain error, which the feed
// handles as Redis being down (retry with backoff, not ready).
//
// And it answers a dial within sentinelRetryAfter of one that no Sentinel
// answered with that one's error, without asking them again. Each dial
// asks every Sentinel, each with go-redis's own dial retries and command
// retries, and the pool retries the dial and the client the command
// around it: with every Sentinel refusing connections one call took about
// 50 s (a single Redis that is down, under 2 s), so a renderer started
// while they were down did not serve for minutes, and every call of a
// running one ended at its deadline as "context deadline exceeded"
// instead of saying what failed.
//
// When the Sentinels' answers say that TLS cannot work with them or that
// they refuse the URL's user, which a certificate or a user changed on
// them after the start makes happen, its error says so as Open's probe
// does (hint; since 7 Dec 2026).
type sentinelDial struct {
	master    string
	sentinels []string
	tls       bool // the URL is rediss://

	mu       sync.Mutex
	failedAt time.Time
	failed   error
}

func (h *sentinelDial) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		h.mu.Lock()
		failed := h.failed
		if time.Since(h.failedAt) >= sentinelRetryAfter {
			failed = nil
		}
		h.mu.Unlock()
		if failed != nil {
			return nil, failed
		}
		conn, err := next(ctx, network, addr)
		if err == nil || !strings.Contains(err.Error(), unreachable) || Ended(ctx) != nil {
			return conn, err
		}
		var re redis.Error
		switch {
		case errors.Is(err, redis.Nil):
			err = fmt.Errorf("redisconn: no Sentinel of %s knows a master named %q (SENTINEL get-master-addr-by-name answered nil)",
				strings.Join(h.sentinels, ", "), h.master)
		case errors.As(err, &re):
			err = fmt.Errorf("redisconn: the Sentinels of %s named no master %q: %s%s", strings.Join(h.sentinels, ", "), h.master,
				strings.ReplaceAll(err.Error(), "\n", "; "), h.hint(err))
		default:
			err = &oneLine{fmt.Errorf("redisconn: no Sentinel of %s answered for master %q: %w%s", strings.Join(h.sentinels, ", "), h.master, err, h.hint(err))}
		}
		h.mu.Lock()
		h.failedAt, h.failed = time.Now(), err
		h.mu.Unlock()
		return conn, err
	}
}

// hint returns what the error of a dial that no Sentinel answered says
// is to be done, after a space, as Open's probe says it: "" when it says
// nothing of the Sentinels' user or of TLS.
func (h *sentinelDial) hint(err error) string {
	var re redis.Error
	if errors.As(err, &re) && refusesUser(re) {
		return " (a Sentinel refuses the URL's user: the user information is the Sentinels' user, username= and password= the master's; docs/operations.md, \"A Redis with ACL users\")"
	}
	if m := tlsMismatch(err, h.tls); m != "" {
		return " (a Sentinel: " + m + ")"
	}
	return ""
}

func (*sentinelDial) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (*sentinelDial) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// oneLine is an error whose message is its wrapped error's on one line:
// go-redis joins the Sentinels' errors with newlines (errors.Join).
type oneLine struct{ err error }

func (e *oneLine) Error() string { return strings.ReplaceAll(e.err.Error(), "\n", "; ") }
func (e *oneLine) Unwrap() error { return e.err }

// redactQuery returns rawURL with the value of every query parameter
// whose name ends in "password" written "xxxxx": the Sentinel form takes
// the master's password as password= (the user information is the
// Sentinels'), and an operator may write sentinel_password=, which
// go-redis refuses, quoting the URL.
func redactQuery(rawURL string) string {
	q, frag, ok := queryOf(rawURL)
	if !ok {
		return rawURL
	}
	params := strings.Split(q, "&")
	changed := false
	for i, p := range params {
		if k, v, _ := strings.Cut(p, "="); v != "" && strings.HasSuffix(strings.ToLower(k), "password") {
			params[i] = k + "=xxxxx"
			changed = true
		}
	}
	if !changed {
		return rawURL
	}
	start := len(rawURL) - len(frag) - len(q)
	return rawURL[:start] + strings.Join(params, "&") + frag
}

// queryPasswords returns the values Redact hides in rawURL's query.
func queryPasswords(rawURL string) []string {
	q, _, ok := queryOf(rawURL)
	if !ok {
		return nil
	}
	var out []string
	for _, p := range strings.Split(q, "&") {
		if k, v, _ := strings.Cut(p, "="); v != "" && strings.HasSuffix(strings.ToLower(k), "password") {
			out = append(out, v)
		}
	}
	return out
}

// queryOf returns rawURL's query (after its first '?') and its fragment
// (from the '#' that follows, with it).
func queryOf(rawURL string) (q, frag string, ok bool) {
	_, q, ok = strings.Cut(rawURL, "?")
	if !ok {
		return "", "", false
	}
	if i := strings.IndexByte(q, '#'); i >= 0 {
		q, frag = q[:i], q[i:]
	}
	return q, frag, true
}
