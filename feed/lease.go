package feed

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// A lease makes a consumer name held by one live process at a time: SET NX
// PX with a token of this process, refreshed every TTL/3 by a script that
// only extends its own token. A crashed holder's lease expires within TTL.
type lease struct {
	rdb   redis.UniversalClient
	key   string
	token string
	ttl   time.Duration
	onErr func(error) // counts a failed refresh

	mu    sync.Mutex
	until time.Time // held until then by the local clock, conservatively
	lost  bool      // another token holds the key
	err   error     // last refresh error
}

// The lease's writes are let in while Redis is at maxmemory under
// noeviction (the script flag allow-oom): SET is refused there (OOM), while
// every command the reader law needs (XREADGROUP, XACK, XAUTOCLAIM) is
// not, so a renderer started during such an incident read nothing until
// memory was freed, its lease "unreachable at open", though the backlog
// was there to render (TestOutOfMemoryAtStartReadsBacklog). The key is a
// few dozen bytes.
const leaseScriptFlags = "#!lua flags=allow-oom\n"

// acquireScript is SET NX PX: OK, or nil if the key is held.
var acquireScript = redis.NewScript(leaseScriptFlags + `
return redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2])
`)

// refreshScript extends the lease if it is ours, takes it if nobody holds it
// (Redis restarted without persistence), and reports 0 if another holds it.
var refreshScript = redis.NewScript(leaseScriptFlags + `
local v = redis.call('GET', KEYS[1])
if v == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
if not v then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 1
end
return 0
`)

var releaseScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
`)

func newLease(rdb redis.UniversalClient, key string, ttl time.Duration) *lease {
	host, _ := os.Hostname()
	var b [6]byte
	_, _ = rand.Read(b[:])
	return &lease{
		rdb: rdb, key: key, ttl: ttl,
		token: fmt.Sprintf("%s:%d:%s", host, os.Getpid(), hex.EncodeToString(b[:])),
	}
}

// acquire takes the lease once. It returns ErrConsumerTaken (naming the
// holder) if another process holds it, or the Redis error.
func (l *lease) acquire(ctx context.Context) error {
	start := time.Now()
	err := acquireScript.Run(ctx, l.rdb, []string{l.key}, l.token, l.ttl.Milliseconds()).Err()
	if err != nil && !errors.Is(err, redis.Nil) {
		l.set(time.Time{}, false, err)
		return err
	}
	if err != nil { // nil: the key is held
		holder, _ := l.rdb.Get(ctx, l.key).Result()
		l.set(time.Time{}, true, nil)
		return fmt.Errorf("%w: %s held by %q (expires within %v of its holder's death)", ErrConsumerTaken, l.key, holder, l.ttl)
	}
	l.set(start.Add(l.ttl), false, nil)
	return nil
}

// refresh extends (or re-takes) the lease.
func (l *lease) refresh(ctx context.Context) {
	start := time.Now()
	n, err := refreshScript.Run(ctx, l.rdb, []string{l.key}, l.token, l.ttl.Milliseconds()).Int()
	switch {
	case err != nil:
		l.set(time.Time{}, false, err)
		if l.onErr != nil {
			l.onErr(err)
		}
	case n == 1:
		l.set(start.Add(l.ttl), false, nil)
	default:
		l.set(time.Time{}, true, nil)
	}
}

func (l *lease) set(until time.Time, lost bool, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !until.IsZero() {
		l.until = until
	}
	l.lost, l.err = lost, err
	if lost {
		l.until = time.Time{}
	}
}

// held reports whether the lease is ours now; if not, why.
func (l *lease) held() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.lost:
		return fmt.Errorf("%w: %s is held by another process", ErrLeaseLost, l.key)
	case time.Now().Before(l.until):
		return nil
	case l.err != nil:
		return fmt.Errorf("%w: %s: %v", ErrLeaseLost, l.key, l.err)
	}
	return fmt.Errorf("%w: %s not held", ErrLeaseLost, l.key)
}

func (l *lease) release(ctx context.Context) error {
	if err := releaseScript.Run(ctx, l.rdb, []string{l.key}, l.token).Err(); err != nil {
		return fmt.Errorf("feed: release lease %s: %w", l.key, err)
	}
	return nil
}

// keep refreshes the lease every TTL/3 until stop is closed.
func (l *lease) keep(stop <-chan struct{}) {
	t := time.NewTicker(l.ttl / 3)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			ctx, cancel := context.WithTimeout(context.Background(), l.ttl/3)
			l.refresh(ctx)
			cancel()
		}
	}
}
