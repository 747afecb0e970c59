package feed

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/internal/untrusted"
)

// delivery is one entry in hand.
type delivery struct {
	stream   string
	x        redis.XMessage
	attempts int64 // the server's delivery count
	msg      Message
	reason   string // dead-letter reason, when it goes there
	label    string // dead metric label
	err      error  // an Unavailable verdict, while held
	decoded  bool   // msg and decErr hold Decode's result (read ahead)
	decErr   error
}

// process handles and settles one batch that came by path. It returns only
// connection errors; every entry gets a verdict or stays pending.
func (c *Consumer) process(path string, batch []delivery) error {
	return c.processPrepared(path, batch, nil)
}

// processPrepared is process with the batch, when pre is not nil, already
// decoded and prepared by a read ahead (see readAhead).
func (c *Consumer) processPrepared(path string, batch []delivery, pre *readAhead) error {
	var s settlement
	// The batch is this call's own (callers hand it over), so it is
	// filtered in place: a backlog's batch is thousands of entries, and
	// copying it twice showed in allocation profiles (docs/benchmarks-journal.md,
	// "Per-entry allocation").
	//
	// Trimmed while pending: the entry is gone, only its id is left. Ack it
	// so it never comes back; nothing can be handled.
	live := batch[:0]
	for _, d := range batch {
		if d.x.Values == nil {
			s.ack(d.stream, d.x.ID, true)
			continue
		}
		live = append(live, d)
	}
	if n := len(batch) - len(live); n > 0 {
		c.stats.trimmed.add(path, int64(n))
		c.log.Info("pending entries were deleted from the stream; acknowledged", "path", path, "count", n)
	}
	// A read ahead that waited past MinIdle/4 for the batch before it to
	// commit is checked as a claim is: a live peer may have claimed some
	// of its entries meanwhile (delivery count 2, and theirs now), which
	// are then left to it (TestReadAheadPastMinIdle).
	if (path != pathNew || pre.stale(c.cfg.MinIdle)) && len(live) > 0 {
		var err error
		if live, err = c.withAttempts(live); err != nil {
			return err
		}
	}
	c.stats.delivered.add(path, int64(len(live)))

	again := c.reread(path, live) // before todo reuses live's array
	todo := live[:0]
	for _, d := range live {
		m, err := d.msg, d.decErr
		if !d.decoded {
			m, err = Decode(d.stream, d.x)
		}
		m.Attempts, m.Group = d.attempts, c.cfg.Group
		d.msg = m
		if err != nil {
			d.reason, d.label = err.Error(), "malformed"
			c.stats.malformed.Add(1)
			s.dead = append(s.dead, d)
			continue
		}
		todo = append(todo, d)
	}
	if again && len(todo) > 0 {
		var err error
		if todo, err = c.skipDead(path, todo, &s); err != nil {
			return err
		}
	}
	if path != pathNew && len(todo) > 0 {
		var err error
		if todo, err = c.skipClaimed(todo, &s); err != nil {
			return err
		}
	}
	// Counted only after the looks at the dead positions: an entry whose
	// letter is under way (claimed) or written comes back to be settled
	// as such, however often it was delivered meanwhile.
	todo = c.withoutOverPoison(todo, &s)
	var held []delivery
	if len(todo) > 0 {
		held = c.judge(todo, c.callCommit(todo, pre.commitFor(todo)), &s)
	}
	if err := c.settle(&s); err != nil {
		return err
	}
	for stream, ids := range s.trimmed {
		c.settleDeletedClaims(stream, ids)
	}
	if len(held) > 0 {
		_, err := c.hold(held, true)
		return err
	}
	return nil
}

