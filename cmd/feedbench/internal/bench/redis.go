package bench

import (
	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/internal/proc"
)

// Redis is a redis-server process the benchmark started on a free port of
// its own (internal/redistest's server); it never touches a server it did
// not start.
type Redis struct {
	*proc.Redis
}

// StartRedis starts redis-server (or valkey-server) without persistence on
// a free loopback port, with its files under dir and room for the fan-out's
// connections.
func StartRedis(dir string) (*Redis, error) {
	s, err := proc.StartRedis(dir, proc.RedisOptions{MaxClients: 20000})
	if err != nil {
		return nil, err
	}
	return &Redis{s}, nil
}

// Client returns a new client of the server; pool sizes the connection pool
// (0: go-redis's default).
func (r *Redis) Client(pool int) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: r.Addr, PoolSize: pool})
}

// Close kills the server and waits for it.
func (r *Redis) Close() { r.Stop() }
