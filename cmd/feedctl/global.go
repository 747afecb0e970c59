package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/internal/flagenv"
	"github.com/codemojex/feed/internal/pipeline"
	"github.com/codemojex/feed/internal/redisconn"
	"github.com/codemojex/feed/internal/registry"
	"github.com/codemojex/feed/store"
)

// global holds the flags every command shares.
type global struct {
	redisURL string
	group    string
	// futureBound is the renderers' -future-bound (FEED_FUTURE_BOUND):
	// rebuild and requeue judge entries as the renderers do.
	futureBound time.Duration
	// timeout bounds each call to Redis (callTimeout); 0 leaves go-redis's
	// own timeouts and retries.
	timeout time.Duration
	// stderr takes the Redis client's own lines (redisconn.LogTo).
	stderr io.Writer
	rdb    redis.UniversalClient
}

// parseGlobal parses the global flags; the command's own are parsed by
// the command, which then opens Redis (open).
func parseGlobal(ctx context.Context, args []string, stderr io.Writer) (*global, []string, error) {
	g := &global{stderr: stderr}
	fs := flagenv.New("feedctl")
	fs.SetOutput(stderr)
	fs.Usage = func() { writeUsage(stderr) }
	defineGlobal(fs, g)
	if err := fs.Parse(args); err != nil {
		return nil, nil, err
	}
	// The renderers refuse these values (exit status 2); taken here, a
	// -future-bound of 0 or less passed the pipeline a bound that means
	// the default or no check at all, and rebuild stored, and requeue's
	// check let through, entries the renderers dead-letter as future ids.
	groupErr := event.CheckGroup(g.group)
	switch {
	case groupErr != nil:
		return nil, nil, groupErr
	case g.futureBound < pipeline.MaxAheadFloor:
		return nil, nil, fmt.Errorf("-future-bound %v: want at least %v, the renderers' own", g.futureBound, pipeline.MaxAheadFloor)
	case g.timeout < 0 || g.timeout > 0 && g.timeout < TimeoutFloor:
		return nil, nil, fmt.Errorf("-timeout %v: want at least %v, or 0 for go-redis's own timeouts", g.timeout, TimeoutFloor)
	}
	return g, fs.Args(), nil
}

// defineGlobal defines the global flags on fs, into g.
func defineGlobal(fs *flagenv.Set, g *global) {
	fs.Redis(&g.redisURL)
	fs.String(&g.group, "group", "FEED_GROUP", "feed", "consumer group (the renderers' -group)")
	fs.Duration(&g.futureBound, "future-bound", "FEED_FUTURE_BOUND", pipeline.DefaultMaxAhead, fmt.Sprintf("the renderers' -future-bound: rebuild and requeue judge entries as they do; at least %v", pipeline.MaxAheadFloor))
	fs.Duration(&g.timeout, "timeout", "FEEDCTL_TIMEOUT", DefaultTimeout, fmt.Sprintf("how long to wait for Redis to answer one call, its retries included; at least %v (0: go-redis's own timeouts)", TimeoutFloor))
}

// writeUsage writes the usage and the global flags, each with the
// variable it falls back to and its default, as renderer -h and gamesim
// -h list theirs; the usage named them in its first line only until 6 Dec
// 2026 (TestUsageListsGlobalFlags).
func writeUsage(w io.Writer) {
	fmt.Fprint(w, usage)
	fs := flagenv.New("feedctl")
	defineGlobal(fs, new(global))
	fs.SetOutput(w)
	fmt.Fprint(w, "\nglobal flags:\n")
	fs.PrintDefaults()
}

// open opens Redis for a command, once its own flags are read and found
// usable. Opening asks the server (INFO, for a cluster): usage, help, an
// unknown command and a command line a command refuses are answered
// without it, or they would reach the default address, someone's Redis,
// and a stopped or hung one would put its failure above the usage or hold
// it (TestUsageNeedsNoRedis, TestCommandRefusalNeedsNoRedis). Before 6 Dec
// 2026 every command opened Redis before reading its flags.
func (g *global) open(ctx context.Context) error {
	redisconn.LogTo(g.stderr, "feedctl")
	// The cluster probe of a plain URL is the first call to Redis, and
	// -timeout bounds it as it bounds every other: it took its own 2 s
	// whatever -timeout said (TestHungRedisTimeout).
	probe := ctx
	if g.timeout > 0 {
		var cancel context.CancelFunc
		probe, cancel = context.WithTimeout(ctx, g.timeout)
		defer cancel()
	}
	rdb, err := redisconn.OpenContext(probe, g.redisURL)
	if err != nil {
		if h := callTimeout(g.timeout); g.timeout > 0 && h.expired(ctx, probe, err) {
			return h.wrap(err)
		}
		return fmt.Errorf("-redis: %w", err)
	}
	if g.timeout > 0 {
		rdb.AddHook(callTimeout(g.timeout))
	}
	g.rdb = rdb
	return nil
}

// ping takes no flag and no argument. Before 6 Dec 2026 it read none of
// them: "feedctl ping -redis URL" (the global flag after the command)
// pinged $REDIS_URL, or the default address, and exited 0 whatever URL
// it named, and "ping stray" was taken too (TestPingTakesNoArgument).
func (g *global) ping(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flagenv.New("ping")
	fs.SetOutput(stderr)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := g.open(ctx); err != nil {
		return err
	}
	defer g.rdb.Close()
	return g.rdb.Ping(ctx).Err()
}

// games lists the registered games, in registry order.
func (g *global) games(ctx context.Context) ([]string, error) {
	return registry.Games(ctx, g.rdb)
}

// parseFlags parses a command's flags with fs. The commands take no other
// argument, and the flag package stops at the first one that is not a
// flag: what followed it, a -dry-run say, was dropped unread, and "prune
// -older-than D -yes X -dry-run" pruned for real (TestStrayArgumentRefused).
func parseFlags(fs *flagenv.Set, args []string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%s: unexpected argument %q (and what follows it): flags only", fs.Name(), fs.Arg(0))
	}
	return nil
}

// gameArg parses a command's flags with fs and checks that the -game flag
// (required), stored in *p, names a valid game.
func gameArg(fs *flagenv.Set, args []string, p *string) error {
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if !event.ValidGame(*p) {
		return fmt.Errorf("-game %q: want a game name matching ^[a-z0-9][a-z0-9-]{0,63}$", *p)
	}
	return nil
}

// storeOptions are the options feedctl opens a store for writing with
// (rebuild, prune): the store's log lines (migrations applied, a copied
// file's positions moved back, a failed checkpoint) go to the command's
// stderr as slog text, the renderer's format, with the store's db key.
// They went to slog's default logger, which writes the log package's
// format ("2026/12/06 03:20:00 INFO store migration applied …") to the
// process's stderr whatever stderr the command was given
// (TestStoreLinesAreSlog).
func storeOptions(stderr io.Writer) store.Options {
	return store.Options{Logger: slog.New(slog.NewTextHandler(stderr, nil))}
}
