package feed

import (
	"context"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/internal/untrusted"
)

// Paths an entry can come by; they label metrics.
const (
	pathNew     = "new"
	pathPending = "pending"
	pathClaim   = "claim"
)

// Caps of one turn's reads (docs/reader-law.md, "The read set").
const (
	// drainKeys caps the due streams read (without blocking) in one turn,
	// so that a catch-up over many games goes in batches the handler can
	// take, and the registry beat keeps its pace meanwhile.
	drainKeys = 1000
	// blockKeys caps the streams of the blocking read: the most recently
	// active ones. A hot stream beyond it is read when the beat sees its
	// score move, like a quiet one. It is one command's worth (maxKeys):
	// more would split the read into several (groups), which cannot block,
	// and the loop would then poll the hot streams once a beat instead of
	// waking on their entries.
	blockKeys = maxKeys
)

// drain reads, without blocking, the due streams: woken by the registry
// beat, lagging in the census, or whose last read was full. Hot streams go
// first, so that a live game does not wait behind a catch-up. It reports
// whether it read anything.
func (c *Consumer) drain(now time.Time) (bool, error) {
	sts := c.pick(func(st *streamState) bool { return st.due && st.readable() })
	if len(sts) == 0 {
		return false, nil
	}
	sts = hotFirst(sts, now)
	var rest []*streamState
	if len(sts) > drainKeys {
		sts, rest = sts[:drainKeys], sts[drainKeys:]
	}
	return c.readManyThen(sts, rest, now, nil)
}

// hotFirst returns sts with the hot streams first, each part in the order
// it had: a partition, linear, where a stable sort was n log n a turn.
func hotFirst(sts []*streamState, now time.Time) []*streamState {
	out := make([]*streamState, 0, len(sts))
	for _, st := range sts {
		if st.hot(now) {
			out = append(out, st)
		}
	}
	for _, st := range sts {
		if !st.hot(now) {
			out = append(out, st)
		}
	}
	return out
}

// readMany reads ">" without blocking from streams, one XREADGROUP per
// group of keys (per slot on a cluster), all in one pipeline, which a
// cluster client splits per node. A stream whose read came back full stays
// due; the others are read up to date. With Config.Prepare, the due ones
// are read again and prepared ahead while the batch in hand commits, for
// up to aheadFor (see readAhead).
func (c *Consumer) readMany(sts []*streamState, now time.Time) (bool, error) {
	return c.readManyThen(sts, nil, now, nil)
}

// readManyThen is readMany, where the reads ahead also take up to
// drainKeys streams of rest: due streams beyond one read's share, as many
// games with a few entries each are (a backlog spread over streams rather
// than deep in a few). seen, if not nil, is shown the first read's entries
// before they are taken (the poll tells from them which streams it found
// entries on).
func (c *Consumer) readManyThen(sts, rest []*streamState, now time.Time, seen func([]delivery)) (bool, error) {
	gs := c.groups(sts)
	first := c.readKeys(keysOf(gs))
	if seen != nil {
		seen(first.batch)
	}
	batch, firstErr := c.takeRead(gs, first, now)
	if len(batch) == 0 {
		return false, firstErr
	}
	return true, c.chain(sts, rest, batch, firstErr, now)
}

