package web

import (
	"context"
	"log/slog"
	"net"
	"net/netip"
	"time"

	"github.com/codemojex/feed/feed"
)

// Config configures a Server. Zero values take the documented defaults.
type Config struct {
	Addr  string // listen address; ":0" picks a free port (see Server.Addr)
	Store Store  // required
	// Listener, when set, is served instead of a new listener on Addr
	// (Addr still names the server for PublicHosts' default). Open owns
	// it: it closes it when it fails, and Close does. A replica binds its
	// port first, so that a port already taken stops it before it
	// consumes anything (see Listen).
	Listener net.Listener

	// Status reports the consumer group's health for /status and
	// /api/status; nil shows "no status source".
	Status func(ctx context.Context) (feed.Status, error)
	// Ready reports whether Redis and SQLite are reachable and the consumer
	// loop runs; nil means ready. /readyz answers 503 with its error.
	Ready func(ctx context.Context) error
	// Doorbell signals that the store moved (a renderer's SPUBLISH, relayed
	// by internal/renderer). Nil: the tailer only polls every TailEvery.
	Doorbell <-chan struct{}

	// WSEngine serves the websockets: WSEngineNbio (default), the socket
	// handed to an nbio epoll poller after the handshake, or WSEngineStd,
	// goroutines per socket with coder/websocket.
	WSEngine string
	// SendBuffer bounds, on the nbio engine, the bytes of a websocket the
	// kernel has not taken yet; beyond it the client is closed as slow
	// (1 MiB). The std engine blocks in its writes instead.
	SendBuffer int

	// AllowedOrigins widens the Origin check of websockets and event
	// streams beyond the request's own host: path.Match patterns of
	// host:port, or of scheme://host:port, as coder/websocket's
	// OriginPatterns (e.g. "example.com", "https://*.example.com"). A
	// scheme's default port (80, 443) in the pattern or the Origin counts
	// as none.
	AllowedOrigins []string
	// AdminToken guards /status, /fragments/status, /api/status, /metrics,
	// /debug/pprof/ and the details of /readyz (Authorization: Bearer
	// TOKEN, the scheme in any case, or ?token=TOKEN). Empty leaves them
	// open, which Open allows only on a loopback listener (else
	// ErrAdminExposed).
	AdminToken string
	// SecretFlags are the names of the command line's flags whose values
	// /debug/pprof/cmdline writes xxxxx, in every form the flag package
	// takes (flagenv.Set.Secrets: the renderer's -admin-token); a Redis
	// URL's password is written xxxxx in any argument.
	SecretFlags []string
	// PublicHosts are the names (host or host:port, "*.example.com" for
	// subdomains) this server answers to on websockets, event streams and
	// admin endpoints; any other Host header is refused there (DNS
	// rebinding). A default port (host:80, host:443) also admits the Host
	// without a port, as browsers send it. Entries are read as Host headers
	// are, and Open fails on one that is none of these (CheckPublicHosts).
	// Nil: DefaultPublicHosts(Addr).
	PublicHosts []string
	// TrustedProxies are the peers whose X-Forwarded-For is believed when
	// telling clients apart for the per-client limits. Nil: none, every
	// peer is the client.
	TrustedProxies []netip.Prefix
	// StoreID names the store file that seqs belong to (each host has its
	// own, so the same seq means different lines on two hosts). Pages embed
	// it and a websocket whose page came from another store gets a reset
	// instead of a silent gap. Empty disables the check.
	StoreID string
	Logger  *slog.Logger // default slog.Default()

	// Presence shares viewer counts ("N watching") with the other replicas;
	// nil counts this replica's websockets alone.
	Presence Presence
	// PresenceEvery is the beat of the presence sync (2s); it must be well
	// under the presence's TTL.
	PresenceEvery time.Duration
	// PresenceTTL is the presence's TTL (15s): the other replicas' counts
	// are dropped when no sync has succeeded for that long, since by then
	// they have expired in Redis or cannot be known.
	PresenceTTL time.Duration
	// DOMLines caps the lines a game page keeps in its DOM (500).
	DOMLines int
	// UpgradeRetry is how long a page that fell back to the event stream
	// (websockets failed) waits before it tries a websocket again, doubling
	// while that fails, up to 10 minutes (30s).
	UpgradeRetry time.Duration
	// QuietProbe is how long a visible page's websocket may bring no frame
	// before the page probes it, so that a connection that died without a
	// word (a NAT that forgot it, a server host cut off) is found while
	// the reader watches, not only when the tab wakes or the network
	// comes back (45s).
	QuietProbe time.Duration

	TailEvery    time.Duration // poll the store at least this often (1s)
	StateEvery   time.Duration // at most one scoreboard state frame per game per this period (250ms; see board)
	TailBatch    int           // lines per store query of the tailer and of a backfill (256)
	SendQueue    int           // frames queued per websocket before it is closed as slow (1024; keep it above TailBatch)
	WriteTimeout time.Duration // a websocket write may make no progress, and a ping go unanswered while nothing reaches the peer, this long (10s)
	ReadTimeout  time.Duration // whole-request read limit of plain HTTP requests (30s; websockets are exempt)
	// NoCompression turns off permessage-deflate on the nbio engine's
	// websockets: by default a socket whose handshake offers it gets
	// compressed frames (each compressed once for every socket; the std
	// engine never compresses).
	NoCompression bool
	// PeerTimeout is how long bytes written to a client may go
	// unacknowledged by its host before the kernel drops the connection
	// (TCP_USER_TIMEOUT, Linux only; 30s). It is how an event stream whose
	// client vanished (no FIN, no RST: a phone gone out of range) ends; a
	// websocket's ends sooner by its unanswered ping. Negative leaves the
	// kernel's default, about fifteen minutes of retransmissions.
	PeerTimeout time.Duration
	// ResponseTimeout is how long a plain (non-websocket) response may take
	// to be written in full; a client that does not read is cut off (30s).
	ResponseTimeout time.Duration
	PingEvery       time.Duration // websocket ping interval (20s)
	MaxBacklog      int           // a resume further behind than this many lines gets a reset frame (5000)
	PageLines       int           // lines on a game page and per "older" fragment (100)

	UpgradeRate  float64 // websocket upgrades per second per client address (2)
	UpgradeBurst int     // burst of upgrades per client address (20)
	MaxClients   int     // websockets and event streams per server; beyond it they get 503 (10000)

	// MaxSocketsPerClient caps the websockets and event streams one client
	// address (IPv6: one /64) holds at once; beyond it they get 429 (64).
	MaxSocketsPerClient int
	// MaxRequestsPerClient caps the plain requests one client address
	// (IPv6: one /64) has in flight; beyond it requests get 429 (32).
	MaxRequestsPerClient int
	// TimelineLines and TimelineBytes bound one /games/{game}/timeline.json
	// response (1000 entries, 1 MiB); the replay page follows "next".
	TimelineLines int
	TimelineBytes int
}

