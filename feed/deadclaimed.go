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
// group judges its own deliveries. A set that cannot be read leaves the
// entries to be judged afresh, as before claims existed.
func (c *Consumer) skipClaimed(todo []delivery, s *settlement) []delivery {
	ctx, cancel := c.callCtx(c.ctx, 5*time.Second)
	defer cancel()
	byStream := map[string][]string{}
	for _, d := range todo {
		byStream[d.stream] = append(byStream[d.stream], d.x.ID)
	}
	cmds := c.lookUpDeadPositions(ctx, byStream)
	claimed := map[string]bool{} // stream+"\x00"+pos
	for stream, cmd := range cmds {
		scores, err := cmd.Slice()
		if err != nil || len(scores) != len(byStream[stream]) {
			if err != nil {
				c.fail("deadpos", err)
			}
			continue
		}
		for i, id := range byStream[stream] {
			if negativeScore(scores[i]) {
				claimed[stream+"\x00"+id] = true
			}
		}
	}
	if len(claimed) == 0 {
		return todo
	}
	out := todo[:0]
	for _, d := range todo {
		if claimed[d.stream+"\x00"+d.x.ID] {
			d.reason, d.label = claimedReason, "claimed"
			s.dead = append(s.dead, d)
			continue
		}
		out = append(out, d)
	}
	return out
}

// scoreOf reads a ZMSCORE reply element that negativeScore accepted.
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
func negativeScore(v any) bool {
	switch s := v.(type) {
	case float64:
		return s < 0
	case string:
		f, err := strconv.ParseFloat(s, 64)
		return err == nil && f < 0
	}
	return false
}
