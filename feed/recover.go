package feed

import (
	"time"

	"github.com/redis/go-redis/v9"
)

// recoverAll recovers the own pending list of every open stream that needs
// it (once per start and after every group door creation), many streams
// per XREADGROUP.
func (c *Consumer) recoverAll() error {
	// Not before the stream is caught up: see catchUpAll.
	sts := c.pick(func(st *streamState) bool { return st.open && st.caught && !st.inspect && st.recover })
	for _, g := range c.groups(sts) {
		if err := c.recoverGroup(g); err != nil || c.stopping() {
			return err
		}
	}
	return nil
}

// recoverGroup reads the own pending lists of streams (one slot, or any on
// one node) from cursor 0, advancing each stream's cursor past each batch,
// until each is exhausted. A read with an explicit id never blocks and adds
// one to each entry's delivery count. Entries that fail again stay pending
// behind the cursor, so they never spin; they come back by XAUTOCLAIM no
// sooner than MinIdle later.
func (c *Consumer) recoverGroup(sts []*streamState) error {
	cursor := make(map[string]string, len(sts))
	total := make(map[string]int, len(sts))
	for _, st := range sts {
		cursor[st.key] = "0"
	}
	for len(sts) > 0 && !c.stopping() {
		// A deadline of its own, as the reads of new entries have: a hung
		// node held it for go-redis's read timeout times its retries
		// (nodeTimeout).
		ctx, cancel := c.callCtx(c.ctx, 10*time.Second)
		res, err := c.rdb.XReadGroup(ctx, &redis.XReadGroupArgs{
			Group: c.cfg.Group, Consumer: c.cfg.Consumer,
			Streams: streamsArgs(sts, func(st *streamState) string { return cursor[st.key] }),
			Count:   c.cfg.Count, Block: -1,
		}).Result()
		cancel()
		if err != nil && !isNil(err) {
			return c.readFailed("recover", sts, err) // set aside: recovered from 0 once back
		}
		c.ok()
		got := map[string][]redis.XMessage{}
		for _, s := range res {
			got[s.Stream] = s.Messages
		}
		var batch []delivery
		rest := sts[:0:0]
		for _, st := range sts {
			msgs := got[st.key]
			if len(msgs) == 0 {
				st.recover = false
				if total[st.key] > 0 {
					c.log.Info("own pending list recovered", "stream", st.key, "game", st.game, "entries", total[st.key])
				}
				continue
			}
			total[st.key] += len(msgs)
			cursor[st.key] = msgs[len(msgs)-1].ID
			for _, x := range msgs {
				batch = append(batch, delivery{stream: st.key, x: x})
			}
			rest = append(rest, st)
		}
		if len(batch) > 0 {
			if err := c.process(pathPending, batch); err != nil {
				return err
			}
		}
		// Those the settle set aside keep recover, and start again from
		// 0 once their node answers.
		sts = upOf(rest, time.Now())
	}
	return nil
}
