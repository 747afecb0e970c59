package renderer

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/codemojex/feed/feed"
	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/internal/flagenv"
	"github.com/codemojex/feed/internal/pipeline"
	"github.com/codemojex/feed/internal/presence"
	"github.com/codemojex/feed/internal/redisconn"
	"github.com/codemojex/feed/web"
)

// DefaultLinger is -linger's default. A linger cuts the store's CPU per
// event at low rates, but its wait sits in the path of every line that
// comes while the loop is busy: at 1,000 events/s over 100 games, 1 ms
// gave an XADD → frame p99 of 17–38 ms against 2 ms's 31–60 ms (when the
// linger still sat between two reads). It stays at 2 ms
// because 1 ms cost the drain of many small streams a fifth of its rate
// (20,000 games × 3 events: 0.51× the 200-game rate against 0.65×, at the
// edge of issue 10's ≥ 50 %, feedbench's "many games" row);
// set -linger 1ms where few, busy games and the tail matter more
// (docs/benchmarks.md, issue 14).
const DefaultLinger = 2 * time.Millisecond

// DefaultShutdownDelay is -shutdown-delay's default: long enough for a
// load balancer or a proxy that probes /readyz every second or two to see it
// fail twice, short enough to stay, with the consumer's and the web's own
// bounds (10s, 5s), within a stop grace of 30s (Kubernetes' default).
const DefaultShutdownDelay = 5 * time.Second

// The floors of the duration flags: ParseFlags refuses a shorter value
// (exit status 2) as the mistake it is, where any positive one was taken.
// A beat of a nanosecond (-games-refresh 1ns, -claim-every 1ns) made a busy
// loop of calls to Redis, -file-check 1ns one of stats, -response-timeout
// 1ns cut every response, and -peer-timeout under a millisecond set
// TCP_USER_TIMEOUT to 0, which is the kernel's default of about 15 minutes.
// -min-idle's floor is feed.MinIdleFloor, -future-bound's
// pipeline.MaxAheadFloor.
const (
	// ClaimEveryFloor: each beat walks every stream with XAUTOCLAIM.
	ClaimEveryFloor = 10 * time.Millisecond
	// GamesRefreshFloor: each beat asks Redis for the games whose score
	// moved (a tenth of the default's 100ms).
	GamesRefreshFloor = 10 * time.Millisecond
	// ActiveWindowFloor: a game quiet for less leaves the blocking read
	// between two of a busy game's events.
	ActiveWindowFloor = 100 * time.Millisecond
	// SweepEveryFloor: the sweep pages through the whole registry once a
	// period.
	SweepEveryFloor = time.Second
	// ResponseTimeoutFloor: a page on a slow link takes longer to write.
	ResponseTimeoutFloor = time.Second
	// PeerTimeoutFloor: the kernel's retransmissions (from 200ms, doubling)
	// need a few rounds before a peer counts as gone; 0 keeps the kernel's
	// default.
	PeerTimeoutFloor = time.Second
	// FileCheckFloor: each check stats the store file and its companions.
	FileCheckFloor = 10 * time.Millisecond
)

// Config is the renderer's configuration: every flag with its environment
// fallback, in one place.
type Config struct {
	RedisURL       string
	DB             string
	HTTP           string
	Group          string
	Consumer       string
	MinIdle        time.Duration
	ClaimEvery     time.Duration
	PoisonAfter    int64
	GamesRefresh   time.Duration // the registry beat
	ActiveWindow   time.Duration
	SweepEvery     time.Duration
	Linger         time.Duration // wait for more after a small read (feed.Config.Linger)
	AllowedOrigins string        // comma-separated host patterns
	AdminToken     string
	PublicHosts    string // comma-separated; empty: loopback names plus -http's host
	TrustedProxies string // comma-separated CIDR prefixes or addresses
	LogLevel       string
	Consume        bool // false: serve the web only (an extra web replica)
	Doorbell       bool // false: ignore peers' doorbells and rely on the tail period
	// ShutdownDelay is how long Shutdown keeps serving with /readyz
	// failing before it closes (see Main.Shutdown).
	ShutdownDelay time.Duration

	// Limits of the web side (see web.Config).
	WSEngine             string // web.WSEngineStd or web.WSEngineNbio
	WSCompress           bool   // permessage-deflate on the nbio engine's websockets
	SendBuffer           int
	PeerTimeout          time.Duration
	ResponseTimeout      time.Duration
	MaxClients           int
	MaxSocketsPerClient  int
	MaxRequestsPerClient int
	TimelineLines        int
	TimelineBytes        int

	// Fault handling (see docs/operations.md).
	FutureBound time.Duration
	DeadMax     int64
	FileCheck   time.Duration

	// Who is watching (see internal/presence).
	PresenceEvery time.Duration
	PresenceTTL   time.Duration

	proxies []netip.Prefix // TrustedProxies, parsed
	secrets []string       // the flags defined as secrets (web.Config.SecretFlags)
}

