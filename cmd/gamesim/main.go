// Command gamesim is the codemojex writer: it plays plausible games and
// appends their events to the games' streams (see internal/gamesim).
// Ctrl-C stops it cleanly; it exits 0 when done or stopped.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	neturl "net/url"
	"os"
	"strings"

	"github.com/codemojex/feed/internal/flagenv"
	"github.com/codemojex/feed/internal/gamesim"
	"github.com/codemojex/feed/internal/redisconn"
	"github.com/codemojex/feed/internal/stopsignal"
)

func main() {
	// Caught from stopsignal's package init on: stopped before main runs,
	// gamesim exits 0 too, nothing written (TestTermDuringInit).
	ctx, stop := stopsignal.NotifyContext(context.Background())
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		// Written already by the flag package, with the usage (as
		// feedctl's; it was written twice and exited 1).
		if le := (*flagenv.LineError)(nil); errors.As(err, &le) {
			os.Exit(2)
		}
		// Errors of internal/gamesim carry its prefix already.
		fmt.Fprintln(os.Stderr, "gamesim:", strings.TrimPrefix(err.Error(), "gamesim: "))
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var (
		url string
		cfg gamesim.Config
	)
	fs := flagenv.New("gamesim")
	fs.SetOutput(stderr)
	fs.Redis(&url)
	fs.Int(&cfg.Games, "games", "GAMESIM_GAMES", 3, "number of games played at once")
	fs.Int(&cfg.Events, "events", "GAMESIM_EVENTS", 1000, "entries per game; 0 = endless (until Ctrl-C)")
	fs.Float64(&cfg.Rate, "rate", "GAMESIM_RATE", 0, "entries per second over all games; 0 = as fast as Redis takes them")
	fs.Int64(&cfg.Seed, "seed", "GAMESIM_SEED", 1, "seed of the games and of which entries are malformed")
	fs.String(&cfg.Prefix, "prefix", "GAMESIM_PREFIX", gamesim.DefaultPrefix, "game name prefix: games are PREFIX-1, PREFIX-2, ...")
	fs.Int64(&cfg.MaxLen, "maxlen", "GAMESIM_MAXLEN", 0, "approximate entries kept per stream (XADD MAXLEN ~); 0 = keep all")
	fs.Float64(&cfg.Bad, "bad", "GAMESIM_BAD", 0, "fraction of malformed entries (dead-lettered by the renderers)")
	fs.Float64(&cfg.Unknown, "unknown", "GAMESIM_UNKNOWN", 0, "fraction of well-formed entries of an unknown kind")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	// Before Redis is dialled: a value refused is told at once, not
	// after a Redis that does not answer yet (TestFailsLoudly).
	if err := cfg.Validate(); err != nil {
		return err
	}
	redisconn.LogTo(stderr, "gamesim")
	rdb, err := redisconn.Open(url)
	if err != nil {
		return fmt.Errorf("-redis: %w", err)
	}
	defer rdb.Close()
	if err := rdb.Ping(ctx).Err(); err != nil {
		if stoppedWhileStarting(ctx, err) {
			fmt.Fprintln(stdout, "gamesim: stopped while connecting to Redis; nothing written")
			return nil
		}
		return fmt.Errorf("redis %s: %w", hostOf(url), err)
	}
	_, err = gamesim.Run(ctx, rdb, cfg, stdout)
	if stoppedWhileStarting(ctx, err) {
		// Stopped while it looked for where each stream ends (Redis
		// slow to answer): nothing was written yet.
		fmt.Fprintln(stdout, "gamesim: stopped while starting; nothing written")
		return nil
	}
	return err
}

// stoppedWhileStarting reports whether err is the cancelled call of a
// gamesim stopped before it wrote anything: a stop, which exits 0, where
// entries whose fate is unknown (ErrUnsettled) stay an error.
func stoppedWhileStarting(ctx context.Context, err error) bool {
	return err != nil && ctx.Err() != nil && errors.Is(err, context.Canceled) && !errors.Is(err, gamesim.ErrUnsettled)
}

// hostOf returns the host:port of a Redis URL for error messages, or the
// URL itself when it names no host (a unix socket).
func hostOf(redisURL string) string {
	if u, err := neturl.Parse(redisURL); err == nil && u.Host != "" {
		return u.Host
	}
	return redisURL
}
