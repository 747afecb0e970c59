// Package presence shares "who is watching" between web replicas through
// Redis: each replica publishes how many websockets it has open per game and
// reads everyone else's. Everything it writes expires, so a replica that
// dies without a word (SIGKILL, a lost host) stops counting within TTL.
//
// Keys (internal/event): one hash per replica, PresenceKey(REPLICA), field
// GAME → sockets, rewritten whole and given a TTL on every beat; and one
// sorted set, PresenceReplicasKey, member REPLICA, score = the unix ms at
// which that replica's hash expires (Redis's clock, so hosts' clocks do not
// matter). Each beat drops expired members and refreshes the set's own
// expiry, so neither key outlives the replicas. A replica that holds a name
// alone (Config.Name) also keeps PresenceNameKey(NAME) = REPLICA, with the
// same TTL, so that the next process of that name replaces its count. Every
// command touches one key: the keys may live in different slots of a Redis
// Cluster.
package presence

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/internal/event"
)

// DefaultTTL is how long a replica's count lives without a refresh.
const DefaultTTL = 15 * time.Second

// Errors of this package.
var (
	ErrConfig = errors.New("presence: bad config")
)

// Config configures a Redis presence.
type Config struct {
	Client redis.UniversalClient // required
	// Replica names this process; it must be unique among live replicas
	// (see ReplicaID). Required.
	Replica string
	// TTL is how long this replica's count lives without a refresh
	// (DefaultTTL). Sync must run more often than that.
	TTL time.Duration
	// Name, when set, is a name this process holds alone among the live
	// replicas (a consumer's group and name, under its lease). The first
	// Sync removes the count of the process that held it before: one that
	// crashed left its count behind, and its viewers, come back to this
	// process, were counted twice until it expired. Empty: none (web-only
	// replicas share their host's name).
	Name string
}

// Redis is one replica's view of the shared presence. It implements
// web.Presence. Safe for use by one goroutine at a time (the web server's
// presence loop).
type Redis struct {
	rdb      redis.UniversalClient
	replica  string
	key      string
	ttl      time.Duration
	nameKey  string // PresenceNameKey(Config.Name); "" without a name
	replaced bool   // the name's previous replica is gone from the counts
}

// New returns the presence of cfg.Replica.
func New(cfg Config) (*Redis, error) {
	switch {
	case cfg.Client == nil:
		return nil, fmt.Errorf("%w: Client is nil", ErrConfig)
	case cfg.Replica == "":
		return nil, fmt.Errorf("%w: Replica is empty", ErrConfig)
	}
	if cfg.TTL <= 0 {
		cfg.TTL = DefaultTTL
	}
	p := &Redis{rdb: cfg.Client, replica: cfg.Replica, key: event.PresenceKey(cfg.Replica), ttl: cfg.TTL}
	if cfg.Name != "" {
		p.nameKey = event.PresenceNameKey(cfg.Name)
	}
	return p, nil
}

// ReplicaID returns name plus a random suffix: a restarted process is a new
// replica (its predecessor's count expires on its own), and two web-only
// replicas that share a host name do not overwrite each other's counts.
func ReplicaID(name string) string {
	var b [4]byte
	_, _ = rand.Read(b[:]) // crypto/rand does not fail on supported platforms
	return name + "-" + hex.EncodeToString(b[:])
}

