package feed

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/internal/untrusted"
)

// Dead-letter fields added to the original fields of an entry.
const (
	DeadReason   = "dead_reason"
	DeadAttempts = "dead_attempts"
	DeadConsumer = "dead_consumer"
	DeadStreamID = "dead_stream_id"
	DeadAt       = "dead_at"
)

// maxDeadFields caps the original fields copied into a dead letter, so that
// an entry of thousands of tiny fields cannot overflow the script's stack
// (deadFields's byte budget usually stops sooner).
const maxDeadFields = 2000

// settlement is what a batch's verdicts ask of Redis.
type settlement struct {
	acks    map[string][]string // stream → positions, handler said nil
	trimmed map[string][]string // stream → positions of deleted entries
	dead    []delivery
	// unhandled are entries the handler never got (errNotHandled): their
	// delivery is taken back (forgive).
	unhandled []delivery
	// failed are entries left pending by a failure that counts toward
	// poison (judge's default verdict).
	failed []delivery
}

func (s *settlement) ack(stream, pos string, trimmed bool) {
	m := &s.acks
	if trimmed {
		m = &s.trimmed
	}
	if *m == nil {
		*m = map[string][]string{}
	}
	(*m)[stream] = append((*m)[stream], pos)
}

// ackCmd is one queued XACK of a stream's positions.
type ackCmd struct {
	stream  string
	ids     []string
	cmd     *redis.IntCmd
	handled bool // a handler's nil verdict, not a trimmed entry
}

// settle XACKs (batched per stream) and dead-letters, in one pipeline. Its
// context is not the loop's: Close cancels that, and what is in hand must
// still be settled. Failed acks are kept and retried next turn.
func (c *Consumer) settle(s *settlement) error {
	if len(s.unhandled) > 0 {
		c.forgive(s.unhandled)
	}
	if len(s.acks) == 0 && len(s.trimmed) == 0 && len(s.dead) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	p := c.pipes()
	at := time.Now().UTC().Format(time.RFC3339Nano)
	acks := c.queueAcks(ctx, p, s)
	deads := c.queueDeads(ctx, p, s.dead, at)
	p.exec(ctx)
	c.deadBySteps(ctx, s.dead, deads, at)
	ackErr := c.checkAcks(acks)
	deadErr := c.checkDeads(s.dead, deads)
	connErr := deadErr
	if connErr == nil {
		connErr = ackErr
	}
	if connErr == nil {
		c.ok()
	}
	return connErr
}

// queueAcks queues on p one XACK per stream of the settlement's handled
// and trimmed entries.
func (c *Consumer) queueAcks(ctx context.Context, p *nodePipes, s *settlement) []ackCmd {
	var acks []ackCmd
	for i, m := range []map[string][]string{s.acks, s.trimmed} {
		for stream, ids := range m {
			acks = append(acks, ackCmd{stream, ids, p.of(stream).XAck(ctx, stream, c.cfg.Group, ids...), i == 0})
		}
	}
	return acks
}

// unacked is a stream's acks that failed: the positions, and how many of
// them a handler settled (the others were deleted while pending: acked so
// that they never come back, but not counted in Acked).
type unacked struct {
	ids     []string
	handled int64
}

// checkAcks counts the acks that went through and keeps the failed ones
// for retryAcks. A stream whose node did not answer is set aside; it
// returns the last connection error of a stream it could not set aside.
//
// Acked counts what XACK replied it acknowledged, not the ids sent: an id
// someone else acked meanwhile (a peer that claimed the entry and settled
// it) is theirs to count (TestAckedCountsWhatXackAcked).
func (c *Consumer) checkAcks(acks []ackCmd) error {
	var connErr error
	var nAcked int64
	for _, a := range acks {
		err := a.cmd.Err()
		if err == nil {
			if a.handled {
				nAcked += min(a.cmd.Val(), int64(len(a.ids)))
			}
			continue
		}
		c.fail("ack", err)
		c.log.Warn("ack failed; will retry", "stream", a.stream, "count", len(a.ids), "err", err)
		u := c.unacked[a.stream]
		if u == nil {
			u = &unacked{}
			c.unacked[a.stream] = u
		}
		u.ids = append(u.ids, a.ids...)
		if a.handled {
			u.handled += int64(len(a.ids))
		}
		if !serverError(err) && c.setAsideKey(a.stream, err) != nil {
			connErr = err
		}
	}
	c.stats.acked.Add(nAcked)
	return connErr
}

