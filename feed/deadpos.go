package feed

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// DeadPositions reports, for each of ids (positions in the stream whose
// dead-letter stream is deadKey), whether the renderers dead-lettered it:
// whether it is in the dead positions set (DeadPositionsKey), a claim of
// a letter under way (deadsteps.go) included. It is one
// ZMSCORE, a single-key command, so it is cluster-safe; the set shares
// the game's hash slot with its stream anyway. A claim it meets that is
// stale and whose entry no group of stream has pending is settled there
// (settleOrphanClaim): confirmed if its letter exists, else removed and
// not dead.
//
// Every path that reads a stream's entries again after the live read
// judged them (a catch-up, a replay, feedctl rebuild) asks it first and
// skips the dead-lettered ones: a dead letter is not always refused again. A stream
// id forged more than the future bound ahead of the reader's clock is a
// future id when read before its time and passes once that time has come,
// an entry dead-lettered after PoisonAfter failed deliveries is well
// formed, and a conflict depends on what was stored first. A requeued
// letter is a new entry at a new position, so it is not skipped.
func DeadPositions(ctx context.Context, rdb redis.UniversalClient, stream, deadKey string, ids []string) ([]bool, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	cmd := deadPositionsCmd(ctx, rdb, deadKey, ids)
	dead, err := deadPositionsOf(cmd, len(ids))
	if err != nil {
		return nil, err
	}
	scores, _ := cmd.Slice() // read by deadPositionsOf
	for i, s := range scores {
		if negativeScore(s) {
			dead[i] = settleOrphanClaim(ctx, rdb, stream, deadKey, ids[i], scoreOf(s))
		}
	}
	return dead, nil
}

// DeadEntries is DeadPositions for the positions of entries read from the
// stream (an XRANGE page): whether the renderers dead-lettered each.
func DeadEntries(ctx context.Context, rdb redis.UniversalClient, stream, deadKey string, xs []redis.XMessage) ([]bool, error) {
	ids := make([]string, len(xs))
	for i, x := range xs {
		ids[i] = x.ID
	}
	return DeadPositions(ctx, rdb, stream, deadKey, ids)
}

// deadPositionsCmd sends (or, on a pipeline, queues) the ZMSCORE of ids in
// deadKey's dead positions set. It goes through Do: go-redis's ZMScore
// reads a member that is absent as 0, the score of a position of ms 0
// (XADD key 0-1) too, so an absent position could not be told from a dead
// one.
func deadPositionsCmd(ctx context.Context, rdb doer, deadKey string, ids []string) *redis.Cmd {
	args := make([]any, 0, 2+len(ids))
	args = append(args, "ZMSCORE", deadPositionsKey(deadKey))
	for _, id := range ids {
		args = append(args, id)
	}
	return rdb.Do(ctx, args...)
}

// doer is what sends a command: a client, or a pipeline that queues it.
type doer interface {
	Do(ctx context.Context, args ...any) *redis.Cmd
}

// deadPositionsOf reads the reply of deadPositionsCmd for n positions.
func deadPositionsOf(cmd *redis.Cmd, n int) ([]bool, error) {
	scores, err := cmd.Slice()
	if err != nil {
		return nil, fmt.Errorf("feed: dead positions: %w", err)
	}
	if len(scores) != n {
		return nil, fmt.Errorf("feed: dead positions: %d scores for %d positions", len(scores), n)
	}
	dead := make([]bool, n)
	for i, s := range scores {
		dead[i] = s != nil
	}
	return dead, nil
}

