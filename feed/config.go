package feed

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/internal/registry"
)

// Config configures a Consumer. Zero durations and counts take the defaults
// named on each field.
type Config struct {
	// Client is the Redis (or Valkey) client. Required. Set its
	// ContextTimeoutEnabled option: the consumer bounds its calls with
	// context deadlines, which go-redis otherwise ignores, so a Redis that
	// stops answering would hold each call for go-redis's own timeouts. A
	// *redis.ClusterClient is read per hash slot (docs/reader-law.md,
	// "Redis Cluster").
	Client redis.UniversalClient
	// Group is the consumer group. Required.
	Group string
	// Consumer is this process's name in the group: stable across restarts
	// (that is how it recovers its own pending list) and held by one live
	// process at a time through a lease. Required.
	Consumer string
	// Registry is the games registry, a sorted set of game names scored by
	// the unix ms of their last event (event.RegistryKey), whose games'
	// streams (event.StreamKey) are consumed. A game's stream is read while
	// it has a reason to be (docs/reader-law.md, "The read set"); a quiet
	// game costs nothing per turn. Set exactly one of Registry and Streams.
	Registry string
	// WakeEvery is the registry beat (default 100ms): how often the games
	// whose score moved are looked for. It bounds the extra latency of the
	// first entry of a quiet or new game.
	WakeEvery time.Duration
	// WakeSlack is how far below the highest score seen the beat looks
	// (default 2s): room for writers' clocks and for a ZADD that lands a
	// little after a later one. A score older than that is found by the
	// sweep.
	WakeSlack time.Duration
	// ActiveWindow is how long a game stays in the blocking read after its
	// last sign of activity (a registry score, a delivery) (default 10s).
	ActiveWindow time.Duration
	// PollEvery is how often the poll reads known streams once without
	// blocking (default 5s), many streams per XREADGROUP: the net under the
	// registry beat for an entry whose score it did not see (a writer whose
	// clock runs behind, a writer resending old entries after an outage).
	// A poll reads at most 5,000 streams, so past that many games a round
	// over all of them takes several polls. An idle poll returns nothing
	// and costs one command per 500 streams.
	PollEvery time.Duration
	// SweepEvery is the period of the slow full pass over the registry
	// (default 5m), in pages of 500 games spread over the period: it finds
	// pending entries on quiet streams, lag the beat missed, games that left
	// the registry, and removes idle consumers. The first pass after Open
	// runs at once.
	SweepEvery time.Duration
	// Streams lists static stream keys to consume instead of a registry; it
	// is called as the loop starts and then every StreamsEvery. A failing
	// call keeps the previous list. Static streams are always read.
	Streams func(ctx context.Context) ([]string, error)
	// StreamsEvery is the re-listing period of Streams (default 2s).
	StreamsEvery time.Duration
	// DeadKey maps a stream key to its dead-letter stream key, which must
	// share its hash slot (default event.DeadKeyOf, which does so only for
	// a key with a hash tag): on a cluster Open refuses a stream whose
	// dead keys do not, and a static list's later stream is not read.
	DeadKey func(stream string) string
	// MinIdle is how long, by the server's clock, an entry stays pending
	// before XAUTOCLAIM may take it (default 30s).
	MinIdle time.Duration
	// ClaimEvery is the beat of XAUTOCLAIM over all streams (default 5s).
	ClaimEvery time.Duration
	// PoisonAfter is the delivery count at which a failing entry is
	// dead-lettered (default 5).
	PoisonAfter int64
	// Block is XREADGROUP's BLOCK (default 1s). go-redis does not interrupt
	// a blocking read when its context ends, so this bounds how long Close
	// waits for the reader.
	Block time.Duration
	// Linger is how long the loop waits, after handing over a small batch
	// of its read of the hot streams (no stream full), before it reads
	// them again (default 0: no wait); on a cluster too, where that read
	// does not block. The entries written meanwhile
	// then come in one read and one batch. At a low rate each batch is
	// otherwise one or two entries, and a batch handler that commits per
	// batch pays a transaction per entry (docs/benchmarks.md, issue 14):
	// a short linger trades up to this much latency for fewer, larger
	// commits. The first entry after a quiet spell does not wait.
	Linger time.Duration
	// Count is the COUNT of reads and claims, per stream (default 100).
	Count int64
	// LeaseTTL is the lifetime of the consumer-name lease, refreshed every
	// LeaseTTL/3 (default 5s): a crashed holder's name is free again after
	// at most this long.
	LeaseTTL time.Duration
	// ConsumerMaxIdle is how long a consumer of the group may stay idle with
	// no pending entry before it is removed (default 24h).
	ConsumerMaxIdle time.Duration
	// CensusEvery is the period of the pending and lag gauges and of the
	// idle-consumer cleanup (default 10s).
	CensusEvery time.Duration
	// ShutdownGrace is how long Close lets the handler finish what is in
	// hand before its context is cancelled (default 10s).
	ShutdownGrace time.Duration
	// Handler handles one entry at a time. Exactly one of Handler and
	// BatchHandler must be set.
	Handler Handler
	// BatchHandler handles a batch (up to Count entries per stream, over
	// several streams) and returns one verdict per entry.
	BatchHandler BatchHandler
	// Prepare, when set with BatchHandler, is BatchHandler's work in two
	// halves: Prepare does the pure part of a batch (validation,
	// rendering: nothing stored, nothing published, no verdict settled)
	// and returns the rest, which stores the batch and returns its
	// verdicts exactly as BatchHandler would. When reads come back full (a
	// backlog), the consumer reads and prepares the next batch on another
	// goroutine while the batch before it commits; commits, verdicts and
	// acks stay in read order, one batch at a time. Prepare may run while
	// an earlier batch's commit runs, and a prepared batch may be dropped
	// uncommitted (BatchHandler then takes its entries, as after a panic
	// in Prepare).
	Prepare func(ctx context.Context, ms []Message) func(ctx context.Context) []error
	// Logger receives the consumer's logs (default slog.Default()).
	Logger *slog.Logger
	// PauseMax caps the backoff between retries of entries held on an
	// Unavailable verdict (default 5s).
	PauseMax time.Duration
	// LogEvery is the sampling period of per-entry log lines (dead
	// letters, failures): one line per kind and period, with the count of
	// the lines held back (default 10s).
	LogEvery time.Duration
	// DeadMaxLen caps each dead-letter stream with XADD MAXLEN ~ (default
	// 10000).
	DeadMaxLen int64
	// Position, when set, returns the position up to which the handler's
	// store has committed a stream ("" for none). A stream whose position
	// is behind the group's last-delivered id is caught up when it is
	// discovered, before anything new is read from it: its entries from
	// Position (less CatchUpLookback) to the last-delivered id are handed
	// to the handler, never acked and never dead-lettered, a few pages per
	// loop turn; the stream is not read, recovered or claimed until then.
	// A store behind only by entries still pending (or dead-lettered) is
	// not re-read: the reader law brings them (docs/reader-law.md). A
	// ">" read no newer than Position is a rewind of the group, whose
	// dead-lettered positions are not handed again.
	Position func(ctx context.Context, stream string) (string, error)
	// CatchUpLookback widens a catch-up below the store's position by this
	// much stream time, for entries that were still pending when an older
	// copy of the store was taken (default 5m).
	CatchUpLookback time.Duration
}