// withDefaults returns c with every zero field set to the default its doc
// comment names. Each Config and Options of the feed fills defaults this way,
// once, where it is opened.
func (c Config) withDefaults() Config {
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	setDur(&c.TailEvery, time.Second)
	setDur(&c.StateEvery, 250*time.Millisecond)
	setDur(&c.WriteTimeout, 10*time.Second)
	setDur(&c.ReadTimeout, 30*time.Second)
	if c.PeerTimeout == 0 { // negative: off
		c.PeerTimeout = 30 * time.Second
	}
	setDur(&c.ResponseTimeout, 30*time.Second)
	setDur(&c.PingEvery, 20*time.Second)
	setDur(&c.PresenceEvery, 2*time.Second)
	setDur(&c.PresenceTTL, 15*time.Second)
	setInt(&c.DOMLines, 500)
	setDur(&c.UpgradeRetry, 30*time.Second)
	setDur(&c.QuietProbe, 45*time.Second)
	setInt(&c.TailBatch, 256)
	setInt(&c.SendQueue, 1024)
	setInt(&c.SendBuffer, 1<<20)
	if c.WSEngine == "" {
		c.WSEngine = WSEngineNbio
	}
	setInt(&c.MaxBacklog, 5000)
	setInt(&c.PageLines, 100)
	setInt(&c.UpgradeBurst, 20)
	setInt(&c.MaxClients, 10000)
	setInt(&c.MaxSocketsPerClient, 64)
	setInt(&c.MaxRequestsPerClient, 32)
	setInt(&c.TimelineLines, 1000)
	setInt(&c.TimelineBytes, 1<<20)
	if c.PublicHosts == nil {
		c.PublicHosts = DefaultPublicHosts(c.Addr)
	}
	if c.UpgradeRate <= 0 {
		c.UpgradeRate = 2
	}
	return c
}

func setDur(d *time.Duration, def time.Duration) {
	if *d <= 0 {
		*d = def
	}
}

func setInt(n *int, def int) {
	if *n <= 0 {
		*n = def
	}
}
