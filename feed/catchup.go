package feed

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"
)

// catchUpPages is the most XRANGE pages (of Count entries) catch-up hands
// to the handler in one loop turn, so a store far behind (a lost file, a
// new host) does not hold up the rest of the turn: the own pending lists,
// claims and reads of the streams already caught go on between pages.
const catchUpPages = 10

// catchUpAll catches the store up with the group on every open stream not
// caught up since it was discovered (Config.Position), at most catchUpPages
// pages per turn, the streams with entries pending first, and otherwise
// finishing the stream it started before another one, so streams come back
// one by one. A stream not yet caught is neither read
// nor recovered nor claimed (streamState.readable): the store's position
// moves to the highest position of each committed batch, so committing a
// newer entry of it first would put its position past entries it still
// lacks, and a crash then would hide them from the next catch-up.
func (c *Consumer) catchUpAll() error {
	c.catching = false
	if c.cfg.Position == nil {
		for _, st := range c.work.all() {
			st.caught = true
		}
		return nil
	}
	budget := catchUpPages
	try := func(st *streamState) error {
		if !st.open || st.caught || st.down(time.Now()) {
			return nil
		}
		if budget <= 0 && st.catchLast != "" {
			c.catching = true
			return nil
		}
		// With the budget spent, a stream not yet looked at is still
		// looked at (a few short reads): most are not behind at all and
		// are free to be read at once.
		n, pages, done, err := c.catchUp(st, budget)
		budget -= pages
		st.catchN += n
		if err != nil || c.stopping() || st.down(time.Now()) {
			return err // set aside: tried again once its node answers
		}
		if !done {
			c.catching = true
			if st.catchLast != "" && c.catchCur == nil {
				c.catchCur = st // the next turn goes on with it first
			}
			return nil
		}
		st.caught = true
		if st.catchN > 0 {
			c.catchStreams++
			c.catchEntries += st.catchN
		}
		st.catchN = 0
		return nil
	}
	// Only the work set: a stream enters it through the group door, so a
	// new or re-discovered stream is caught up before it is read, and a
	// quiet one costs nothing here. First the streams with entries pending
	// (a dead peer's or our own wait for the catch-up to end), then the
	// stream begun last turn, then the rest.
	cur := c.catchCur
	c.catchCur = nil
	for _, st := range c.work.all() {
		if st.pending && st.catchLast != "" {
			if err := try(st); err != nil {
				return err
			}
		}
	}
	if cur != nil && c.work.has(cur) {
		if err := try(cur); err != nil {
			return err
		}
	}
	for _, st := range c.work.all() {
		if err := try(st); err != nil {
			return err
		}
	}
	waiting, err := c.catchRetryAll()
	if err != nil {
		return err
	}
	if !c.catching && !waiting && c.catchEntries > 0 {
		// One line per catch-up, however many streams and turns it took.
		c.log.Warn("store was behind its group; caught up from the streams", "streams", c.catchStreams, "entries", c.catchEntries)
		c.note(fmt.Sprintf("store was behind its group: %d entries of %d streams re-read and stored", c.catchEntries, c.catchStreams))
		c.catchStreams, c.catchEntries = 0, 0
	}
	return nil
}

