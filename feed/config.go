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
	// stops answering would hold each call for go-redis's own timeouts. The consumer reads
	// new entries of all its streams in one XREADGROUP call, so with a
	// cluster client every stream must live on one node's slots.
	Client redis.UniversalClient
	// Group is the consumer group. Required.
	Group string
	// Consumer is this process's name in the group: stable across restarts
	// (that is how it recovers its own pending list) and held by one live
	// process at a time through a lease. Required.
	Consumer string
	// Streams discovers the stream keys to consume; it is called as the loop
	// starts and then every StreamsEvery. A failing call keeps the previous
	// list. Required.
	Streams func(ctx context.Context) ([]string, error)
	// StreamsEvery is the re-discovery period (default 2s).
	StreamsEvery time.Duration
	// DeadKey maps a stream key to its dead-letter stream key, which must
	// share its hash slot (default event.DeadKeyOf).
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
	// Logger receives the consumer's logs (default slog.Default()).
	Logger *slog.Logger
}

func (c *Config) setDefaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.StreamsEvery, 2*time.Second)
	def(&c.MinIdle, 30*time.Second)
	def(&c.ClaimEvery, 5*time.Second)
	def(&c.Block, time.Second)
	def(&c.LeaseTTL, 5*time.Second)
	def(&c.ConsumerMaxIdle, 24*time.Hour)
	def(&c.CensusEvery, 10*time.Second)
	def(&c.ShutdownGrace, 10*time.Second)
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
}

func (c *Config) validate() error {
	switch {
	case c.Client == nil:
		return fmt.Errorf("%w: Client is nil", ErrConfig)
	case c.Group == "":
		return fmt.Errorf("%w: Group is empty", ErrConfig)
	case c.Consumer == "":
		return fmt.Errorf("%w: Consumer is empty", ErrConfig)
	case c.Streams == nil:
		return fmt.Errorf("%w: Streams is nil", ErrConfig)
	case (c.Handler == nil) == (c.BatchHandler == nil):
		return fmt.Errorf("%w: set exactly one of Handler and BatchHandler", ErrConfig)
	case c.LeaseTTL < 30*time.Millisecond:
		return fmt.Errorf("%w: LeaseTTL %v is under 30ms", ErrConfig, c.LeaseTTL)
	case c.MinIdle < 2*time.Millisecond:
		return fmt.Errorf("%w: MinIdle %v is under 2ms", ErrConfig, c.MinIdle)
	}
	return nil
}

// StaticStreams returns a Config.Streams that always lists keys.
func StaticStreams(keys ...string) func(context.Context) ([]string, error) {
	return func(context.Context) ([]string, error) { return keys, nil }
}

// RegistryStreams returns a Config.Streams that lists the stream of every
// valid game in the registry (ZRANGE codemojex:games).
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
