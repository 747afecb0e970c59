package bench

import (
	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/internal/proc"
	"github.com/codemojex/feed/internal/redisconn"
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

// Client returns a new client of the server, opened by redisconn as the
// binaries open theirs.
func (r *Redis) Client() (redis.UniversalClient, error) {
	return redisconn.Open(r.URL())
}