// catchUp hands the entries of st between the store's position (less the
// lookback) and the group's last-delivered id to the handler with XRANGE:
// no XREADGROUP, no XACK, no dead letter, so the group and its other
// consumers are unaffected, and the handler's idempotence makes a repeat
// harmless. An entry the handler refuses with a plain error is tried again
// (catchRefused): a peer acked it, and no delivery brings it back. It hands at most budget pages and
// keeps its cursor in st (catchNext, catchLast) for the next turn; done is
// false when the stream must be tried again (pages left, its group gone).
func (c *Consumer) catchUp(st *streamState, budget int) (n, pages int, done bool, err error) {
	if st.catchLast == "" {
		start, last, behind, done, err := c.catchUpPlan(st)
		if err != nil || !behind {
			return 0, 0, done, err
		}
		st.catchNext, st.catchLast = start, last
	}
	for pages < budget && !c.stopping() {
		rctx, rcancel := c.callCtx(c.ctx, 10*time.Second)
		msgs, err := c.rdb.XRangeN(rctx, st.key, st.catchNext, st.catchLast, c.cfg.Count).Result()
		rcancel()
		if err != nil {
			c.fail("catchup", err)
			return n, pages, false, c.catchFailed(st, err)
		}
		c.ok()
		if len(msgs) == 0 {
			st.catchNext, st.catchLast = "", ""
			return n, pages, true, nil
		}
		dead, err := c.deadOf(st.key, msgs)
		switch {
		case err != nil && serverError(err):
			// A set that cannot be read (another type under its key)
			// does not stop the game, as in skipDead: the page is judged
			// afresh. Returned, the error failed every turn's catch-up
			// of the game, which is not read before its catch-up ends
			// (TestCatchUpDeadSetUnreadable).
			c.deadSetUnreadable(st.key, err)
			dead = nil
		case err != nil:
			c.fail("catchup", err)
			return n, pages, false, c.setAside([]*streamState{st}, err)
		}
		refused, err := c.catchUpBatch(st.key, msgs, dead)
		if err != nil {
			return n, pages, false, err
		}
		pages++
		n += len(msgs)
		c.stats.caughtUp.Add(int64(len(msgs)))
		c.catchRefused(st, refused)
		lastID := msgs[len(msgs)-1].ID
		if cmpID(lastID, st.catchLast) >= 0 {
			st.catchNext, st.catchLast = "", ""
			return n, pages, true, nil
		}
		st.catchNext = "(" + lastID
	}
	return n, pages, false, nil
}

// catchFailed takes a failed call of st's catch-up. A reply error of
// the server (another type under the key, WRONGTYPE; a command the ACL
// refuses) is the game's alone: st goes back to the group door, which
// says so loudly and tries it again with backoff, and its catch-up is
// planned afresh once it opens, while the other games go on. Returned, the
// error failed every turn at the same stream, first in line with its
// catch-up begun, and no game was read again (until 7 Dec 2026; the plan's
// XINFO GROUPS already went to the door). Any other error sets st aside
// (setAside) until its node answers.
func (c *Consumer) catchFailed(st *streamState, err error) error {
	if !serverError(err) {
		return c.setAside([]*streamState{st}, err)
	}
	st.catchNext, st.catchLast = "", ""
	c.reopen(st, err)
	return nil
}

// catchUpPlan decides whether st's store is behind its group and from
// where a catch-up starts: behind reports a range to re-read (start, last);
// otherwise done is false when the stream must be tried again (its group
// is gone).
func (c *Consumer) catchUpPlan(st *streamState) (start, last string, behind, done bool, err error) {
	ctx, cancel := context.WithTimeout(c.ctx, 10*time.Second)
	defer cancel()
	pos, err := c.cfg.Position(ctx, st.key)
	if err != nil {
		return "", "", false, false, fmt.Errorf("feed: store position of %s: %w", st.key, err)
	}
	// The store's position was given to the group before (its line was
	// committed from a ">" read or a catch-up up to the group's cursor):
	// one no newer is a rewind (reread), also one made while every
	// renderer of the group was stopped, which neither ">" nor the census
	// showed this process (TestReplayNoticedAfterRestart).
	st.newest = newerID(st.newest, pos)
	groups, err := c.rdb.XInfoGroups(ctx, st.key).Result()
	if err != nil {
		c.fail("catchup", err)
		return "", "", false, false, c.catchFailed(st, err)
	}
	for _, g := range groups {
		if g.Name == c.cfg.Group {
			last = g.LastDeliveredID
		}
	}
	if last == "" || last == "0-0" || (pos != "" && cmpID(pos, last) >= 0) {
		return "", "", false, true, nil
	}
	info, err := c.rdb.XInfoStream(ctx, st.key).Result()
	if err != nil {
		c.fail("catchup", err)
		return "", "", false, false, c.catchFailed(st, err)
	}
	c.ok()
	if trimmedPast(info, pos) {
		have := pos
		if have == "" {
			have = "nothing"
		}
		c.log.Warn("stream trimmed beyond what the store has: a gap the store cannot fill",
			"stream", st.key, "game", gameOf(st.key), "store_position", have,
			"first_entry", info.FirstEntry.ID, "entries_added", info.EntriesAdded, "length", info.Length)
		c.note(fmt.Sprintf("gap: %s lost entries after the store's position %s (the stream now starts at %s); their lines cannot be recovered",
			gameOf(st.key), have, info.FirstEntry.ID))
		// Counted after the note: whoever sees the count finds the note.
		c.stats.gaps.Add(1)
	}
	if !trimmedPast(info, pos) {
		acked, fits, err := c.ackedAfter(ctx, st.key, pos, last)
		if err != nil {
			c.fail("catchup", err)
			return "", "", false, false, c.catchFailed(st, err)
		}
		only := fits
		if fits && len(acked) > 0 {
			// Read again, after the group: a peer of the host sharing
			// the store commits an entry before it acks it, so one it
			// acked since the first read is at or below the store's
			// position now. Compared with the first read, every entry
			// a peer committed and acked under these reads looked
			// acked without a line, and an ordinary restart under
			// traffic re-read the lookback window (until 7 Dec 2026;
			// TestCatchUpNotFooledByPeerCommit).
			now, err := c.cfg.Position(ctx, st.key)
			if err != nil {
				return "", "", false, false, fmt.Errorf("feed: store position of %s: %w", st.key, err)
			}
			acked = slices.DeleteFunc(acked, func(id string) bool { return now != "" && cmpID(id, now) <= 0 })
			only, err = c.allDead(ctx, st.key, acked)
			if err != nil {
				c.fail("catchup", err)
				return "", "", false, false, c.setAside([]*streamState{st}, err)
			}
		}
		if only {
			// Every entry the store lacks is still in someone's hands: the
			// reader law hands it over (recover, claim), so nothing to do.
			c.stats.catchUpSkipped.Add(1)
			return "", "", false, true, nil
		}
	}
	start = "-"
	if pos != "" {
		ms, _ := splitID(pos)
		back := uint64(c.cfg.CatchUpLookback.Milliseconds())
		start = fmt.Sprintf("%d-0", ms-min(ms, back))
	}
	return start, last, true, false, nil
}