// judge turns the handler's verdicts into acks and dead letters in s, and
// returns the entries whose verdict was Unavailable: those are held and
// retried in hand (see hold), never counted toward poison.
func (c *Consumer) judge(todo []delivery, verdicts []error, s *settlement) (held []delivery) {
	for i, d := range todo {
		err := verdicts[i]
		var pe *poisonError
		switch {
		case err == nil:
			s.ack(d.stream, d.x.ID, false)
		case errors.Is(err, ErrUnavailable):
			d.err = err
			held = append(held, d)
		case errors.Is(err, errNotHandled):
			// Never handed to the handler: left pending, and its
			// delivery taken back (settle), so it never counts.
			c.markPending(d.stream)
			s.unhandled = append(s.unhandled, d)
		case errors.As(err, &pe):
			d.reason, d.label = pe.label+": "+err.Error(), pe.label
			s.dead = append(s.dead, d)
		case errors.Is(err, ErrPoison):
			d.reason, d.label = "poison: "+err.Error(), "poison"
			s.dead = append(s.dead, d)
		case d.attempts >= c.cfg.PoisonAfter:
			d.reason, d.label = fmt.Sprintf("failed %d times: %v", d.attempts, err), "attempts"
			s.dead = append(s.dead, d)
		default:
			if errors.Is(err, ErrPanic) {
				c.stats.panics.Add(1)
			}
			c.stats.failed.Add(1)
			c.markPending(d.stream)
			s.failed = append(s.failed, d)
			if ok, skipped := c.sample.Allow("failed"); ok {
				c.log.Warn("handler failed; entry left pending", c.entryAttrs(d, untrusted.Err(err),
					"retry_after", c.cfg.MinIdle, "similar_unlogged", skipped)...)
			}
		}
	}
	return held
}

func (c *Consumer) entryAttrs(d delivery, more ...any) []any {
	return append([]any{untrusted.Attr("stream", d.stream), untrusted.Attr("game", gameOf(d.stream)),
		untrusted.Attr("evt_id", d.msg.ID), "pos", d.x.ID, "attempts", d.attempts}, more...)
}

// withAttempts fills each entry's delivery count from XPENDING (extended
// form, one call per stream of the batch) and drops the entries that are no
// longer in this consumer's pending list (a peer took them meanwhile).
//
// Each call has a deadline of its own. One deadline for the whole batch
// (until 7 Dec 2026) was spent by a batch of many streams over a slow
// network (a claim after a peer died holding a thousand games, at a
// millisecond or two a call), and by a hung node's first call on a
// cluster: every later stream then failed at once, set aside with its
// node, the healthy ones too (TestAttemptsEachCallItsDeadline). A stream
// whose node failed a call meanwhile is not asked: set aside, as the
// failed call's own stream is, its entries left pending.
func (c *Consumer) withAttempts(batch []delivery) ([]delivery, error) {
	_, cluster := c.rdb.(*redis.ClusterClient)
	var unanswered error // a call that met no reply (a node down, hung or slow)
	byStream := map[string][]int{}
	var order []string
	for i, d := range batch {
		if _, ok := byStream[d.stream]; !ok {
			order = append(order, d.stream)
		}
		byStream[d.stream] = append(byStream[d.stream], i)
	}
	counts := make(map[string]int64, len(batch)) // stream+"\x00"+pos → count
streams:
	for _, stream := range order {
		if st := c.streams[stream]; st != nil && (st.down(time.Now()) || unanswered != nil && !cluster) {
			// A single node that did not answer is not asked again in this
			// batch; a cluster node's streams were set aside with it.
			if !st.down(time.Now()) && c.setAside([]*streamState{st}, unanswered) != nil {
				return nil, unanswered
			}
			c.markPending(stream)
			continue
		}
		idx := byStream[stream]
		lo, hi := batch[idx[0]].x.ID, batch[idx[0]].x.ID
		wanted := make(map[string]bool, len(idx))
		for _, i := range idx {
			id := batch[i].x.ID
			wanted[id] = true
			if cmpID(id, lo) < 0 {
				lo = id
			}
			if cmpID(id, hi) > 0 {
				hi = id
			}
		}
		// Other own entries may sit inside the range (failed ones whose
		// idle time has not come): leave room for them, and page on
		// while the page is full and some entries are not found. A
		// claim's entries can lie far apart (XAUTOCLAIM scans up to ten
		// times COUNT pending entries), with more than that room of own
		// ones between them; one page took the entries past it for ones
		// a peer took (TestClaimedAmongOwnPending).
		page := int64(len(idx)) + 1000
		found := map[string]int64{} // counted only once the stream is read whole
		for start := lo; ; {
			ctx, cancel := c.callCtx(c.ctx, 5*time.Second)
			pend, err := c.rdb.XPendingExt(ctx, &redis.XPendingExtArgs{
				Stream: stream, Group: c.cfg.Group, Start: start, End: hi,
				Count: page, Consumer: c.cfg.Consumer,
			}).Result()
			cancel()
			if err != nil {
				c.fail("xpending", err)
				if serverError(err) {
					if st := c.streams[stream]; st != nil {
						c.reopen(st, err)
					}
					continue streams
				}
				unanswered = err
				if st := c.streams[stream]; st != nil && c.setAside([]*streamState{st}, err) == nil {
					// Its entries stay pending, for a claim or recovery:
					// marked, as a failure marks them, so that the claim
					// looks at the stream once it answers. Unmarked, a game
					// out of the read set waited for the sweep's next pass
					// (TestReadAheadCountsUnreadClaimed).
					c.markPending(stream)
					continue streams
				}
				return nil, err
			}
			for _, p := range pend {
				found[p.ID] = p.RetryCount
				delete(wanted, p.ID)
			}
			if int64(len(pend)) < page || len(wanted) == 0 {
				break
			}
			start = "(" + pend[len(pend)-1].ID
		}
		for id, n := range found {
			counts[stream+"\x00"+id] = n
		}
	}
	out := batch[:0:0]
	for _, d := range batch {
		n, ok := counts[d.stream+"\x00"+d.x.ID]
		if !ok {
			c.log.Debug("entry left this consumer before it was handled", "stream", d.stream, "pos", d.x.ID)
			continue
		}
		d.attempts = n
		out = append(out, d)
	}
	return out, nil
}

