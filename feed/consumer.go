package feed

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/internal/backoff"
	"github.com/codemojex/feed/internal/logsample"
)

// Consumer reads a set of streams in one consumer group by the reader law
// (docs/reader-law.md). One goroutine runs the loop; another keeps the lease.
type Consumer struct {
	cfg    Config
	rdb    redis.UniversalClient
	log    *slog.Logger
	handle BatchHandler
	lease  *lease
	stats  counters
	args   argsCache // of non-blocking reads

	stop     chan struct{} // closed by Close: stop reading
	stopOnce sync.Once
	ctx      context.Context // cancelled by Close: loop calls end
	cancel   context.CancelFunc
	hctx     context.Context // handler context, cancelled ShutdownGrace after Close
	hcancel  context.CancelFunc
	wg       sync.WaitGroup

	// The lease keeper runs until the loop returns, or until Close gives
	// up on a loop stuck in a call: it refreshes a free key too, so a
	// keeper outliving Close took the released name back, and a
	// replacement under it was refused (TestStuckCloseFreesLease).
	leaseStop     chan struct{}
	leaseStopOnce sync.Once
	keeperDone    chan struct{}
	// abandoned is set when Close gave up on the loop: the keep-alive of
	// the entries in hand stops, so peers can claim them
	// (TestStuckCloseFreesEntries).
	abandoned atomic.Bool

	mu        sync.Mutex // guards the readiness fields
	running   bool
	lastOK    time.Time
	answers   uint64 // Redis calls of the loop that were answered (ok)
	lastErr   error
	refusal   error     // Redis's last error reply, for Ready when nothing has answered since
	refusedAt time.Time // when refusal came
	inHandler bool      // a slow handler is not a silent Redis
	working   []string  // the read set's keys, published by prune
	pausedErr error     // the consumer holds entries the infrastructure failed
	pausedAt  time.Time
	notes     []Note
	sample    *logsample.Sampler

	// Owned by the loop goroutine.
	streams map[string]*streamState // every known stream
	work    workSet                 // the read set: streams with a reason to be read
	found   int                     // games discovered since the last log line
	// deleted holds the registry games forgotten because their stream
	// was deleted, by the score they had then: the beat or the sweep
	// that lists them again at that score must not take them for new
	// games (whose door is XGROUP CREATE … MKSTREAM).
	deleted map[string]deletedGame
	// The work set's generation whose keys are in working, and the
	// earliest time prune publishes them again.
	workingGen  uint64
	nextWorking time.Time
	nextPrune   time.Time // the earliest time prune walks the work set again

	// Catch-up across turns (catchup.go): some stream is still behind, the
	// one being caught up (finished first), and what the whole catch-up
	// has re-read so far (one log line at its end).
	catching                   bool
	catchCur                   *streamState
	catchStreams, catchEntries int

	sweep       sweepState
	pollRound   int    // the poll's current round over the known streams (pollNext)
	hotSet      hotSet // the hot read's streams, kept across turns
	perSlot     bool   // group multi-key reads per hash slot (a cluster)
	nextWake    time.Time
	lastWake    time.Time // the last beat that answered (wake)
	nextPoll    time.Time
	nextFind    time.Time
	nextClaim   time.Time
	nextCensus  time.Time
	nextHotLook time.Time           // startHotLook
	hotLook     censusRound         // under way, a pipeline a turn
	workCensus  censusRound         // under way, after hotLook
	gatherUntil time.Time           // no blocking read before this (Linger)
	unacked     map[string]*unacked // acks that failed, retried each turn
	loopBackoff backoff.Backoff
	leaseIdle   time.Time // since when the loop reads nothing for want of its lease
	// The streams set aside this turn, their last error, and whether the
	// slot map was reloaded for it (setAside, endTurn).
	aside      []*streamState
	asideErr   error
	asideSlots bool
	// The cluster nodes whose PING failed, by address, with their retry
	// (setAsideNode).
	downNodes map[string]*downNode
	pings     pings // of cluster nodes, off the loop goroutine
	asideHeld bool  // streams or nodes were set aside at the turn's probe (blockFor)
	// The hash slots whose keys a migration split (TRYAGAIN), read one
	// stream a command until then (splitSlot).
	splitSlots map[int]time.Time
	// The registry's retry after its node did not answer the beat or the
	// sweep, on a cluster (registryDown).
	registryUntil time.Time
	registryRetry backoff.Backoff

	// No claim before claimHeld: the server's ACL refused one
	// (claimRefused), which waits claimBackoff.
	claimHeld    time.Time
	claimBackoff backoff.Backoff
}