// MinIdleFloor is the shortest MinIdle Open takes.
const MinIdleFloor = 2 * time.Millisecond

// withDefaults returns c with every zero field set to the default its doc
// comment names. Each Config and Options of the feed fills defaults this way,
// once, where it is opened.
func (c Config) withDefaults() Config {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.StreamsEvery, 2*time.Second)
	def(&c.WakeEvery, 100*time.Millisecond)
	def(&c.WakeSlack, 2*time.Second)
	def(&c.ActiveWindow, 10*time.Second)
	def(&c.SweepEvery, 5*time.Minute)
	def(&c.PollEvery, 5*time.Second)
	def(&c.MinIdle, 30*time.Second)
	def(&c.ClaimEvery, 5*time.Second)
	def(&c.Block, time.Second)
	def(&c.LeaseTTL, 5*time.Second)
	def(&c.ConsumerMaxIdle, 24*time.Hour)
	def(&c.CensusEvery, 10*time.Second)
	def(&c.ShutdownGrace, 10*time.Second)
	def(&c.PauseMax, 5*time.Second)
	def(&c.LogEvery, 10*time.Second)
	def(&c.CatchUpLookback, 5*time.Minute)
	if c.DeadMaxLen <= 0 {
		c.DeadMaxLen = 10000
	}
	if c.PoisonAfter <= 0 {
		c.PoisonAfter = 5
	}
	if c.Count <= 0 {
		c.Count = 100
	}
	if c.DeadKey == nil {
		c.DeadKey = event.DeadKeyOf
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

func (c *Config) validate() error {
	switch {
	case c.Client == nil:
		return fmt.Errorf("%w: Client is nil", ErrConfig)
	case c.Group == "":
		return fmt.Errorf("%w: Group is empty", ErrConfig)
	case c.Consumer == "":
		return fmt.Errorf("%w: Consumer is empty", ErrConfig)
	case (c.Streams == nil) == (c.Registry == ""):
		return fmt.Errorf("%w: set exactly one of Registry and Streams", ErrConfig)
	case (c.Handler == nil) == (c.BatchHandler == nil):
		return fmt.Errorf("%w: set exactly one of Handler and BatchHandler", ErrConfig)
	case c.Prepare != nil && c.BatchHandler == nil:
		return fmt.Errorf("%w: Prepare needs BatchHandler", ErrConfig)
	case c.LeaseTTL < 30*time.Millisecond:
		return fmt.Errorf("%w: LeaseTTL %v is under 30ms", ErrConfig, c.LeaseTTL)
	case c.Linger < 0 || c.Linger > time.Second:
		return fmt.Errorf("%w: Linger %v is not within 0 and 1s", ErrConfig, c.Linger)
	case c.MinIdle < MinIdleFloor:
		return fmt.Errorf("%w: MinIdle %v is under %v", ErrConfig, c.MinIdle, MinIdleFloor)
	}
	return nil
}

// StaticStreams returns a Config.Streams that always lists keys.
func StaticStreams(keys ...string) func(context.Context) ([]string, error) {
	return func(context.Context) ([]string, error) { return keys, nil }
}

// RegistryStreams returns a function that lists the stream of every valid
// game in the registry (ZRANGE codemojex:games), for tools; a Consumer
// follows the registry itself with Config.Registry.
func RegistryStreams(rdb redis.UniversalClient) func(context.Context) ([]string, error) {
	return func(ctx context.Context) ([]string, error) {
		games, err := registry.Games(ctx, rdb)
		if err != nil {
			return nil, fmt.Errorf("feed: %w", err)
		}
		out := make([]string, len(games))
		for i, g := range games {
			out[i] = event.StreamKey(g)
		}
		return out, nil
	}
}
