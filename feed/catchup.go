package feed

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// catchUpAll catches the store up with the group on every open stream not
// caught up since it was discovered (Config.Position). It runs before
// anything new is read, so a store's position never jumps past a hole.
func (c *Consumer) catchUpAll() error {
	if c.cfg.Position == nil {
		return nil
	}
	streams, entries := 0, 0
	// Only the work set: a stream enters it through the group door, so a
	// new or re-discovered stream is caught up before it is read, and a
	// quiet one costs nothing here.
	for _, st := range c.work {
		if !st.open || st.caught {
			continue
		}
		n, done, err := c.catchUp(st)
		if err != nil || c.stopping() {
			return err
		}
		if done {
			st.caught = true
		}
		if n > 0 {
			streams++
			entries += n
		}
	}
	if entries > 0 {
		// One line per pass, however many streams it took.
		c.log.Warn("store was behind its group; caught up from the streams", "streams", streams, "entries", entries)
		c.note(fmt.Sprintf("store was behind its group: %d entries of %d streams re-read and stored", entries, streams))
	}
	return nil
}

// catchUp hands the entries of st between the store's position (less the
// lookback) and the group's last-delivered id to the handler with XRANGE:
// no XREADGROUP, no XACK, no dead letter, so the group and its other
// consumers are unaffected, and the handler's idempotence makes a repeat
// harmless. Entries the handler refuses are left to the reader law (they
// are pending or dead-lettered already). done is false when the stream
// must be tried again (its group is gone).
func (c *Consumer) catchUp(st *streamState) (n int, done bool, err error) {
	ctx, cancel := context.WithTimeout(c.ctx, 10*time.Second)
	defer cancel()
	pos, err := c.cfg.Position(ctx, st.key)
	if err != nil {
		return 0, false, fmt.Errorf("feed: store position of %s: %w", st.key, err)
	}
	groups, err := c.rdb.XInfoGroups(ctx, st.key).Result()
	if err != nil {
		c.fail("catchup", err)
		if serverError(err) {
			c.reopen(st, err)
			return 0, false, nil
		}
		return 0, false, err
	}
	last := ""
	for _, g := range groups {
		if g.Name == c.cfg.Group {
			last = g.LastDeliveredID
		}
	}
	if last == "" || last == "0-0" || (pos != "" && cmpID(pos, last) >= 0) {
		return 0, true, nil
	}
	info, err := c.rdb.XInfoStream(ctx, st.key).Result()
	if err != nil {
		c.fail("catchup", err)
		return 0, false, err
	}
	c.ok()
	if trimmedPast(info, pos) {
		c.stats.gaps.Add(1)
		have := pos
		if have == "" {
			have = "nothing"
		}
		c.log.Warn("stream trimmed beyond what the store has: a gap the store cannot fill",
			"stream", st.key, "game", gameOf(st.key), "store_position", have,
			"first_entry", info.FirstEntry.ID, "entries_added", info.EntriesAdded, "length", info.Length)
		c.note(fmt.Sprintf("gap: %s lost entries after the store's position %s (the stream now starts at %s); their lines cannot be recovered",
			gameOf(st.key), have, info.FirstEntry.ID))
	}
	if !trimmedPast(info, pos) {
		only, err := c.onlyPending(ctx, st.key, pos, last)
		if err != nil {
			c.fail("catchup", err)
			return 0, false, err
		}
		if only {
			// Every entry the store lacks is still in someone's hands: the
			// reader law hands it over (recover, claim), so nothing to do.
			c.stats.catchUpSkipped.Add(1)
			return 0, true, nil
		}
	}
	start := "-"
	if pos != "" {
		ms, _ := splitID(pos)
		back := uint64(c.cfg.CatchUpLookback.Milliseconds())
		start = fmt.Sprintf("%d-0", ms-min(ms, back))
	}
	for !c.stopping() {
		rctx, rcancel := context.WithTimeout(c.ctx, 10*time.Second)
		msgs, err := c.rdb.XRangeN(rctx, st.key, start, last, c.cfg.Count).Result()
		rcancel()
		if err != nil {
			c.fail("catchup", err)
			return n, false, err
		}
		c.ok()
		if len(msgs) == 0 {
			break
		}
		if err := c.catchUpBatch(st.key, msgs); err != nil {
			return n, false, err
		}
		n += len(msgs)
		c.stats.caughtUp.Add(int64(len(msgs)))
		lastID := msgs[len(msgs)-1].ID
		if cmpID(lastID, last) >= 0 {
			break
		}
		start = "(" + lastID
	}
	return n, !c.stopping(), nil
}

// onlyPending reports whether every entry of key after pos ("": from the
// start) up to last is pending in the group, so the store lacks nothing the
// reader law will not deliver: it is a page of XRANGE compared with a page
// of XPENDING over the same range (both single-key, so cluster-safe). A
// range longer than a page, or any entry there that is acked (by a
// consumer whose commit this store does not have), answers false and the
// stream is caught up. Under live traffic the group's last-delivered id is
// ahead of the store only by the entries in flight at the host's other
// consumers, so an ordinary restart costs two short reads, not a re-read of
// the lookback window.
//
// Entries below pos are not looked at: in a store that went on being
// written (a restart), nothing below its position was acked without being
// committed to it. Only an older copy (a restored backup) can lack an entry
// below its position that was pending when it was taken and acked since;
// such a copy is behind the entries its successor committed and acked
// after it, so this check fails and the catch-up's lookback covers them.
func (c *Consumer) onlyPending(ctx context.Context, key, pos, last string) (bool, error) {
	from := "-"
	if pos != "" {
		from = "(" + pos
	}
	page := c.pendingPage()
	msgs, err := c.rdb.XRangeN(ctx, key, from, last, page+1).Result()
	if err != nil {
		return false, err
	}
	if len(msgs) == 0 || int64(len(msgs)) > page {
		return false, nil
	}
	pend, err := c.rdb.XPendingExt(ctx, &redis.XPendingExtArgs{
		Stream: key, Group: c.cfg.Group, Start: from, End: last, Count: page + 1,
	}).Result()
	if err != nil {
		return false, err
	}
	held := make(map[string]bool, len(pend))
	for _, p := range pend {
		held[p.ID] = true
	}
	for _, m := range msgs {
		if !held[m.ID] {
			return false, nil
		}
	}
	return true, nil
}

// pendingPage is the most entries onlyPending compares: ten reads' worth,
// more than a host's consumers hold in flight on one stream.
func (c *Consumer) pendingPage() int64 { return 10 * c.cfg.Count }

// catchUpBatch hands one XRANGE page to the handler; an Unavailable
// verdict holds the page as the reader law does (pause, retry in hand).
func (c *Consumer) catchUpBatch(stream string, msgs []redis.XMessage) error {
	todo := make([]delivery, 0, len(msgs))
	for _, x := range msgs {
		m, err := Decode(stream, x)
		if err != nil {
			continue // malformed: the group's own delivery dead-letters it
		}
		m.Group = c.cfg.Group
		todo = append(todo, delivery{stream: stream, x: x, msg: m})
	}
	if len(todo) == 0 {
		return nil
	}
	var s settlement
	held := c.judge(todo, c.callHandler(todo), &s)
	if len(held) > 0 {
		return c.hold(held, false)
	}
	return nil
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
