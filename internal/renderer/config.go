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
	GamesRefresh   time.Duration
	AllowedOrigins string // comma-separated host patterns
	AdminToken     string
	LogLevel       string
	Consume        bool // false: serve the web only (an extra web replica)
	Doorbell       bool // false: ignore peers' doorbells and rely on the tail period
	FutureBound    time.Duration
	DeadMax        int64
	FileCheck      time.Duration
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
	fs.Duration(&c.GamesRefresh, "games-refresh", "FEED_GAMES_REFRESH", 2*time.Second, "how often to re-read the games registry")
	fs.String(&c.AllowedOrigins, "allowed-origins", "FEED_ALLOWED_ORIGINS", "", "extra websocket origins (comma-separated host patterns); same host is always allowed")
	fs.String(&c.AdminToken, "admin-token", "FEED_ADMIN_TOKEN", "", "token required for /status, /api/status and /metrics (empty: open)")
	fs.String(&c.LogLevel, "log-level", "FEED_LOG_LEVEL", "info", "debug, info, warn or error")
	fs.Bool(&c.Consume, "consume", "FEED_CONSUME", true, "consume the streams; false serves the web only")
	fs.Bool(&c.Doorbell, "doorbell", "FEED_DOORBELL", true, "subscribe to peers' doorbells; false tails on the period only")
	fs.Duration(&c.FutureBound, "future-bound", "FEED_FUTURE_BOUND", 10*time.Minute, "dead-letter an entry whose EVT id time is further than this ahead of its stream entry's time")
	fs.Int64(&c.DeadMax, "dead-max", "FEED_DEAD_MAX", 10000, "cap of each game's dead-letter stream (XADD MAXLEN ~)")
	fs.Duration(&c.FileCheck, "file-check", "FEED_FILE_CHECK", time.Second, "how often to check that the store file is still the one opened")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	switch {
	case c.Consumer == "":
		return fmt.Errorf("-consumer must not be empty")
	case c.MinIdle <= 0 || c.ClaimEvery <= 0 || c.GamesRefresh <= 0:
		return fmt.Errorf("-min-idle, -claim-every and -games-refresh must be positive")
	case c.PoisonAfter < 1:
		return fmt.Errorf("-poison-after must be at least 1")
	case c.FutureBound <= 0 || c.FileCheck <= 0:
		return fmt.Errorf("-future-bound and -file-check must be positive")
	case c.DeadMax < 1:
		return fmt.Errorf("-dead-max must be at least 1")
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