// overPoison reports whether an entry delivered this often without a
// verdict goes to the dead letters without being handled.
func (c *Consumer) overPoison(attempts int64) bool { return attempts > c.cfg.PoisonAfter }

// withoutOverPoison moves the entries of todo delivered more than
// PoisonAfter times (overPoison) to s.dead and returns the rest, in order.
// Such an entry had no verdict at any delivery: the handler crashed the
// process or hung, so it is not tried again.
//
// It runs after skipDead and skipClaimed. A claimed entry (a letter under
// way in single-key steps) stays pending while its claim is live, and
// every claim of it counts a delivery: looked at first, the count sent it
// as one that kept killing the process, and the take-over of the claim
// wrote that letter ("delivered N times without a verdict", reason
// attempts) for an entry that had its verdict
// (TestClaimedOverPoisonLetterSaysClaimed). One whose look failed is left
// pending with the others of its stream, not sent here.
func (c *Consumer) withoutOverPoison(todo []delivery, s *settlement) []delivery {
	out := todo[:0]
	for _, d := range todo {
		if c.overPoison(d.attempts) {
			d.reason, d.label = fmt.Sprintf("delivered %d times without a verdict (poison after %d)", d.attempts, c.cfg.PoisonAfter), "attempts"
			s.dead = append(s.dead, d)
			continue
		}
		out = append(out, d)
	}
	return out
}

// callHandler runs the batch handler, recovering a panic into a failure of
// every entry, and keeps the entries' idle time fresh while it runs past
// MinIdle/2, so that no peer claims work in progress.
func (c *Consumer) callHandler(todo []delivery) []error {
	return c.callCommit(todo, nil)
}