// ackedAfter compares, for catchUpPlan, one page of XPENDING with one
// page of XRANGE over the entries of key after pos ("": from the start) up
// to last, and returns those acked there (not pending in the group); fits
// is false when the range is empty or longer than the page, and the store
// is then caught up. Each command is single-key, so cluster-safe. Under
// live traffic the group's last-delivered id is ahead of the store only by
// the entries in flight at the host's other consumers, so an ordinary
// restart costs two short reads, not a re-read of the lookback window.
// The plan then reads the store's position again: an entry acked at or
// below it was committed to the store first. One acked above it without a
// dead letter (allDead) was acked by a consumer whose commit this store
// does not have, and the stream is caught up.
//
// Entries below pos are not looked at: in a store that went on being
// written (a restart), nothing below its position was acked without being
// committed to it. Only an older copy (a restored backup) can lack an entry
// below its position that was pending when it was taken and acked since;
// such a copy is behind the entries its successor committed and acked
// after it, so this check fails and the catch-up's lookback covers them.
// The second read of the position adds no other trust: a consumer of the
// host commits past an entry the store lacks only through a catch-up,
// which stores the entries in order.
func (c *Consumer) ackedAfter(ctx context.Context, key, pos, last string) (acked []string, fits bool, err error) {
	from := "-"
	if pos != "" {
		from = "(" + pos
	}
	page := c.pendingPage()
	pend, err := c.rdb.XPendingExt(ctx, &redis.XPendingExtArgs{
		Stream: key, Group: c.cfg.Group, Start: from, End: last, Count: page + 1,
	}).Result()
	if err != nil {
		return nil, false, err
	}
	if int64(len(pend)) > page {
		return nil, false, nil
	}
	msgs, err := c.rdb.XRangeN(ctx, key, from, last, page+1).Result()
	if err != nil {
		return nil, false, err
	}
	if len(msgs) == 0 || int64(len(msgs)) > page {
		return nil, false, nil
	}
	held := make(map[string]bool, len(pend))
	for _, p := range pend {
		held[p.ID] = true
	}
	for _, m := range msgs {
		if !held[m.ID] {
			acked = append(acked, m.ID)
		}
	}
	return acked, true, nil
}