// chain processes batch, a ">" read over sts that failed with firstErr (if
// at all) for some of them. With Config.Prepare, while it commits, the
// streams of sts whose read came back full, topped up from rest to
// drainKeys streams, are read again and prepared ahead, and so on for up
// to aheadFor. It returns the first error.
func (c *Consumer) chain(sts, rest []*streamState, batch []delivery, firstErr error, now time.Time) error {
	var pre *readAhead
	until := now.Add(aheadFor)
	for {
		var next chan *readAhead
		var ngs [][]*streamState
		if c.cfg.Prepare != nil && firstErr == nil && !c.stopping() && time.Now().Before(until) {
			due := dueOf(sts)
			if n := min(drainKeys-len(due), len(rest)); n > 0 {
				due = append(due, dueOf(rest[:n])...)
				rest = rest[n:]
			}
			sts = due
			if len(due) > 0 {
				ngs = c.groups(due)
				keys := keysOf(ngs)
				next = make(chan *readAhead, 1)
				go func() { next <- c.readAhead(keys) }()
			}
		}
		err := c.processPrepared(pathNew, batch, pre)
		if next == nil {
			if err != nil {
				return err
			}
			return firstErr
		}
		// Always taken, so the read-ahead goroutine never outlives this
		// call, and its entries, read into this consumer's pending list,
		// are handled now rather than left for a claim.
		pre = <-next
		var readErr error
		batch, readErr = c.takeRead(ngs, pre, time.Now())
		if err != nil {
			if len(batch) > 0 {
				_ = c.processPrepared(pathNew, batch, pre)
			}
			return err
		}
		firstErr = readErr
		if len(batch) == 0 {
			return firstErr
		}
	}
}

// takeRead is the loop goroutine's side of a read over gs: each group's
// error goes to readFailed, each stream's state is updated (collect), and
// the entries read come back in batch. It returns the first error; a
// group whose node did not answer is set aside, not an error.
func (c *Consumer) takeRead(gs [][]*streamState, r *readAhead, now time.Time) ([]delivery, error) {
	var firstErr error
	answered := false
	for i, g := range gs {
		if err := r.errs[i]; err != nil {
			answered = answered || serverError(err)
			if err := c.readFailed("read", g, err); err != nil && firstErr == nil {
				firstErr = err
			}
			continue
		}
		answered = true
		c.readDone(g, r.res[i], now)
	}
	if firstErr == nil && answered {
		c.ok()
	}
	return r.batch, firstErr
}

// collect appends a ">" read's entries to batch and updates the streams
// read (readDone).
func (c *Consumer) collect(batch []delivery, sts []*streamState, res []redis.XStream, now time.Time) []delivery {
	c.readDone(sts, res, now)
	keys := make([]string, len(sts))
	for i, st := range sts {
		keys[i] = st.key
	}
	return appendEntries(batch, keys, res)
}

// readDone updates the streams of a ">" read: a full read leaves the stream
// due, in the read set, a read that delivered keeps a hot stream hot. A
// full read by the poll, of a stream out of the read set, left it due
// outside it until 5 Dec 2026: the drain picks due streams from the read
// set only and the poll skips due ones, so the rest of its backlog waited
// for the sweep, minutes (TestPollBacklogPastCountFollows).
func (c *Consumer) readDone(sts []*streamState, res []redis.XStream, now time.Time) {
	got := make(map[string]int, len(res))
	for _, s := range res {
		got[s.Stream] = len(s.Messages)
	}
	for _, st := range sts {
		n := got[st.key]
		st.downBackoff.Reset()
		st.noGroup = false
		if st.due = int64(n) >= c.cfg.Count; st.due {
			c.track(st)
		}
		if n > 0 && now.Before(st.hotUntil) {
			st.hotUntil = now.Add(c.cfg.ActiveWindow)
		}
	}
}

// appendEntries appends a ">" read's entries to batch, stream by stream in
// the order of keys, and observes each one's read lag.
func appendEntries(batch []delivery, keys []string, res []redis.XStream) []delivery {
	now := time.Now().UnixMilli()
	got := make(map[string][]redis.XMessage, len(res))
	n := 0
	for _, s := range res {
		got[s.Stream] = s.Messages
		n += len(s.Messages)
	}
	batch = slices.Grow(batch, n)
	for _, k := range keys {
		for _, x := range got[k] {
			batch = append(batch, delivery{stream: k, x: x, attempts: 1})
			observeReadLag(now, x.ID)
		}
	}
	return batch
}