// callCommit is callHandler with, when commit is not nil, the batch's
// prepared commit (Config.Prepare) called in place of the batch handler.
func (c *Consumer) callCommit(todo []delivery, commit func(context.Context) []error) []error {
	// The messages are copied out only for the batch handler: a prepared
	// commit holds its own.
	var ms []Message
	messages := func() []Message {
		if ms == nil {
			ms = make([]Message, len(todo))
			for i, d := range todo {
				ms[i] = d.msg
			}
		}
		return ms
	}
	stopKeepAlive := c.keepAlive(todo)
	start := time.Now()
	c.setInHandler(true)
	var verdicts []error
	err := safeCall(func() error {
		if commit != nil {
			verdicts = commit(c.hctx)
		} else {
			verdicts = c.handle(c.hctx, messages())
		}
		return nil
	})
	c.setInHandler(false)
	mHandlerSeconds.Observe(time.Since(start).Seconds())
	defer stopKeepAlive()
	if err == nil && len(verdicts) != len(todo) {
		err = fmt.Errorf("feed: batch handler returned %d verdicts for %d entries", len(verdicts), len(todo))
	}
	if err != nil && len(todo) > 1 {
		ms := messages()
		// One entry must not take its batch down with it (after
		// PoisonAfter tries the whole batch would be dead-lettered): hand
		// the entries over one by one, so each gets its own verdict.
		// Sampled as the entries' own failures are: a flood of entries that
		// trip it fails a batch per read and per claim
		// (TestBatchFailureLogSampled).
		if ok, skipped := c.sample.Allow("batch failed"); ok {
			c.log.Warn("batch handler failed as a whole; handling its entries one by one", "entries", len(ms), untrusted.Err(err),
				"similar_unlogged", skipped)
		}
		verdicts = make([]error, len(ms))
		c.setInHandler(true)
		for i := range ms {
			one := ms[i : i+1]
			verdicts[i] = safeCall(func() error {
				v := c.handle(c.hctx, one)
				if len(v) != 1 {
					return fmt.Errorf("feed: batch handler returned %d verdicts for 1 entry", len(v))
				}
				return v[0]
			})
		}
		c.setInHandler(false)
		err = nil
	}
	if err != nil {
		verdicts = make([]error, len(todo))
		for i := range verdicts {
			verdicts[i] = err
		}
	}
	return verdicts
}

// reread reports whether a batch that came by path re-reads positions this
// group was given before, whose entries the renderers may have
// dead-lettered (skipDead), and notes the newest position ">" gave of each
// stream. A ">" read does so only after the group was rewound (feedctl
// replay, or a group re-made on a stream that kept its entries), which
// shows as a position no newer than one ">" gave this process already, or
// than the group's last-delivered id as its census last saw it
// (censusChunk: the door's look at a stream found since the start
// included, so a quiet game replayed after a restart is noticed,
// TestReplayNoticedWithoutLiveRead), or than the store's position when
// the stream was discovered (catchUpPlan: a replay while every renderer
// was stopped, TestReplayNoticedAfterRestart). A live batch pays
// nothing: asking every batch cost one more round trip between its read
// and its commit.
//
// The own pending list and a claim are asked about only up to the newest
// re-read position that skipDead left pending, its node not answering
// (streamState.rewound): those were given again by a rewind. Otherwise
// they are not asked about: their entries
// have no verdict of this group yet (a dead letter is acked in the same
// script that writes it), and a position in the set is then another
// group's letter, given for a reason of its own (its clock, its store),
// which is not this group's verdict (TestOtherGroupsLetterNotOurs). Until
// 6 Dec 2026 they were asked, and an entry a plain error sent to the
// pending list was acked as a duplicate where the live read would have
// stored it.
//
// A rewound position newer than every one this process knew of is not
// noticed (the store's last line came before it, and the process started
// after the replay or a peer was given it after the last census), nor a
// rewound entry left pending before its look by a process that then died
// (a peer claims it, or its restart recovers it): those are judged afresh
// (docs/reader-law.md).
func (c *Consumer) reread(path string, batch []delivery) bool {
	if path != pathNew { // its own pending list or a claim
		for _, d := range batch {
			if c.rewound(d) {
				return true
			}
		}
		return false
	}
	again := false
	for _, d := range batch {
		st := c.streams[d.stream]
		switch {
		case st == nil:
			again = true
		case st.newest != "" && cmpID(d.x.ID, st.newest) <= 0:
			again = true
		default:
			st.newest = d.x.ID
		}
	}
	return again
}

// newerID returns the newer of two stream ids, "" standing for none.
func newerID(a, b string) string {
	if a == "" || (b != "" && cmpID(b, a) > 0) {
		return b
	}
	return a
}

// cmpID compares two stream ids ("ms-seq") numerically.
func cmpID(a, b string) int {
	ams, aseq := splitID(a)
	bms, bseq := splitID(b)
	switch {
	case ams != bms:
		if ams < bms {
			return -1
		}
		return 1
	case aseq != bseq:
		if aseq < bseq {
			return -1
		}
		return 1
	}
	return 0
}

func splitID(id string) (ms, seq uint64) {
	var i int
	for i = 0; i < len(id) && id[i] != '-'; i++ {
		ms = ms*10 + uint64(id[i]-'0')
	}
	for i++; i < len(id); i++ {
		seq = seq*10 + uint64(id[i]-'0')
	}
	return ms, seq
}
