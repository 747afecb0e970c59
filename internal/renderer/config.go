package renderer

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/codemojex/feed/internal/flagenv"
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
	AllowedOrigins string // comma-separated host patterns
	AdminToken     string
	LogLevel       string
	Consume        bool // false: serve the web only (an extra web replica)
	Doorbell       bool // false: ignore peers' doorbells and rely on the tail period
}

// ParseFlags parses the renderer's command line into m.Config.
func (m *Main) ParseFlags(args []string) error {
	host, _ := os.Hostname()
	if host == "" {
		host = "renderer"
	}
	c := &m.Config
	fs := flagenv.New("renderer")
	fs.Redis(&c.RedisURL)
	fs.String(&c.DB, "db", "FEED_DB", "var/feed.db", "SQLite file, shared by this host's renderers")
	fs.String(&c.HTTP, "http", "FEED_HTTP", ":8080", "HTTP listen address")
	fs.String(&c.Group, "group", "FEED_GROUP", "feed", "consumer group (one per host)")
	fs.String(&c.Consumer, "consumer", "FEED_CONSUMER", host, "consumer name; stable across restarts, held by one live process")
	fs.Duration(&c.MinIdle, "min-idle", "FEED_MIN_IDLE", 30*time.Second, "idle time before a peer's pending entry is reclaimed")
	fs.Duration(&c.ClaimEvery, "claim-every", "FEED_CLAIM_EVERY", 5*time.Second, "how often to reclaim idle entries")
	fs.Int64(&c.PoisonAfter, "poison-after", "FEED_POISON_AFTER", 5, "delivery count at which an entry is dead-lettered")
	fs.Duration(&c.GamesRefresh, "games-refresh", "FEED_GAMES_REFRESH", 100*time.Millisecond, "registry beat: how often to look for games whose score moved (bounds the extra latency of a quiet game's next event)")
	fs.Duration(&c.ActiveWindow, "active-window", "FEED_ACTIVE_WINDOW", 10*time.Second, "how long a game stays in the blocking read after its last event")
	fs.Duration(&c.SweepEvery, "sweep-every", "FEED_SWEEP_EVERY", 5*time.Minute, "period of the slow full pass over the registry (pending entries on quiet games, idle consumers)")
	fs.String(&c.AllowedOrigins, "allowed-origins", "FEED_ALLOWED_ORIGINS", "", "extra websocket origins (comma-separated host patterns); same host is always allowed")
	fs.String(&c.AdminToken, "admin-token", "FEED_ADMIN_TOKEN", "", "token required for /status, /api/status and /metrics (empty: open)")
	fs.String(&c.LogLevel, "log-level", "FEED_LOG_LEVEL", "info", "debug, info, warn or error")
	fs.Bool(&c.Consume, "consume", "FEED_CONSUME", true, "consume the streams; false serves the web only")
	fs.Bool(&c.Doorbell, "doorbell", "FEED_DOORBELL", true, "subscribe to peers' doorbells; false tails on the period only")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	switch {
	case c.Consumer == "":
		return fmt.Errorf("-consumer must not be empty")
	case c.MinIdle <= 0 || c.ClaimEvery <= 0 || c.GamesRefresh <= 0 || c.ActiveWindow <= 0 || c.SweepEvery <= 0:
		return fmt.Errorf("-min-idle, -claim-every, -games-refresh, -active-window and -sweep-every must be positive")
	case c.PoisonAfter < 1:
		return fmt.Errorf("-poison-after must be at least 1")
	}
	return nil
}

func (c Config) origins() []string {
	var out []string
	for _, o := range strings.Split(c.AllowedOrigins, ",") {
		if o = strings.TrimSpace(o); o != "" {
			out = append(out, o)
		}
	}
	return out
}
