// Package gamesim is the codemojex writer used by `gamesim`, `make run`,
// the end-to-end tests and the benchmarks: it plays plausible games and
// appends their events to the games' streams, keeping the games registry
// current.
//
// Game and Play generate a game's events deterministically, for tests that
// need to know what was written; Run writes them to Redis, paced or as fast
// as Redis takes them, optionally mixed with malformed entries, and reports
// exactly what it wrote.
package gamesim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/internal/event"
)

// Errors of this package.
var (
	// ErrConfig is wrapped by every configuration error.
	ErrConfig = errors.New("gamesim: invalid config")
	// ErrUnsettled means Run was stopped while Redis did not answer, so the
	// fate of the last batch is unknown: the Summary counts only what was
	// confirmed.
	ErrUnsettled = errors.New("gamesim: entries not confirmed written")
)

// DefaultPrefix is the game name prefix used when Config.Prefix is empty.
const DefaultPrefix = "game"

// Config is what Run writes.
type Config struct {
	// Games is the number of games played at once, named GameName(Prefix, i)
	// for i in 1..Games.
	Games int
	// Events is the number of entries written per game (good and bad
	// together); 0 writes until the context is cancelled.
	Events int
	// Rate is the number of entries per second over all games; 0 writes as
	// fast as Redis takes them, in pipelined batches.
	Rate float64
	// Seed makes the games (and which entries are malformed) reproducible:
	// game i plays NewGame(GameName(Prefix, i), GameSeed(Seed, i)).
	Seed int64
	// Prefix names the games; empty means DefaultPrefix.
	Prefix string
	// MaxLen is the approximate retention per stream (XADD MAXLEN ~); 0
	// keeps every entry.
	MaxLen int64
	// Bad is the fraction of entries that are malformed (see BadReasons):
	// each must end in the game's dead-letter stream.
	Bad float64
	// Unknown is the fraction of entries that are well formed but of an
	// unknown kind (UnknownKind): stored and shown neutrally, never dead.
	Unknown float64
}

// GameSummary says exactly what Run wrote to one game's stream. Good and
// Bad count entries confirmed by Redis, each written once.
type GameSummary struct {
	Game   string
	Stream string
	// Good counts well-formed entries, Unknown included.
	Good int64
	// Unknown counts the well-formed entries of an unknown kind.
	Unknown int64
	// Bad counts malformed entries; Reasons breaks them down by reason.
	Bad     int64
	Reasons map[string]int64
	// BadPositions are the stream positions of the malformed entries, in
	// order, for tests that match them with dead letters.
	BadPositions []string
	// FirstID and LastID are the first and last valid EVT ids written.
	FirstID, LastID string
	// LastPos is the stream position of the last entry written.
	LastPos string
	// LastAt is the writer's time of the last entry: the registry's score.
	LastAt time.Time
}

// Written is the number of entries written to the game's stream.
func (g GameSummary) Written() int64 { return g.Good + g.Bad }

// Summary says what Run wrote, per game and in total.
type Summary struct {
	Games              []GameSummary // in game order
	Good, Bad, Unknown int64
	Elapsed            time.Duration
	Stopped            bool // the context ended the run before Events per game
}

// Written is the number of entries written over all games.
func (s Summary) Written() int64 { return s.Good + s.Bad }

// GameName returns the name of game i (1-based) under prefix.
func GameName(prefix string, i int) string {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	return prefix + "-" + strconv.Itoa(i)
}

// GameSeed returns the seed game i (1-based) plays from under seed.
func GameSeed(seed int64, i int) int64 {
	// splitmix64 step: neighbouring seeds and games give unrelated games.
	z := uint64(seed) + uint64(i)*0x9E3779B97F4A7C15
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
	z = (z ^ (z >> 27)) * 0x94D049BB133111EB
	return int64(z ^ (z >> 31))
}

// withDefaults returns c with every zero field set to the default its doc
// comment names (Prefix: DefaultPrefix), the way every Config of the feed
// fills its defaults.
func (c Config) withDefaults() Config {
	if c.Prefix == "" {
		c.Prefix = DefaultPrefix
	}
	return c
}

// Validate reports what of c, its defaults filled, Run would refuse (an
// error wrapping ErrConfig), so that a command refuses its flags before it
// dials Redis.
func (c Config) Validate() error { return c.withDefaults().check() }

func (c Config) check() error {
	switch {
	case c.Games < 1:
		return fmt.Errorf("%w: games %d: want at least 1", ErrConfig, c.Games)
	case c.Events < 0:
		return fmt.Errorf("%w: events %d: want 0 (endless) or more", ErrConfig, c.Events)
	case c.Rate < 0 || math.IsNaN(c.Rate) || math.IsInf(c.Rate, 0):
		return fmt.Errorf("%w: rate %v: want 0 (unpaced) or more", ErrConfig, c.Rate)
	case c.MaxLen < 0:
		return fmt.Errorf("%w: maxlen %d: want 0 (keep all) or more", ErrConfig, c.MaxLen)
	case c.Bad < 0 || c.Unknown < 0 || !(c.Bad+c.Unknown <= 1): // NaN too
		return fmt.Errorf("%w: bad %v, unknown %v: want fractions summing to at most 1", ErrConfig, c.Bad, c.Unknown)
	}
	for _, i := range []int{1, c.Games} {
		if name := GameName(c.Prefix, i); !event.ValidGame(name) {
			return fmt.Errorf("%w: prefix %q gives game name %q: want ^[a-z0-9][a-z0-9-]{0,63}$", ErrConfig, c.Prefix, name)
		}
	}
	return nil
}

// Run writes cfg's games to rdb until every game has cfg.Events entries or
// ctx ends; an ended context is a normal stop (nil error, Stopped set), the
// way to end an endless run. Progress lines go to progress (nil: none).
//
// Every entry is written with an explicit stream position above the
// stream's last one, so a batch that Redis may or may not have applied
// (a dropped connection, a restart) is retried without writing anything
// twice: Redis refuses a position it already has. EVT ids go on after the
// greatest in each stream's last entries, so they keep increasing across a
// restart whatever the clock did meanwhile. One writer per game.
func Run(ctx context.Context, rdb redis.UniversalClient, cfg Config, progress io.Writer) (Summary, error) {
	cfg = cfg.withDefaults()
	if err := cfg.check(); err != nil {
		return Summary{}, err
	}
	if progress == nil {
		progress = io.Discard
	}
	w := newWriter(rdb, cfg, progress)
	if err := w.resume(ctx); err != nil {
		return w.summary(), err
	}
	err := w.loop(ctx)
	s := w.summary()
	w.report(s)
	return s, err
}