// queueDeads queues on p one deadScript call per entry to dead-letter:
// its original fields, bounded (deadFields), and the Dead* fields.
func (c *Consumer) queueDeads(ctx context.Context, p *nodePipes, dead []delivery, at string) []*redis.Cmd {
	cmds := make([]*redis.Cmd, len(dead))
	for i, d := range dead {
		keys, args := c.deadArgs(d, at)
		cmds[i] = deadScript.Eval(ctx, p.of(d.stream), keys, args...)
	}
	return cmds
}

// checkDeads counts and logs the dead letters written. A failed one is
// left pending: it comes back by XAUTOCLAIM and is dead-lettered then (its
// attempts are past the threshold). So is one whose position another
// writer claimed (errDeadClaimed), not a failure. It returns the last
// connection error of a stream it could not set aside (as checkAcks).
func (c *Consumer) checkDeads(dead []delivery, cmds []*redis.Cmd) error {
	var connErr error
	for i, d := range dead {
		err := cmds[i].Err()
		if isNil(err) {
			c.log.Debug("entry to dead-letter was already settled or claimed elsewhere", c.entryAttrs(d)...)
			continue
		}
		if errors.Is(err, errDeadClaimed) {
			c.markPending(d.stream)
			c.log.Debug("entry's dead letter is under way elsewhere; entry left pending", c.entryAttrs(d)...)
			continue
		}
		if err != nil {
			c.fail("dead", err)
			c.markPending(d.stream)
			// Sampled as the letters written are: every entry of a flood
			// fails alike, and comes back to fail again at each claim.
			if ok, skipped := c.sample.Allow("dead failed"); ok {
				c.log.Error("dead-letter failed; entry left pending", c.entryAttrs(d, untrusted.Attr("reason", d.reason),
					untrusted.Err(err), "similar_unlogged", skipped)...)
			}
			if !serverError(err) && c.setAsideKey(d.stream, err) != nil {
				connErr = err
			}
			continue
		}
		if id, _ := cmds[i].Val().(string); id == "" {
			// Another group, a replay or an earlier settle wrote this
			// position's dead letter: acked, nothing written.
			c.stats.deadDuplicates.Add(1)
			continue
		}
		c.stats.dead.add(d.label, 1)
		if ok, skipped := c.sample.Allow("dead " + d.label); ok {
			c.log.Warn("entry dead-lettered", c.entryAttrs(d, untrusted.Attr("reason", d.reason),
				"dead_key", c.cfg.DeadKey(d.stream), "dead_id", cmds[i].Val(), "similar_unlogged", skipped)...)
		}
	}
	return connErr
}

// retryAcks re-sends acks that failed (Redis was unreachable); until then
// the entries are pending and would come back by XAUTOCLAIM. The acks of
// a stream set aside wait for its retry: the others go now.
//
// Once a retry answers, Acked counts the handled entries among its ids,
// not XACK's reply: the failed attempt may have been applied before its
// reply was lost (a timeout), and the retry then acknowledges nothing,
// although these entries were handled and are acked. The deleted
// entries' ids are never counted; the retry once counted every id it
// sent (TestAckedCountsHandledOnRetry).
func (c *Consumer) retryAcks() error {
	if len(c.unacked) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	p := c.pipes()
	cmds := map[string]*redis.IntCmd{}
	now := time.Now()
	for stream, u := range c.unacked {
		if st := c.streams[stream]; st == nil || !st.down(now) {
			cmds[stream] = p.of(stream).XAck(ctx, stream, c.cfg.Group, u.ids...)
		}
	}
	if len(cmds) == 0 {
		return nil
	}
	p.exec(ctx)
	var connErr error
	answered := false
	for stream, cmd := range cmds {
		err := cmd.Err()
		if err == nil || serverError(err) {
			// A reply error (NOGROUP) means there is nothing left to ack.
			if err == nil {
				c.stats.acked.Add(c.unacked[stream].handled)
			}
			delete(c.unacked, stream)
			answered = true
			continue
		}
		c.fail("ack", err)
		if c.setAsideKey(stream, err) != nil {
			connErr = err
		}
	}
	if answered {
		c.ok()
	}
	return connErr
}

