package feed

import "github.com/redis/go-redis/v9"

// claimAll runs XAUTOCLAIM over the streams whose group has pending
// entries (and the static ones): the idle entries of dead peers, and the
// own failed entries, no sooner than MinIdle (by the server's clock) after
// their last delivery.
func (c *Consumer) claimAll() error {
	for _, st := range c.pick(func(st *streamState) bool { return (st.pinned || st.pending) && st.readable() }) {
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
			if err := c.readFailed("claim", []*streamState{st}, err); err != nil && !serverError(err) {
				return err
			}
			return nil
		}
		c.ok()
		st.downBackoff.Reset()
		if n := int64(len(deleted)); n > 0 {
			c.stats.claimDeleted.Add(n)
			c.log.Info("claimed entries were deleted from the stream; dropped from the pending list",
				"stream", st.key, "game", st.game, "count", n)
		}
		if len(msgs) > 0 {
			c.stats.claimed.Add(int64(len(msgs)))
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
