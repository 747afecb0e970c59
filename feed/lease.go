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

	"github.com/codemojex/feed/internal/event"
)

// A lease makes a consumer name held by one live process at a time: SET NX
// PX with a token of this process, refreshed every TTL/3 by a script that
// only extends its own token. A crashed holder's lease expires within TTL.
type lease struct {
	rdb   redis.UniversalClient
	key   string // event.LeaseKey(group, name)
	index string // event.LeasesKey(group): the group's index of leases
	name  string // the consumer name, its member in index
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
// few dozen bytes, and so is the name's member in the index of leases.
//
// Each script names one key. The lease and the index share the {GROUP}
// hash tag, but a script naming both is refused with TRYAGAIN whenever the
// slot is migrating and either key is missing on the node asked (a
// fresh group's index, a lease not taken yet, a lease that lapsed), not
// only while the two keys are split between the masters: a renderer
// started during the migration of its group's slot (redis-cli --cluster
// reshard) held no lease and read nothing until the migration ended, and
// said "redis unreachable at open" (TestClusterLeaseTakenDuringSlotMigration).
// A key alone is sent on to its node (ASK), which serves it. The lease is
// the truth; the index is written next to it, and when that write fails
// the next refresh writes it again.
const leaseScriptFlags = "#!lua flags=allow-oom\n"

// indexScript scores the holder's name (ARGV[2]) in the group's index of
// leases (KEYS[1], event.LeasesKey) with its lease's expiry (now + ARGV[1]
// ms), so that the status lists the live renderers from the index instead
// of a SCAN of the whole keyspace (liveLeases). The index expires no sooner
// than the lease just written: a group whose renderers are all gone leaves
// nothing behind. It first drops the names whose lease expired (a holder
// killed), so the index stays as small as the group. now is Redis's clock
// in ms (TIME): the lease's PX runs on that clock, not on the caller's.
var indexScript = redis.NewScript(leaseScriptFlags + `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
redis.call('ZADD', KEYS[1], now + ttl, ARGV[2])
if redis.call('PTTL', KEYS[1]) < ttl then
  redis.call('PEXPIRE', KEYS[1], ttl)
end
return 1
`)

// acquireScript is SET NX PX: OK, or nil if the key is held. Only the
// process that took the key indexes its name (index). A key that holds
// this take's own token is taken again (its expiry renewed): Redis ran an
// earlier send of this very take whose reply the client never read (a
// read that timed out while Redis was stopped, then go-redis's retry).
// Until 7 Dec 2026 that read as held by another, and a renderer refused
// to start, its name "held by" itself (TestLeaseTakeRetriedIsOwn).
var acquireScript = redis.NewScript(leaseScriptFlags + `
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return redis.status_reply('OK')
end
return redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2])
`)

// refreshScript extends the lease if it is ours, takes it if nobody holds it
// (Redis restarted without persistence), and reports 0 if another holds it;
// when it holds the lease its name is indexed with the new expiry (index).
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

// releaseScript deletes the lease if it is ours; release then removes its
// name from the index: the status stops listing a renderer that closed at
// once, not when its expiry passes.
var releaseScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
`)

func newLease(rdb redis.UniversalClient, group, name string, ttl time.Duration) *lease {
	host, _ := os.Hostname()
	var b [6]byte
	_, _ = rand.Read(b[:])
	return &lease{
		rdb: rdb, key: event.LeaseKey(group, name), index: event.LeasesKey(group), name: name, ttl: ttl,
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
	l.indexName(ctx)
	return nil
}

// indexName scores the name in the group's index of leases (indexScript).
// A failure is left to the next refresh: the lease, not the index, says
// who holds the name.
func (l *lease) indexName(ctx context.Context) {
	_ = indexScript.Run(ctx, l.rdb, []string{l.index}, l.ttl.Milliseconds(), l.name).Err()
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
		l.indexName(ctx)
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
	n, err := releaseScript.Run(ctx, l.rdb, []string{l.key}, l.token).Int()
	if err != nil {
		return fmt.Errorf("feed: release lease %s: %w", l.key, err)
	}
	if n == 1 {
		if err := l.rdb.ZRem(ctx, l.index, l.name).Err(); err != nil {
			return fmt.Errorf("feed: release lease %s: index %s: %w", l.key, l.index, err)
		}
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