// ParseFlags parses the renderer's command line into m.Config. It prints
// nothing but the usage that -h asks for (then it returns flag.ErrHelp):
// a flag or value it refuses is its error, for the caller to report.
func (m *Main) ParseFlags(args []string) error {
	host, _ := os.Hostname()
	if host == "" {
		host = "renderer"
	}
	c := &m.Config
	fs := flagenv.New("renderer")
	fs.Redis(&c.RedisURL)
	fs.String(&c.DB, "db", "FEED_DB", "var/feed.db", "SQLite file, shared by this host's renderers")
	fs.String(&c.HTTP, "http", "FEED_HTTP", "127.0.0.1:8080", "HTTP listen address; beyond loopback it needs -admin-token")
	fs.String(&c.Group, "group", "FEED_GROUP", "feed", "consumer group (one per host); up to 255 bytes, no whitespace, control characters, { or }")
	fs.String(&c.Consumer, "consumer", "FEED_CONSUMER", host, "consumer name; stable across restarts, held by one live process")
	fs.Duration(&c.MinIdle, "min-idle", "FEED_MIN_IDLE", 30*time.Second, "idle time before a peer's pending entry is reclaimed")
	fs.Duration(&c.ClaimEvery, "claim-every", "FEED_CLAIM_EVERY", 5*time.Second, "how often to reclaim idle entries")
	fs.Int64(&c.PoisonAfter, "poison-after", "FEED_POISON_AFTER", 5, "delivery count at which an entry is dead-lettered")
	fs.Duration(&c.GamesRefresh, "games-refresh", "FEED_GAMES_REFRESH", 100*time.Millisecond, "registry beat: how often to look for games whose score moved (bounds the extra latency of a quiet game's next event)")
	fs.Duration(&c.ActiveWindow, "active-window", "FEED_ACTIVE_WINDOW", 10*time.Second, "how long a game stays in the blocking read after its last event")
	fs.Duration(&c.Linger, "linger", "FEED_LINGER", DefaultLinger, "after committing a read of a few entries, wait this long before the next read, so one store transaction takes the entries of those milliseconds (fewer, larger transactions at low rates; adds up to this much latency); 0 turns it off")
	fs.Duration(&c.SweepEvery, "sweep-every", "FEED_SWEEP_EVERY", 5*time.Minute, "period of the slow full pass over the registry (pending entries on quiet games, idle consumers)")
	fs.String(&c.AllowedOrigins, "allowed-origins", "FEED_ALLOWED_ORIGINS", "", "extra websocket origins (comma-separated host patterns); same host is always allowed")
	fs.Secret(&c.AdminToken, "admin-token", "FEED_ADMIN_TOKEN", "token required for /status, /fragments/status, /api/status, /metrics, /debug/pprof/ and /readyz details (empty: open, allowed on a loopback -http only)")
	fs.String(&c.PublicHosts, "public-hosts", "FEED_PUBLIC_HOSTS", "", "host names the websocket, event-stream and admin endpoints answer to, comma-separated (host, host:port, *.domain); empty: localhost, 127.0.0.1, ::1 and -http's host")
	fs.String(&c.TrustedProxies, "trusted-proxies", "FEED_TRUSTED_PROXIES", "", "CIDR prefixes of reverse proxies whose X-Forwarded-For is believed, comma-separated; empty: none")
	fs.Duration(&c.ResponseTimeout, "response-timeout", "FEED_RESPONSE_TIMEOUT", 30*time.Second, "time to write a whole non-websocket response; a client that does not read is cut off")
	fs.String(&c.WSEngine, "ws-engine", "FEED_WS_ENGINE", web.WSEngineNbio, "websocket engine: nbio (websockets after the handshake, and event streams after their head, on an epoll poller: less memory and CPU per client) or std (goroutines per socket and per stream, coder/websocket)")
	fs.Bool(&c.WSCompress, "ws-compress", "FEED_WS_COMPRESS", true, "nbio engine: compress websocket frames (permessage-deflate, no context takeover) for clients that offer it, as browsers do; each frame is compressed once for all its sockets")
	fs.Duration(&c.PeerTimeout, "peer-timeout", "FEED_PEER_TIMEOUT", 30*time.Second, "drop a connection whose host has left bytes written to it unacknowledged this long (TCP_USER_TIMEOUT, Linux): how an event stream whose client vanished ends; 0 leaves the kernel's default (about 15 minutes)")
	fs.Int(&c.SendBuffer, "send-buffer", "FEED_SEND_BUFFER", 1<<20, "nbio engine: bytes of a websocket the kernel has not taken before the client is closed as slow")
	fs.Int(&c.MaxClients, "max-clients", "FEED_MAX_CLIENTS", 10000, "websockets and event streams this replica holds at most")
	fs.Int(&c.MaxSocketsPerClient, "max-sockets-per-client", "FEED_MAX_SOCKETS_PER_CLIENT", 64, "websockets and event streams one client address (IPv6: /64) holds at most")
	fs.Int(&c.MaxRequestsPerClient, "max-requests-per-client", "FEED_MAX_REQUESTS_PER_CLIENT", 32, "plain requests one client address (IPv6: /64) has in flight at most")
	fs.Int(&c.TimelineLines, "timeline-lines", "FEED_TIMELINE_LINES", 1000, "entries per timeline.json response at most")
	fs.Int(&c.TimelineBytes, "timeline-bytes", "FEED_TIMELINE_BYTES", 1<<20, "bytes per timeline.json response, about, at most")
	fs.String(&c.LogLevel, "log-level", "FEED_LOG_LEVEL", "info", "debug, info, warn or error")
	fs.Bool(&c.Consume, "consume", "FEED_CONSUME", true, "consume the streams; false serves the web only")
	fs.Bool(&c.Doorbell, "doorbell", "FEED_DOORBELL", true, "subscribe to peers' doorbells; false tails on the period only")
	fs.Duration(&c.ShutdownDelay, "shutdown-delay", "FEED_SHUTDOWN_DELAY", DefaultShutdownDelay, "on SIGTERM, answer /readyz 503 and go on serving this long before closing, so load balancers stop sending clients first; 0 closes at once")
	fs.Duration(&c.FutureBound, "future-bound", "FEED_FUTURE_BOUND", 10*time.Minute, "dead-letter an entry whose EVT id time is further than this ahead of its stream entry's time")
	fs.Int64(&c.DeadMax, "dead-max", "FEED_DEAD_MAX", 10000, "cap of each game's dead-letter stream (XADD MAXLEN ~)")
	fs.Duration(&c.FileCheck, "file-check", "FEED_FILE_CHECK", time.Second, "how often to check that the store file is still the one opened")
	fs.Duration(&c.PresenceEvery, "presence-every", "FEED_PRESENCE_EVERY", 2*time.Second, "beat of the shared viewer count (\"N watching\")")
	fs.Duration(&c.PresenceTTL, "presence-ttl", "FEED_PRESENCE_TTL", presence.DefaultTTL, "how long a replica's viewer count outlives its last beat (a crashed replica's viewers vanish after it)")
	// A parse error is returned alone, for the caller to log as one line
	// (cmd/renderer: slog's, as every other line of the renderer): the
	// flag package printed it, then every flag's usage, some eighty lines
	// between the error and the log's next line. -h still prints them.
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(os.Stderr)
			fmt.Fprintf(os.Stderr, "Usage of %s:\n", fs.Name())
			fs.PrintDefaults()
		}
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	c.secrets = fs.Secrets()
	for _, f := range []struct {
		name     string
		v, floor time.Duration
	}{
		// feed.Open refuses a -min-idle under its floor: Run failed on it
		// (exit 1) after it had created and migrated the store file.
		{"min-idle", c.MinIdle, feed.MinIdleFloor},
		{"claim-every", c.ClaimEvery, ClaimEveryFloor},
		{"games-refresh", c.GamesRefresh, GamesRefreshFloor},
		{"active-window", c.ActiveWindow, ActiveWindowFloor},
		{"sweep-every", c.SweepEvery, SweepEveryFloor},
		{"response-timeout", c.ResponseTimeout, ResponseTimeoutFloor},
		{"future-bound", c.FutureBound, pipeline.MaxAheadFloor},
		{"file-check", c.FileCheck, FileCheckFloor},
	} {
		if f.v < f.floor {
			return fmt.Errorf("-%s %v: want at least %v", f.name, f.v, f.floor)
		}
	}
	// Once: the case that refuses it returns its error too.
	httpErr := checkListenAddr(c.HTTP)
	groupErr := event.CheckGroup(c.Group)
	switch {
	case c.Consumer == "":
		return fmt.Errorf("-consumer must not be empty")
	case groupErr != nil:
		return groupErr
	case c.DB == "":
		return fmt.Errorf("-db must not be empty")
	case c.PresenceEvery <= 0 || c.PresenceTTL < 2*max(c.PresenceEvery, web.PresenceMinGap):
		// The web's beats are at least PresenceMinGap apart, whatever
		// -presence-every says: a shorter TTL would let this replica's
		// count expire between two of them.
		return fmt.Errorf("-presence-ttl must be at least twice -presence-every (and at least %v), both positive", 2*web.PresenceMinGap)
	case c.Linger < 0 || c.Linger > time.Second:
		return fmt.Errorf("-linger must be within 0 and 1s")
	case c.PoisonAfter < 1:
		return fmt.Errorf("-poison-after must be at least 1")
	case c.DeadMax < 1:
		return fmt.Errorf("-dead-max must be at least 1")
	case new(slog.Level).UnmarshalText([]byte(c.LogLevel)) != nil:
		// A typo must not start a renderer that logs at another level.
		return fmt.Errorf("-log-level %q: want debug, info, warn or error", c.LogLevel)
	case c.ShutdownDelay < 0:
		return fmt.Errorf("-shutdown-delay must not be negative")
	case c.PeerTimeout != 0 && c.PeerTimeout < PeerTimeoutFloor:
		// Taken for 0 (the kernel's default, about 15 minutes), as a
		// negative one would be, or one under a millisecond is, it would
		// leave a vanished client's stream open where a bound was asked.
		return fmt.Errorf("-peer-timeout %v: want 0 (the kernel's default) or at least %v", c.PeerTimeout, PeerTimeoutFloor)
	case c.WSEngine != web.WSEngineStd && c.WSEngine != web.WSEngineNbio:
		return fmt.Errorf("-ws-engine %q: want %s or %s", c.WSEngine, web.WSEngineStd, web.WSEngineNbio)
	case c.SendBuffer < 1:
		return fmt.Errorf("-send-buffer must be at least 1")
	case c.MaxClients < 1 || c.MaxSocketsPerClient < 1 || c.MaxRequestsPerClient < 1 || c.TimelineLines < 1 || c.TimelineBytes < 1:
		return fmt.Errorf("-max-clients, -max-sockets-per-client, -max-requests-per-client, -timeline-lines and -timeline-bytes must be at least 1")
	case httpErr != nil:
		// Before the admin-token case, which takes an address it cannot
		// read for one beyond loopback: "-http 8080" was refused for
		// wanting -admin-token.
		return fmt.Errorf("-http %s: %w", c.HTTP, httpErr)
	case c.AdminToken == "" && !loopbackAddr(c.HTTP):
		return fmt.Errorf("-http %s listens beyond loopback: set -admin-token (or $FEED_ADMIN_TOKEN) to guard /status, /fragments/status, /api/status, /metrics and /debug/pprof/, or listen on 127.0.0.1", c.HTTP)
	}
	if err := redisconn.Check(c.RedisURL); err != nil {
		return fmt.Errorf("-redis: %w", err)
	}
	if err := web.CheckOriginPatterns(c.origins()); err != nil {
		return fmt.Errorf("-allowed-origins: %w", err)
	}
	if err := web.CheckPublicHosts(c.publicHosts()); err != nil {
		return fmt.Errorf("-public-hosts: %w", err)
	}
	var err error
	if c.proxies, err = web.ParsePrefixes(c.TrustedProxies); err != nil {
		return fmt.Errorf("-trusted-proxies: %w", err)
	}
	return nil
}