// allDead reports whether every entry of key at the positions acked is a
// dead letter (its position in the dead positions set, one ZMSCORE): a
// dead letter is acked and never stored, and a catch-up would only refuse
// it again. Under traffic with bad entries one is often in the range.
func (c *Consumer) allDead(ctx context.Context, key string, acked []string) (bool, error) {
	if len(acked) == 0 {
		return true, nil
	}
	dead, err := DeadPositions(ctx, c.rdb, key, c.cfg.DeadKey(key), acked)
	if err != nil {
		if serverError(err) {
			// Unreadable (another type under its key): then a catch-up
			// judges the entries afresh, where the error stopped the
			// game's catch-up at every turn (TestCatchUpDeadSetUnreadable).
			c.deadSetUnreadable(key, err)
			return false, nil
		}
		return false, err
	}
	for _, d := range dead {
		if !d {
			return false, nil // not a dead letter: a line this store lacks
		}
	}
	return true, nil
}

// pendingPage is the most entries ackedAfter compares: ten reads' worth,
// more than a host's consumers hold in flight on one stream.
func (c *Consumer) pendingPage() int64 { return 10 * c.cfg.Count }

// deadOf reports which of a page's entries the renderers dead-lettered
// (DeadPositions): one ZMSCORE per page.
func (c *Consumer) deadOf(stream string, msgs []redis.XMessage) ([]bool, error) {
	ctx, cancel := c.callCtx(c.ctx, 10*time.Second)
	defer cancel()
	return DeadEntries(ctx, c.rdb, stream, c.cfg.DeadKey(stream), msgs)
}

// catchUpBatch hands one XRANGE page to the handler, but for the entries
// dead says were dead-lettered (nil: none is known); an Unavailable verdict holds the page as
// the reader law does (pause, retry in hand). It returns the entries the
// handler refused with an error that is neither Poison nor Unavailable
// (catchRefused).
//
// A dead-lettered position is skipped without being judged again: some
// such entries pass when judged afresh (a stream id forged ahead of the
// clock, read after its time has come; an entry dead-lettered after
// PoisonAfter failed deliveries), and the store took a line no store fed
// by the live read holds (e2e/TestCatchUpSkipsDeadLetteredPositions). A
// dead letter is acked, so there is nothing to settle: the live reader,
// handed it again, only acks it. One pending after a replay re-delivered
// it is its holder's to settle (process).
func (c *Consumer) catchUpBatch(stream string, msgs []redis.XMessage, dead []bool) ([]delivery, error) {
	todo := make([]delivery, 0, len(msgs))
	for i, x := range msgs {
		if dead != nil && dead[i] {
			continue
		}
		m, err := Decode(stream, x)
		if err != nil {
			continue // malformed: the group's own delivery dead-letters it
		}
		m.Group = c.cfg.Group
		todo = append(todo, delivery{stream: stream, x: x, msg: m})
	}
	if len(todo) == 0 {
		return nil, nil
	}
	var s settlement
	held := c.judge(todo, c.callHandler(todo), &s)
	failed := s.failed
	if len(held) > 0 {
		// Refused on a retry in hand, after the pause: tried again as
		// well. Dropped, as until 6 Dec 2026, they were lost as the
		// others were (TestCatchUpRetriesRefusedEntry).
		more, err := c.hold(held, false)
		if err != nil {
			return nil, err
		}
		failed = append(failed, more...)
	}
	return failed, nil
}

// refusal is an entry a catch-up's handler refused: its position, the
// refusals so far, and when it is tried again.
type refusal struct {
	pos   string
	tries int64
	at    time.Time
}

// maxRefused bounds a stream's refusals kept for a retry: past it, a
// refused entry is reported as a gap at once.
const maxRefused = 1000

