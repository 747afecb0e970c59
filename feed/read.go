package feed

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// Paths an entry can come by; they label metrics.
const (
	pathNew     = "new"
	pathPending = "pending"
	pathClaim   = "claim"
)

// recoverAll recovers the own pending list of every open stream that needs
// it (once per start and after every group door creation).
func (c *Consumer) recoverAll() error {
	for _, k := range c.order {
		st := c.streams[k]
		if !st.open || !st.recover {
			continue
		}
		if err := c.recoverSelf(st); err != nil || c.stopping() {
			return err
		}
	}
	return nil
}

// recoverSelf reads the own pending list from cursor 0, advancing the cursor
// past each batch, to exhaustion. A read with an explicit id never blocks and
// adds one to each entry's delivery count. Entries that fail again stay
// pending behind the cursor, so they never spin; they come back by
// XAUTOCLAIM no sooner than MinIdle later.
func (c *Consumer) recoverSelf(st *streamState) error {
	cursor := "0"
	total := 0
	for !c.stopping() {
		res, err := c.rdb.XReadGroup(c.ctx, &redis.XReadGroupArgs{
			Group: c.cfg.Group, Consumer: c.cfg.Consumer,
			Streams: []string{st.key, cursor}, Count: c.cfg.Count, Block: -1,
		}).Result()
		if err != nil && !isNil(err) {
			c.fail("recover", err)
			if serverError(err) {
				c.reopen(st, err)
				return nil
			}
			return err
		}
		c.ok()
		var msgs []redis.XMessage
		if len(res) > 0 {
			msgs = res[0].Messages
		}
		if len(msgs) == 0 {
			st.recover = false
			if total > 0 {
				c.log.Info("own pending list recovered", "stream", st.key, "game", gameOf(st.key), "entries", total)
			}
			return nil
		}
		total += len(msgs)
		cursor = msgs[len(msgs)-1].ID
		batch := make([]delivery, len(msgs))
		for i, x := range msgs {
			batch[i] = delivery{stream: st.key, x: x}
		}
		if err := c.process(pathPending, batch); err != nil {
			return err
		}
	}
	return nil
}

// readNew reads entries never delivered to the group, over all active
// streams in one XREADGROUP ... > call with BLOCK and COUNT.
func (c *Consumer) readNew() error {
	act := c.active()
	if len(act) == 0 {
		// Nothing to read: keep readiness honest and wait a beat.
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
		c.sleep(min(c.cfg.Block, c.cfg.StreamsEvery))
		return nil
	}
	args := make([]string, 0, 2*len(act))
	for _, st := range act {
		args = append(args, st.key)
	}
	for range act {
		args = append(args, ">")
	}
	// go-redis waits BLOCK plus 10s for a blocking reply; a deadline just
	// past BLOCK (honoured with ContextTimeoutEnabled) lets a silent Redis
	// fail the turn, and a Close, in about a second instead.
	ctx, cancel := context.WithTimeout(c.ctx, c.cfg.Block+time.Second)
	defer cancel()
	res, err := c.rdb.XReadGroup(ctx, &redis.XReadGroupArgs{
		Group: c.cfg.Group, Consumer: c.cfg.Consumer,
		Streams: args, Count: c.cfg.Count, Block: c.cfg.Block,
	}).Result()
	if err != nil && !isNil(err) {
		if c.stopping() {
			return nil
		}
		c.fail("read", err)
		if serverError(err) {
			// One bad stream fails the whole call; the doors find which.
			for _, st := range act {
				c.reopen(st, err)
			}
			if isNoGroup(err) {
				// The door re-creates the group and says so in one line;
				// the short backoff still guards against a NOGROUP that
				// the door cannot cure.
				return quiet{err}
			}
		}
		return err
	}
	c.ok()
	var batch []delivery
	for _, s := range res {
		for _, x := range s.Messages {
			batch = append(batch, delivery{stream: s.Stream, x: x, attempts: 1})
		}
	}
	if len(batch) == 0 {
		return nil
	}
	return c.process(pathNew, batch)
}

// claimAll runs XAUTOCLAIM over every active stream: the idle entries of
// dead peers, and the own failed entries, no sooner than MinIdle (by the
// server's clock) after their last delivery.
func (c *Consumer) claimAll() error {
	for _, st := range c.active() {
		if err := c.claim(st); err != nil || c.stopping() {
			return err
		}
	}
	return nil
}

// claim walks one stream's pending list from 0-0 until the cursor returns
// to 0-0. Since Redis 7.0, XAUTOCLAIM itself removes the ids of deleted
// entries from the pending list and returns them apart; they are counted
// (ClaimDeleted, trimmed{path="claim"}), and need no XACK.
func (c *Consumer) claim(st *streamState) error {
	start := "0-0"
	for !c.stopping() {
		msgs, next, deleted, err := c.rdb.XAutoClaimWithDeleted(c.ctx, &redis.XAutoClaimArgs{
			Stream: st.key, Group: c.cfg.Group, Consumer: c.cfg.Consumer,
			MinIdle: c.cfg.MinIdle, Start: start, Count: c.cfg.Count,
		}).Result()
		if err != nil {
			c.fail("claim", err)
			if serverError(err) {
				c.reopen(st, err)
				return nil
			}
			return err
		}
		c.ok()
		if n := int64(len(deleted)); n > 0 {
			c.stats.claimDeleted.Add(n)
			mTrimmed.WithLabelValues(pathClaim).Add(float64(n))
			c.log.Info("claimed entries were deleted from the stream; dropped from the pending list",
				"stream", st.key, "game", gameOf(st.key), "count", n)
		}
		if len(msgs) > 0 {
			c.stats.claimed.Add(int64(len(msgs)))
			mClaimed.Add(float64(len(msgs)))
			batch := make([]delivery, len(msgs))
			for i, x := range msgs {
				batch[i] = delivery{stream: st.key, x: x}
			}
			if err := c.process(pathClaim, batch); err != nil {
				return err
			}
		}
		if next == "0-0" || next == "" {
			return nil
		}
		start = next
	}
	return nil
}