// Sync publishes local (sockets per game on this replica; games without
// sockets are left out) and returns the counts of every other live replica,
// summed per game.
func (p *Redis) Sync(ctx context.Context, local map[string]int) (map[string]int, error) {
	now, err := p.rdb.Time(ctx).Result()
	if err != nil {
		return nil, fmt.Errorf("presence: time: %w", err)
	}
	nowMs := now.UnixMilli()
	ttlMs := p.ttl.Milliseconds()
	if p.nameKey != "" && !p.replaced {
		if err := p.replace(ctx); err != nil {
			return nil, err
		}
		p.replaced = true
	}

	// This replica's hash, rewritten whole so games it no longer has
	// sockets on disappear; one key, so MULTI is cluster-safe.
	if _, err := p.rdb.TxPipelined(ctx, func(tx redis.Pipeliner) error {
		tx.Del(ctx, p.key)
		if len(local) > 0 {
			fields := make([]any, 0, 2*len(local))
			for g, n := range local {
				if n > 0 {
					fields = append(fields, g, n)
				}
			}
			if len(fields) > 0 {
				tx.HSet(ctx, p.key, fields...)
				tx.PExpire(ctx, p.key, p.ttl)
			}
		}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("presence: write %s: %w", p.key, err)
	}

	// The set of live replicas: one key, several commands.
	var members *redis.StringSliceCmd
	if _, err := p.rdb.Pipelined(ctx, func(pl redis.Pipeliner) error {
		pl.ZAdd(ctx, event.PresenceReplicasKey, redis.Z{Score: float64(nowMs + ttlMs), Member: p.replica})
		if p.nameKey != "" {
			// As long as this replica's count lives, so that a successor
			// that starts before it expires finds it.
			pl.Set(ctx, p.nameKey, p.replica, p.ttl)
		}
		pl.ZRemRangeByScore(ctx, event.PresenceReplicasKey, "-inf", strconv.FormatInt(nowMs, 10))
		pl.PExpire(ctx, event.PresenceReplicasKey, p.ttl)
		members = pl.ZRangeByScore(ctx, event.PresenceReplicasKey, &redis.ZRangeBy{Min: "(" + strconv.FormatInt(nowMs, 10), Max: "+inf"})
		return nil
	}); err != nil {
		return nil, fmt.Errorf("presence: replicas: %w", err)
	}

	var others []string
	for _, m := range members.Val() {
		if m != p.replica {
			others = append(others, m)
		}
	}
	out := map[string]int{}
	if len(others) == 0 {
		return out, nil
	}
	cmds := make([]*redis.MapStringStringCmd, len(others))
	// One HGETALL per replica; a cluster client splits the pipeline by slot.
	if _, err := p.rdb.Pipelined(ctx, func(pl redis.Pipeliner) error {
		for i, m := range others {
			cmds[i] = pl.HGetAll(ctx, event.PresenceKey(m))
		}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("presence: read replicas: %w", err)
	}
	for _, c := range cmds {
		for g, v := range c.Val() {
			if n, err := strconv.Atoi(v); err == nil && n > 0 {
				out[g] += n
			}
		}
	}
	return out, nil
}

// replace takes the name for this replica and removes the count of the
// replica that held it before, if it is still there.
func (p *Redis) replace(ctx context.Context) error {
	prev, err := p.rdb.SetArgs(ctx, p.nameKey, p.replica, redis.SetArgs{Get: true, TTL: p.ttl}).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return fmt.Errorf("presence: name %s: %w", p.nameKey, err)
	}
	if prev == "" || prev == p.replica {
		return nil
	}
	if err := p.rdb.Del(ctx, event.PresenceKey(prev)).Err(); err != nil {
		return fmt.Errorf("presence: replace %s: %w", prev, err)
	}
	if err := p.rdb.ZRem(ctx, event.PresenceReplicasKey, prev).Err(); err != nil {
		return fmt.Errorf("presence: replace %s: %w", prev, err)
	}
	return nil
}

// Leave removes this replica's count at once (a clean shutdown; a crash
// leaves it to expire).
func (p *Redis) Leave(ctx context.Context) error {
	if err := p.rdb.Del(ctx, p.key).Err(); err != nil {
		return fmt.Errorf("presence: leave: %w", err)
	}
	if err := p.rdb.ZRem(ctx, event.PresenceReplicasKey, p.replica).Err(); err != nil {
		return fmt.Errorf("presence: leave: %w", err)
	}
	return nil
}