// catchRefused keeps the entries of ds, which a catch-up's handler refused
// with a plain error, to be tried again MinIdle later (catchRetryAll), as
// the reader law tries a failed entry again; the catch-up goes on
// meanwhile. An entry still pending in the group is left to the reader
// law. One acked by a peer has no delivery of the group to bring it back:
// passed over, as until 6 Dec 2026, its line was lost for good, logged as
// "left pending" (TestCatchUpRetriesRefusedEntry).
func (c *Consumer) catchRefused(st *streamState, ds []delivery) {
	for _, d := range ds {
		if c.stopping() {
			return
		}
		if slices.ContainsFunc(st.refused, func(r refusal) bool { return r.pos == d.x.ID }) ||
			c.pendingInGroup(st.key, d.x.ID) {
			continue
		}
		r := refusal{pos: d.x.ID, tries: 1, at: time.Now().Add(c.cfg.MinIdle)}
		switch {
		case r.tries >= c.cfg.PoisonAfter:
			c.giveUp(st, r, "refused on every try")
			continue
		case len(st.refused) >= maxRefused:
			c.giveUp(st, r, "more refused entries of the stream wait for a retry")
			continue
		}
		st.refused = append(st.refused, r)
	}
}

// catchRetryAll hands the refused entries whose retry has come to the
// handler again, one XRANGE each. An entry refused PoisonAfter times, or
// gone from the stream, is given up on (giveUp): no dead letter (a
// catch-up settles nothing in the group). It reports whether refused
// entries are still waiting.
func (c *Consumer) catchRetryAll() (waiting bool, err error) {
	for _, st := range c.work.all() {
		if len(st.refused) == 0 {
			continue
		}
		keep := st.refused[:0]
		for i, r := range st.refused {
			now := time.Now()
			if c.stopping() || !st.open || st.down(now) || now.Before(r.at) {
				keep = append(keep, r)
				continue
			}
			ctx, cancel := c.callCtx(c.ctx, 10*time.Second)
			msgs, err := c.rdb.XRangeN(ctx, st.key, r.pos, r.pos, 1).Result()
			cancel()
			if err != nil {
				c.fail("catchup", err)
				keep = append(keep, st.refused[i:]...)
				if err := c.setAside([]*streamState{st}, err); err != nil && !serverError(err) {
					st.refused = keep
					return true, err
				}
				break
			}
			if len(msgs) == 0 {
				c.giveUp(st, r, "deleted from the stream before a retry")
				continue
			}
			failed, err := c.catchUpBatch(st.key, msgs, nil)
			if err != nil {
				st.refused = append(keep, st.refused[i:]...)
				return true, err
			}
			if len(failed) == 0 {
				continue // stored, or its own fault (Poison)
			}
			r.tries++
			if r.tries >= c.cfg.PoisonAfter {
				c.giveUp(st, r, "refused on every try")
				continue
			}
			r.at = time.Now().Add(c.cfg.MinIdle)
			keep = append(keep, r)
		}
		st.refused = keep
		waiting = waiting || len(keep) > 0
	}
	return waiting, nil
}

// giveUp reports the refused entry r of st as a gap: its line is not
// stored.
func (c *Consumer) giveUp(st *streamState, r refusal, why string) {
	c.log.Error("catch-up gave up on an entry the handler refused; the store lacks its line",
		"stream", st.key, "game", gameOf(st.key), "pos", r.pos, "refused", r.tries, "why", why)
	c.note(fmt.Sprintf("gap: %s: the catch-up's handler refused the entry at %s %d times (%s); its line was not stored",
		gameOf(st.key), r.pos, r.tries, why))
	c.stats.gaps.Add(1)
}

// pendingInGroup reports whether the entry at id of key is pending in the
// group (with any consumer). An error answers false: the catch-up then
// tries the entry again itself.
func (c *Consumer) pendingInGroup(key, id string) bool {
	ctx, cancel := c.callCtx(c.ctx, 5*time.Second)
	defer cancel()
	p, err := c.rdb.XPendingExt(ctx, &redis.XPendingExtArgs{
		Stream: key, Group: c.cfg.Group, Start: id, End: id, Count: 1,
	}).Result()
	if err != nil {
		c.fail("catchup", err)
		return false
	}
	return len(p) == 1
}

// trimmedPast reports whether entries after pos ("": the beginning) are
// gone from the stream: deleted with XDEL past pos, or trimmed (the stream
// holds fewer entries than were ever added) while its first entry is now
// past pos.
func trimmedPast(info *redis.XInfoStream, pos string) bool {
	if md := info.MaxDeletedEntryID; md != "" && md != "0-0" && (pos == "" || cmpID(md, pos) > 0) {
		return true
	}
	first := info.FirstEntry.ID
	return info.EntriesAdded > info.Length && first != "" && (pos == "" || cmpID(first, pos) > 0)
}