// Open validates cfg, takes the consumer name's lease and starts the loop.
// On a cluster it refuses (ErrConfig) a stream whose dead keys are in
// another hash slot (checkDeadSlot).
// It returns ErrConsumerTaken when another live process holds the name. When
// Redis cannot be reached, Open still succeeds: the loop takes the lease and
// starts reading once Redis answers, and Ready says why it is not ready
// meanwhile. ctx bounds Open's own calls only; the consumer runs until Close.
func Open(ctx context.Context, cfg Config) (*Consumer, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	c := &Consumer{
		cfg:         cfg,
		rdb:         cfg.Client,
		log:         cfg.Logger.With("group", cfg.Group, "consumer", cfg.Consumer),
		handle:      cfg.BatchHandler,
		stop:        make(chan struct{}),
		streams:     map[string]*streamState{},
		work:        newWorkSet(),
		sweep:       sweepState{pass: 1},
		perSlot:     isCluster(cfg.Client),
		unacked:     map[string]*unacked{},
		loopBackoff: backoff.Backoff{Min: 50 * time.Millisecond, Max: 5 * time.Second},
		sample:      logsample.New(cfg.LogEvery),
	}
	if c.handle == nil {
		c.handle = perEntry(cfg.Handler)
	}
	c.claimBackoff = backoff.Backoff{Min: cfg.ClaimEvery, Max: max(cfg.ClaimEvery, claimRefusedMax)}
	if err := c.checkDeadSlots(ctx); err != nil {
		return nil, err
	}
	c.lease = newLease(c.rdb, cfg.Group, cfg.Consumer, cfg.LeaseTTL)
	c.lease.onErr = func(err error) { c.fail("lease", err) }
	if err := c.lease.acquire(ctx); err != nil {
		if errors.Is(err, ErrConsumerTaken) {
			return nil, err
		}
		c.log.Warn("redis unreachable at open; will take the lease when it answers", "err", err)
		c.fail("lease", err)
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.hctx, c.hcancel = context.WithCancel(context.Background())
	c.mu.Lock()
	c.running = true
	c.mu.Unlock()
	metrics.Add(&c.stats)
	c.leaseStop, c.keeperDone = make(chan struct{}), make(chan struct{})
	c.wg.Add(2)
	go func() {
		defer c.wg.Done()
		defer close(c.keeperDone)
		c.lease.keep(c.leaseStop)
	}()
	go func() {
		defer c.wg.Done()
		defer c.stopLease()
		c.run()
	}()
	c.log.Info("consumer started", "lease", c.lease.key)
	return c, nil
}

// closeSlack bounds how long Close waits, beyond ShutdownGrace, for Redis
// calls in flight: a Redis that does not answer must not hold a shutdown
// for go-redis's timeouts and retries.
const closeSlack = 3 * time.Second

// Close stops reading, lets the handler finish what is in hand (for up to
// ShutdownGrace, then its context is cancelled), settles it, releases the
// lease and waits for the goroutines. Work whose handler did not return nil
// stays pending. Close is safe to call more than once.
//
// When Redis does not answer, Close gives up on the calls in flight after
// ShutdownGrace plus a few seconds: a goroutine still inside one then exits
// on its own when the call returns, and can only ack work its handler
// finished. It no longer keeps the lease nor the entries in hand alive: the
// name is free for a replacement, and peers claim the entries after
// MinIdle. A lease that cannot be released is not an error either: it
// expires within LeaseTTL by itself.
func (c *Consumer) Close() error {
	c.stopOnce.Do(func() {
		close(c.stop)
		c.cancel()
		grace := time.AfterFunc(c.cfg.ShutdownGrace, c.hcancel)
		done := make(chan struct{})
		go func() {
			c.wg.Wait()
			// Only once nothing counts any more: a goroutine Close gave
			// up on still counts until it returns.
			metrics.Retire(&c.stats)
			c.ungaugeAll()
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(c.cfg.ShutdownGrace + closeSlack):
			c.log.Warn("consumer closed with Redis calls still in flight; unfinished work stays pending",
				"waited", c.cfg.ShutdownGrace+closeSlack)
			c.abandoned.Store(true)
			c.stopLease()
			// A refresh in flight ends within its own timeout (LeaseTTL/3);
			// the release must come after it, or it could take the key back.
			select {
			case <-c.keeperDone:
			case <-time.After(c.cfg.LeaseTTL/3 + closeSlack):
			}
		}
		grace.Stop()
		c.hcancel()
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := c.lease.release(ctx); err != nil {
			c.log.Warn("lease not released; it expires by itself", "err", err, "ttl", c.cfg.LeaseTTL)
		}
		c.mu.Lock()
		c.running = false
		c.mu.Unlock()
		c.log.Info("consumer stopped")
	})
	return nil
}

// stopLease stops the lease keeper; safe to call more than once.
func (c *Consumer) stopLease() { c.leaseStopOnce.Do(func() { close(c.leaseStop) }) }

// ungaugeAll takes a closed consumer's gauges down with it: its streams'
// pending and lag labels, its read set's sizes and its pause. A process that goes on after a
// Close (the renderer whose store file was deleted serves on until it is
// restarted) would otherwise show the figures of the moment it closed, for
// good. Only once the loop has stopped: it owns streams.
func (c *Consumer) ungaugeAll() {
	for _, st := range c.streams {
		ungauge(st)
	}
	for _, set := range []string{"known", "working", "hot"} {
		mStreams.WithLabelValues(set).Set(0)
	}
	c.mu.Lock()
	paused := c.pausedErr != nil
	c.mu.Unlock()
	if paused {
		mPaused.Set(0)
	}
}

// Ready returns nil while the loop runs, holds the lease and Redis answered
// recently; otherwise an error wrapping ErrNotReady that says why. It is
// meant for /readyz.
func (c *Consumer) Ready() error {
	c.mu.Lock()
	running, lastOK, lastErr, busy, paused := c.running, c.lastOK, c.lastErr, c.inHandler, c.pausedErr
	refusal := c.refusal
	if !c.refusedAt.After(lastOK) {
		refusal = nil
	}
	c.mu.Unlock()
	select {
	case <-c.stop:
		return fmt.Errorf("%w: %w", ErrNotReady, ErrClosed)
	default:
	}
	switch {
	case !running:
		return fmt.Errorf("%w: loop not running", ErrNotReady)
	case paused != nil:
		return fmt.Errorf("%w: paused: %w", ErrNotReady, paused)
	}
	// Once Redis has answered, a lease not held comes before the last
	// Redis error: a lease that cannot be refreshed (on a cluster, the
	// master of the leases' slot down while the others answer) sets that
	// error at every failed refresh, and the loop, reading nothing then,
	// makes no call that clears it. Ready said "redis: context deadline
	// exceeded", and ErrLeaseLost only between the lease's end and the
	// next failed refresh, a third of LeaseTTL at most
	// (TestClusterLeaseMasterDownLogged). The lease's error names the
	// refresh's.
	if err := c.lease.held(); err != nil && !lastOK.IsZero() {
		return fmt.Errorf("%w: %w", ErrNotReady, err)
	}
	switch {
	case lastErr != nil:
		return fmt.Errorf("%w: redis: %w", ErrNotReady, lastErr)
	case lastOK.IsZero() && refusal != nil:
		// A server that answers every call with an error (a wrong
		// password, a database index it has not) is no silent one: Ready
		// said "has not answered yet", the reason only in the logs
		// (TestReadySaysRedisRefuses).
		return fmt.Errorf("%w: redis refuses every call: %w", ErrNotReady, refusal)
	case lastOK.IsZero():
		return fmt.Errorf("%w: redis has not answered yet", ErrNotReady)
	case !busy && time.Since(lastOK) > c.staleAfter() && refusal != nil:
		return fmt.Errorf("%w: redis has not answered for %v; it refuses: %w", ErrNotReady, time.Since(lastOK).Round(time.Millisecond), refusal)
	case !busy && time.Since(lastOK) > c.staleAfter():
		return fmt.Errorf("%w: redis has not answered for %v", ErrNotReady, time.Since(lastOK).Round(time.Millisecond))
	}
	return nil // past the switch Redis has answered, so the lease was looked at above
}

// staleAfter is how long a silent Redis is tolerated: a read blocks for up
// to Block, and a handler may hold the loop for a while.
func (c *Consumer) staleAfter() time.Duration {
	return 2*c.cfg.Block + 5*time.Second
}

// Stats returns a snapshot of the consumer's counters.
func (c *Consumer) Stats() Stats { return c.stats.snapshot() }

func (c *Consumer) setInHandler(b bool) {
	c.mu.Lock()
	c.inHandler = b
	if !b {
		// The clock of silence starts again when the loop takes over.
		c.lastOK = time.Now()
	}
	c.mu.Unlock()
}

// ok records a successful Redis round trip of the loop.
func (c *Consumer) ok() {
	c.mu.Lock()
	c.lastOK, c.lastErr = time.Now(), nil
	c.answers++
	c.mu.Unlock()
}

// answered returns how many Redis calls of the loop were answered so far.
func (c *Consumer) answered() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.answers
}

