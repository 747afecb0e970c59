package feed

import (
	"strconv"
	"time"
)

// skipClaimed moves the entries of todo, which came back by the own
// pending list or a claim, whose positions are claimed in the dead
// positions set (a negative score: a dead letter under way in single-key
// steps, deadsteps.go) to s.dead, and returns the rest in order: one
// ZMSCORE per stream of the batch, in one pipeline.
//
// Such an entry is pending because the steps stopped after the claim (the
// writer died, or a reply was lost). Handed to the handler again, a
// verdict that changed (a future id whose time has come) acked it as
// handled, and the claim stayed for good with no letter: DeadPositions
// called the position dead, so a catch-up, a replay and feedctl rebuild
// skipped a line the store has (TestClaimedPendingEntryNotJudgedAfresh).
// Settled as a dead letter, deadScript answers deadClaimedReply and the
// steps take the claim over once stale, or leave the entry pending while
// it is live. A position recorded with its ms is not looked at here: each
// group judges its own deliveries. A set that cannot be read (an error
// reply: another type under its key) leaves the entries to be judged
// afresh, as before claims existed, counted and logged as skipDead does.
//
// A stream whose look fails otherwise (a connection error: a timeout, a
// dropped connection) is set aside and its entries left pending, as
// skipDead leaves them, for the own pending list or a claim once it
// answers, which look again: whether they are claimed is not known.
// Judged afresh, a claimed one that passed was stored and acked with its
// claim left, beside the letter its writer may have written already (an
// XADD whose reply was lost) or another group's take-over of the claim
// wrote later: a line and a dead letter for one entry
// (TestClaimLookupFailedLeavesPending). The error is returned only when
// the stream cannot be set aside (the consumer stopping).
func (c *Consumer) skipClaimed(todo []delivery, s *settlement) ([]delivery, error) {
	ctx, cancel := c.callCtx(c.ctx, 5*time.Second)
	defer cancel()
	byStream := map[string][]string{}
	for _, d := range todo {
		byStream[d.stream] = append(byStream[d.stream], d.x.ID)
	}
	cmds := c.lookUpDeadPositions(ctx, byStream)
	claimed := map[string]bool{} // stream+"\x00"+pos
	left := map[string]bool{}    // streams whose entries stay pending
	for stream, cmd := range cmds {
		scores, err := cmd.Slice()
		if err != nil {
			if serverError(err) {
				c.deadSetUnreadable(stream, err)
				continue
			}
			if !c.deadPosLeftPending(stream, err) {
				return nil, err
			}
			left[stream] = true
			continue
		}
		if len(scores) != len(byStream[stream]) {
			continue
		}
		for i, id := range byStream[stream] {
			if negativeScore(scores[i]) {
				claimed[stream+"\x00"+id] = true
			}
		}
	}
	if len(claimed) == 0 && len(left) == 0 {
		return todo, nil
	}
	out := todo[:0]
	for _, d := range todo {
		switch {
		case left[d.stream]:
		case claimed[d.stream+"\x00"+d.x.ID]:
			d.reason, d.label = claimedReason, "claimed"
			s.dead = append(s.dead, d)
		default:
			out = append(out, d)
		}
	}
	return out, nil
}

// scoreOf reads a ZMSCORE reply element: a string in RESP2, a double in
// RESP3; 0 for an absent member (nil) or an unreadable one.
func scoreOf(v any) float64 {
	switch s := v.(type) {
	case float64:
		return s
	case string:
		f, _ := strconv.ParseFloat(s, 64)
		return f
	}
	return 0
}

// claimedReason is the dead_reason of an entry settled because its
// position is claimed: the letter a take-over of the claim writes.
const claimedReason = "dead letter under way (its position claimed)"

// negativeScore reports whether a ZMSCORE reply element is a score below
// zero: a string in RESP2, a double in RESP3.
func negativeScore(v any) bool { return scoreOf(v) < 0 }