// keptForAcks reports whether st, no longer listed (by the static list or
// the registry), must still be kept: it has failed acks in hand. Their
// retry needs its state (set aside while its node does not answer, and
// sent once the probe has its answer); forgotten, the retry went out every
// turn whatever its node, and a connection error of an unknown stream
// failed the turn at its second step, so while that one master of a
// cluster was down no game was read (TestClusterForgottenStreamAckKept).
// It is forgotten once they are sent.
func (c *Consumer) keptForAcks(st *streamState) bool { return c.unacked[st.key] != nil }

// setAsideKey is setAside for the stream of key, which returns err if the
// stream is no longer known.
func (c *Consumer) setAsideKey(key string, err error) error {
	if st := c.streams[key]; st != nil {
		return c.setAside([]*streamState{st}, err)
	}
	return err
}

// keepAliveScript refreshes the idle time of the given entries that are
// still this consumer's (XCLAIM to self, min-idle 0, JUSTID: the delivery
// count is not incremented), so that a peer's XAUTOCLAIM does not take work
// in progress. Entries a peer already took are left with it.
var keepAliveScript = redis.NewScript(`
local mine = {}
for i = 3, #ARGV do
  local p = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[i], ARGV[i], 1)
  if #p == 1 and p[1][2] == ARGV[2] then mine[#mine + 1] = ARGV[i] end
end
local n = #mine
if n == 0 then return 0 end
mine[n + 1] = 'JUSTID'
redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[2], 0, unpack(mine))
return n
`)

// keepAlive refreshes the idle time of the entries in hand every
// MinIdle/2 while the handler runs, and returns the function that stops it
// (and waits for a refresh in flight). Nothing runs unless the handler
// outlasts the first period: a timer, not a goroutine per batch. At a low
// rate a batch commits in a millisecond or two, and starting a goroutine
// for each, then waiting for it to see the stop, held the loop up to 7 ms
// on a busy host (docs/benchmarks-journal.md, "The keep-alive as a timer").
func (c *Consumer) keepAlive(batch []delivery) (stop func()) {
	every := c.cfg.MinIdle / 2
	start := time.Now()
	var (
		mu       sync.Mutex
		stopped  bool
		t        *time.Timer
		running  sync.WaitGroup
		byStream map[string][]any // built on the first refresh; only refreshes touch it
	)
	refresh := func() {
		mu.Lock()
		if stopped || c.abandoned.Load() {
			mu.Unlock()
			return
		}
		running.Add(1)
		mu.Unlock()
		defer running.Done()
		if byStream == nil {
			byStream = map[string][]any{}
			for _, d := range batch {
				if byStream[d.stream] == nil {
					byStream[d.stream] = []any{c.cfg.Group, c.cfg.Consumer}
				}
				byStream[d.stream] = append(byStream[d.stream], d.x.ID)
			}
		}
		c.refreshInHand(byStream, len(batch), time.Since(start), every)
		mu.Lock()
		if !stopped {
			t.Reset(every) // the next refresh runs after this one ends
		}
		mu.Unlock()
	}
	mu.Lock()
	t = time.AfterFunc(every, refresh)
	mu.Unlock()
	return func() {
		mu.Lock()
		stopped = true
		t.Stop()
		mu.Unlock()
		running.Wait()
	}
}

// refreshInHand runs one refresh of keepAlive: the entries still this
// consumer's, per stream, get their idle time reset.
func (c *Consumer) refreshInHand(byStream map[string][]any, entries int, took, every time.Duration) {
	if took > c.cfg.MinIdle && c.Paused() == nil {
		// Kept alive, the entries cannot go to a peer: a hung handler
		// would hold them forever, so say so while it runs.
		c.log.Warn("handler still running; its entries are kept from peers",
			"running_for", took.Round(time.Millisecond), "entries", entries)
	}
	ctx, cancel := context.WithTimeout(context.Background(), every)
	defer cancel()
	for stream, args := range byStream {
		n, err := keepAliveScript.Run(ctx, c.rdb, []string{stream}, args...).Int64()
		if err != nil {
			c.fail("keepalive", err)
			// Sampled as the other per-stream failures are: in an outage
			// every stream of the batch fails at every refresh, for as
			// long as the handler runs (TestKeepAliveFailuresLogSampled).
			if ok, skipped := c.sample.Allow("keepalive failed"); ok {
				c.log.Warn("refreshing entries in hand failed", "stream", stream, "err", err,
					"similar_unlogged", skipped)
			}
			continue
		}
		c.ok()
		c.stats.keptAlive.Add(n)
	}
}