// skipDead moves the entries of todo whose positions the renderers
// dead-lettered to s.dead and returns the rest, in order: one ZMSCORE per
// stream of the batch, in one pipeline (one per node on a cluster). Only a
// batch that may re-read positions asks (reread).
//
// An entry comes back to the group after its dead letter only when the
// group is rewound (feedctl replay) or a peer that held it so re-delivered
// died. Handed to the handler again, it was judged afresh and could pass
// (DeadPositions says which do), so a replay stored lines no live read
// had (e2e/TestReplaySkipsDeadLetteredPositions). Now it is settled as
// the live reader settles an entry it dead-lettered before: deadScript
// finds the position recorded, writes no second letter, acks it and
// counts a duplicate (Stats.DeadDuplicates). A claimed position (a letter
// under way in single-key steps) is no letter yet: it goes as the own
// pending list sends one (skipClaimed), with the claimed reason, since
// the steps that take the claim over may write its letter. Sent as a
// duplicate, that letter said "dead-lettered already" and was counted
// under the reason duplicate
// (TestReplayedClaimedPositionLetterSaysClaimed).
//
// The entries of a stream whose node does not answer are left pending
// (as withAttempts leaves them), for the own pending list or a claim once
// it answers, which then look them up (streamState.rewound,
// TestRewoundLeftPendingLookedUp). A set that cannot be read (an error
// reply: another type under its key) does not stop the game: its entries
// are judged afresh, as before there was a set, and the failure counted
// and logged.
func (c *Consumer) skipDead(path string, todo []delivery, s *settlement) ([]delivery, error) {
	ctx, cancel := c.callCtx(c.ctx, 5*time.Second)
	defer cancel()
	byStream := map[string][]string{}
	for _, d := range todo {
		if path != pathNew && !c.rewound(d) {
			continue // pending or claimed, not a re-read (reread)
		}
		byStream[d.stream] = append(byStream[d.stream], d.x.ID)
	}
	cmds := c.lookUpDeadPositions(ctx, byStream)
	dead := map[string]bool{}    // stream+"\x00"+pos
	claimed := map[string]bool{} // of those, the claims (a negative score)
	left := map[string]bool{}    // streams whose entries stay pending
	for stream, cmd := range cmds {
		ids := byStream[stream]
		is, err := deadPositionsOf(cmd, len(ids))
		if err != nil {
			if serverError(err) {
				c.deadSetUnreadable(stream, err)
				continue
			}
			if c.deadPosLeftPending(stream, err) {
				left[stream] = true
				st := c.streams[stream]
				for _, id := range ids {
					st.rewound = newerID(st.rewound, id)
				}
				continue
			}
			return nil, err
		}
		scores, _ := cmd.Slice() // read by deadPositionsOf
		for i, id := range ids {
			if is[i] {
				dead[stream+"\x00"+id] = true
				claimed[stream+"\x00"+id] = negativeScore(scores[i])
			}
		}
	}
	if len(dead) == 0 && len(left) == 0 {
		return todo, nil
	}
	out := todo[:0]
	for _, d := range todo {
		switch {
		case left[d.stream]:
		case claimed[d.stream+"\x00"+d.x.ID]:
			d.reason, d.label = claimedReason, "claimed"
			s.dead = append(s.dead, d)
		case dead[d.stream+"\x00"+d.x.ID]:
			d.reason, d.label = "dead-lettered already", "duplicate"
			s.dead = append(s.dead, d)
		default:
			out = append(out, d)
		}
	}
	return out, nil
}

// deadSetUnreadable counts and logs (sampled) a dead positions set that
// answered with an error (another type under its key): the entries it was
// asked about are judged afresh, as before there was a set, rather than
// stop the game.
func (c *Consumer) deadSetUnreadable(stream string, err error) {
	c.fail("deadpos", err)
	if ok, skipped := c.sample.Allow("deadpos failed"); ok {
		c.log.Warn("dead positions set unreadable; entries judged afresh", "stream", stream,
			"dead_key", c.cfg.DeadKey(stream), "err", err, "similar_unlogged", skipped)
	}
}

// deadPosLeftPending counts a look at stream's dead positions that failed
// with err (a connection error: a timeout, a dropped connection) and sets
// the stream aside, marked as one with entries pending, so that its
// entries in the batch stay pending for a later turn: whether they were
// dead-lettered is not known, and judged afresh they could be stored
// beside their letter. It reports false when the stream cannot be set
// aside (unknown, or the consumer stopping): err then ends the batch.
func (c *Consumer) deadPosLeftPending(stream string, err error) bool {
	c.fail("deadpos", err)
	st := c.streams[stream]
	if st == nil || c.setAside([]*streamState{st}, err) != nil {
		return false
	}
	c.markPending(stream)
	return true
}

// rewound reports whether d is at or before the newest re-read position
// of its stream that skipDead left pending (streamState.rewound).
func (c *Consumer) rewound(d delivery) bool {
	st := c.streams[d.stream]
	return st != nil && st.rewound != "" && cmpID(d.x.ID, st.rewound) <= 0
}

// lookUpDeadPositions asks the dead positions set of each stream of
// byStream for the scores of its positions, one ZMSCORE a stream in one
// pipeline (a node's each on a cluster), and returns the commands by
// stream, answered: skipDead and skipClaimed read them each their way.
func (c *Consumer) lookUpDeadPositions(ctx context.Context, byStream map[string][]string) map[string]*redis.Cmd {
	p := c.pipes()
	cmds := make(map[string]*redis.Cmd, len(byStream))
	for stream, ids := range byStream {
		cmds[stream] = deadPositionsCmd(ctx, p.of(stream), c.cfg.DeadKey(stream), ids)
	}
	p.exec(ctx)
	return cmds
}
