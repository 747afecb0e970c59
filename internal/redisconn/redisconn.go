// Package redisconn opens the Redis (or Valkey) client that every binary of
// the feed uses, so that they all parse the same URLs and share the same
// client options.
package redisconn

import (
	"fmt"

	"github.com/redis/go-redis/v9"
)

// Open parses url (redis://, rediss:// or unix://, as go-redis's ParseURL
// reads them) and returns a client for it. It does not dial: the first
// command does.
//
// The client always has ContextTimeoutEnabled set. Without it go-redis
// ignores context deadlines on reads and writes, and a Redis that stops
// answering holds every call (and a shutdown) for go-redis's own timeouts
// and retries; the feed bounds its calls with context deadlines instead.
func Open(url string) (redis.UniversalClient, error) {
	opt, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("redisconn: %w", err)
	}
	opt.ContextTimeoutEnabled = true
	return redis.NewClient(opt), nil
}