// observeReadLag records how long ago, at nowMs, the entry at stream
// position id was added: its id's first part is the server's clock at XADD
// (for ids the server made). Clock skew between hosts goes into it; a
// reading below zero counts as zero, as does an id a producer chose past
// 2^63 ms, which as an int64 would be negative, read 292 million years
// late (TestReadLagForgedPosition).
func observeReadLag(nowMs int64, id string) {
	ms, _ := splitID(id)
	lag := int64(0)
	if ms < uint64(max(nowMs, 0)) {
		lag = nowMs - int64(ms)
	}
	mReadLag.Observe(float64(lag) / 1000)
}

// readHot waits for new entries on the hot streams: one blocking
// XREADGROUP over them (the blockKeys most recently active), for up to
// wait. On a cluster, where one read cannot span slots, it blocks only
// when the hot streams share one slot; otherwise it reads them without
// blocking until wait is over, the most recently active every hot tick
// and the others less often (readSlots). With nothing hot it just waits.
func (c *Consumer) readHot(now time.Time, wait time.Duration) error {
	sts, live := c.hotReadSet(now)
	if len(sts) == 0 {
		if c.cfg.Registry == "" && c.work.len() == 0 {
			// Nothing to read and no beat: keep readiness honest.
			ctx, cancel := context.WithTimeout(c.ctx, 2*time.Second)
			err := c.rdb.Ping(ctx).Err()
			cancel()
			if err != nil {
				if c.stopping() {
					return nil
				}
				c.fail("ping", err)
				return err
			}
			c.ok()
		}
		c.sleep(wait)
		return nil
	}
	if gs := c.groups(sts); len(gs) > 1 {
		return c.readSlots(sts, live, len(gs), wait)
	}
	// After a small batch the read waits out the linger first, so that
	// the entries of those milliseconds come in this one read and one
	// commit; the first entry after a quiet spell goes at once.
	if d := time.Until(c.gatherUntil); d > 0 {
		if !c.sleep(d) {
			return nil
		}
		c.stats.lingered.Add(1)
		wait = max(wait-d, time.Millisecond)
	}
	// go-redis waits BLOCK plus 10s for a blocking reply; a deadline just
	// past BLOCK (honoured with ContextTimeoutEnabled) lets a silent Redis
	// fail the turn, and a Close, in about a second instead.
	ctx, cancel := context.WithTimeout(c.ctx, wait+time.Second)
	defer cancel()
	res, err := c.rdb.XReadGroup(ctx, &redis.XReadGroupArgs{
		Group: c.cfg.Group, Consumer: c.cfg.Consumer,
		Streams: streamsArgs(sts, func(*streamState) string { return ">" }),
		Count:   c.cfg.Count, Block: max(wait, time.Millisecond),
	}).Result()
	if err != nil && !isNil(err) {
		if c.stopping() {
			return nil
		}
		if errCode(err) == "UNBLOCKED" {
			// The server ended the blocking read (one of its streams deleted,
			// a graceful failover or a slot migration): its node answered, so
			// the streams are read again at the next turn, the slot map
			// reloaded. Set aside, the other hot games of the read waited
			// about 116-124 ms after a stream was deleted under it
			// (TestUnblockedOthersReadOn). A deleted stream meets NOGROUP
			// there and goes through the door; a moved slot, MOVED.
			c.stats.loopErrors.add("read", 1)
			c.ok() // the node answered: Ready stays
			c.clusterRefresh(err)
			c.log.Debug("blocking read unblocked by the server; read again", untrusted.Err(err))
			return nil
		}
		return c.readFailed("read", sts, err)
	}
	c.ok()
	batch := c.collect(nil, sts, res, time.Now())
	if len(batch) == 0 {
		return nil
	}
	small := len(dueOf(sts)) == 0
	// A backlog found by the blocking read is read ahead from here.
	err = c.chain(sts, nil, batch, nil, time.Now())
	if small && c.cfg.Linger > 0 {
		c.gatherUntil = time.Now().Add(c.cfg.Linger)
	}
	return err
}
