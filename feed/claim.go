package feed

import (
	"context"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/internal/untrusted"
)

// claimAll runs XAUTOCLAIM over the streams whose group has pending
// entries (and the static ones): the idle entries of dead peers, and the
// own failed entries, no sooner than MinIdle (by the server's clock) after
// their last delivery.
func (c *Consumer) claimAll() error {
	return c.claimStreams(c.pick(func(st *streamState) bool { return (st.pinned || st.pending) && st.readable() }))
}

// claimStreams claims on sts, in their order, where there is something to
// claim. Most streams flagged pending have nothing idle (a live peer's
// entries in flight, the own batch in hand), and one XAUTOCLAIM after
// another cost a round trip each, every ClaimEvery: so which of them hold
// an entry idle past MinIdle is asked first in one pipeline of maxKeys
// streams (idleOf), which a cluster client splits per node, and only
// those are claimed (TestClaimSendsXautoclaimOnlyWhereIdle). The claims
// themselves stay one stream at a time, each batch handled before the
// next XAUTOCLAIM: claimed in one pipeline, entries would wait in hand,
// their delivery counted, behind the handling (or a pause) of the streams
// before them, for a peer to claim again, and a Close would leave them
// claimed unhandled.
func (c *Consumer) claimStreams(sts []*streamState) error {
	for chunk := range slices.Chunk(sts, maxKeys) {
		if time.Now().Before(c.claimHeld) {
			return nil // the server's ACL refused a claim (claimRefused)
		}
		idle, err := c.idleOf(chunk)
		if err != nil {
			return err
		}
		for _, st := range idle {
			if c.stopping() {
				return nil
			}
			if st.down(time.Now()) {
				continue // its node failed an earlier claim of this pass
			}
			if time.Now().Before(c.claimHeld) {
				return nil
			}
			if err := c.claim(st); err != nil {
				return err
			}
		}
		if c.stopping() {
			return nil
		}
	}
	return nil
}

// idleOf returns the streams of sts whose group has an entry idle past
// MinIdle (XPENDING IDLE … 1, by the server's clock, as XAUTOCLAIM
// judges), asked in one pipeline. A stream whose question failed is
// handled as a failed claim (readFailed); it returns the error only when
// claim would have: a connection error of a stream it could not set
// aside.
func (c *Consumer) idleOf(sts []*streamState) ([]*streamState, error) {
	ctx, cancel := context.WithTimeout(c.ctx, 5*time.Second)
	defer cancel()
	p := c.pipes()
	cmds := make([]*redis.XPendingExtCmd, len(sts))
	for i, st := range sts {
		cmds[i] = p.of(st.key).XPendingExt(ctx, &redis.XPendingExtArgs{
			Stream: st.key, Group: c.cfg.Group, Idle: c.cfg.MinIdle,
			Start: "-", End: "+", Count: 1,
		})
	}
	p.exec(ctx)
	var idle []*streamState
	answered := false
	for i, st := range sts {
		res, err := cmds[i].Result()
		if err != nil {
			if c.stopping() {
				return idle, nil
			}
			if aclRefused(err) {
				c.claimRefused(err)
				return nil, nil
			}
			answered = answered || serverError(err)
			if err := c.readFailed("claim", []*streamState{st}, err); err != nil && !serverError(err) {
				return idle, err
			}
			continue
		}
		answered = true
		st.downBackoff.Reset()
		if len(res) > 0 {
			idle = append(idle, st)
		}
	}
	if answered {
		c.ok()
	}
	return idle, nil
}

// claim walks one stream's pending list from 0-0 until the cursor returns
// to 0-0. Since Redis 7.0, XAUTOCLAIM itself removes the ids of deleted
// entries from the pending list and returns them apart; they are counted
// (ClaimDeleted, trimmed{path="claim"}), and need no XACK.
func (c *Consumer) claim(st *streamState) error {
	start := "0-0"
	for !c.stopping() {
		// A deadline of its own: a hung node held it for go-redis's
		// read timeout times its retries (nodeTimeout).
		ctx, cancel := c.callCtx(c.ctx, 5*time.Second)
		msgs, next, deleted, err := c.rdb.XAutoClaimWithDeleted(ctx, &redis.XAutoClaimArgs{
			Stream: st.key, Group: c.cfg.Group, Consumer: c.cfg.Consumer,
			MinIdle: c.cfg.MinIdle, Start: start, Count: c.cfg.Count,
		}).Result()
		cancel()
		if aclRefused(err) {
			c.claimRefused(err)
			return nil
		}
		if err != nil {
			if err := c.readFailed("claim", []*streamState{st}, err); err != nil && !serverError(err) {
				return err
			}
			return nil
		}
		c.ok()
		st.downBackoff.Reset()
		c.claimBackoff.Reset()
		if n := int64(len(deleted)); n > 0 {
			c.stats.claimDeleted.Add(n)
			c.log.Info("claimed entries were deleted from the stream; dropped from the pending list",
				"stream", st.key, "game", st.game, "count", n)
			c.settleDeletedClaims(st.key, deleted)
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

// claimRefused holds every claim back after the server's ACL refused one
// (XPENDING or XAUTOCLAIM: a grant missing from the user), for a wait
// that doubles from ClaimEvery to claimRefusedMax, jittered, and says so
// in one WARN line a wait. The grant is the user's, not the stream's:
// every stream would be refused alike, the group is fine, and the reads
// and acks go on. Until 7 Dec 2026 the refusal sent the stream to the
// group door (XGROUP CREATE) at every claim beat, said only at DEBUG
// (TestACLRefusalIsNoStreamFault). The entries stay pending, claimed once
// the grant is given, without a restart.
func (c *Consumer) claimRefused(err error) {
	c.fail("claim", err)
	d := c.claimBackoff.Next()
	c.claimHeld = time.Now().Add(d)
	c.log.Warn("the server's ACL refuses claims; claiming held back, the others read on: grant it (docs/operations.md, \"A Redis with ACL users\")",
		untrusted.Err(err), "retry_in", d.Round(time.Millisecond))
}

// claimRefusedMax caps the wait of claimRefused (or ClaimEvery, if longer).
const claimRefusedMax = time.Minute