// fail records a failed loop operation.
func (c *Consumer) fail(op string, err error) {
	c.stats.loopErrors.add(op, 1)
	c.mu.Lock()
	defer c.mu.Unlock()
	if serverError(err) || aclRefused(err) {
		// Redis answered, with a refusal: Ready names it when nothing
		// else answers, and a grant missing on one path (XAUTOCLAIM)
		// does not make a consumer that reads and acks unready.
		c.refusal, c.refusedAt = err, time.Now()
		return
	}
	c.lastErr = err
}

func (c *Consumer) stopping() bool {
	select {
	case <-c.stop:
		return true
	default:
		return false
	}
}

// sleep waits for d or until Close; it reports whether the loop goes on.
func (c *Consumer) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-c.stop:
		return false
	case <-t.C:
		return true
	}
}

// perEntry adapts a Handler to a BatchHandler: entries are handled one by
// one, and once the handler context is cancelled (Close's grace is over) the
// rest of the batch is left pending unhandled.
func perEntry(h Handler) BatchHandler {
	return func(ctx context.Context, ms []Message) []error {
		errs := make([]error, len(ms))
		for i, m := range ms {
			if err := ctx.Err(); err != nil {
				errs[i] = fmt.Errorf("%w: %w", errNotHandled, err)
				continue
			}
			errs[i] = safeCall(func() error { return h(ctx, m) })
		}
		return errs
	}
}

// errNotHandled is perEntry's verdict for an entry it never handed to the
// handler (Close's grace was over): it stays pending, its delivery does not
// count toward poison.
var errNotHandled = errors.New("feed: not handled")

// safeCall runs f, turning a panic into an error wrapping ErrPanic.
func safeCall(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %v", ErrPanic, r)
		}
	}()
	return f()
}