// checkListenAddr says what is wrong with a listen address that is no
// host:port with a port net.Listen takes (a number up to 65535 or a
// service name; 0 for any free one): a port alone ("8080") or a host alone
// ("127.0.0.1") was refused as an address beyond loopback without
// -admin-token, and a port that is none ("127.0.0.1:99999") failed Run,
// exit status 1, as a failed start does.
func checkListenAddr(addr string) error {
	if n, err := strconv.ParseUint(addr, 10, 16); err == nil {
		return fmt.Errorf("a port alone: want host:port, :%d (every interface, with -admin-token) or 127.0.0.1:%d (loopback)", n, n)
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("want host:port, 127.0.0.1:8080 or :8080 say: %w", err)
	}
	if port == "" {
		return errors.New("no port: want host:port, 127.0.0.1:8080 or :8080 say (:0 for any free port)")
	}
	if _, err := net.LookupPort("tcp", port); err != nil {
		return fmt.Errorf("port %q: want a number up to 65535 or a service name: %w", port, err)
	}
	return nil
}

// loopbackAddr reports whether a listen address is on loopback only by its
// look: a loopback IP or "localhost". Other names are taken as public;
// web.Open checks the address it really got as well.
func loopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

func (c Config) publicHosts() []string {
	if strings.TrimSpace(c.PublicHosts) == "" {
		return nil // web's default: loopback names plus the listen host
	}
	return splitList(c.PublicHosts)
}

func (c Config) origins() []string { return splitList(c.AllowedOrigins) }

func splitList(s string) []string {
	var out []string
	for _, o := range strings.Split(s, ",") {
		if o = strings.TrimSpace(o); o != "" {
			out = append(out, o)
		}
	}
	return out
}
