package feed

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Dead letters in single-key steps.
//
// deadScript names the game's three keys, and while the game's slot
// migrates Redis refuses it with TRYAGAIN whenever one of them is missing
// on the node asked: the source asks for every key (it holds the stream,
// not the dead keys of a game with no letter yet), and the importing node
// refuses a command over several keys unless it holds them all, ASKING or
// not. Retrying the script on the importing node is therefore no way out:
// a game without dead letters has no dead keys anywhere until its first
// letter creates them. The entry stayed pending, and was dead-lettered
// only at the first claim after the migration ended
// (TestClusterDeadLetterDuringSlotMigration).
//
// So on TRYAGAIN the settle takes the same steps one key at a time, each
// a command (or a one-key script) that go-redis sends on by ASK to where
// its key is:
//
//  1. XPENDING of the position, filtered by this consumer: one no longer
//     ours is left alone, as the script leaves it.
//  2. Claim the position in the dead positions set (deadClaimScript): a
//     position recorded with its milliseconds (a score >= 0) has its
//     letter, and is only acked (a duplicate); one claimed by another
//     writer less than deadClaimTTL ago is left pending (errDeadClaimed);
//     otherwise it is claimed: scored minus the claim's time, Redis's
//     clock. The claim is the once-guard: of two groups dead-lettering
//     the same position at once, one writes.
//  3. XADD the letter. A reply error (the dead key holds another type)
//     takes the claim back: nothing has changed, as with the script.
//  4. XACK, if the entry is still this consumer's (deadAckScript).
//  5. Confirm: the position scored with its milliseconds (deadConfirmScript,
//     which bounds the set as the script does).
//
// The entry is acked only once its letter exists, so it is never lost: a
// step that fails leaves it pending, its position claimed, and the next
// attempt (its own pending list, a claim) takes the steps again. A claim
// whose writer stopped between 2 and 4 (it died, lost its
// connection, or its XADD's reply was lost) is taken over once it is
// deadClaimTTL old, by the steps or, once the migration is over, by the
// script, which hands a claimed position to these steps
// (deadClaimedReply): the dead stream is first searched for a letter of
// the position written since the claim (deadLetterSince), which is then
// confirmed and not written twice; a letter dropped or requeued meanwhile
// is not there to be found, so DropDead and RequeueDead confirm its
// position first (confirmLetterPos). A letter the dead stream's MAXLEN ~
// trimmed before the take-over is not there either, and is written again
// (docs/reader-law.md, "Dead letters", the known limit): nothing tells
// it from a letter never written, and not writing would lose those. An
// entry back by the own pending list or a claim whose position is
// claimed is settled by these steps, not handed to the handler again
// (skipClaimed). A claim counts as dead-lettered for DeadPositions: the
// entry is on its way to a letter. One whose entry no group has pending
// any more (its group destroyed, the entry acked by hand, or by a writer
// that stopped between 4 and 5) is settled by DeadPositions once stale
// (settleOrphanClaim): confirmed if its letter exists, else removed.
//
// On a single node the script is never refused: it stays one atomic
// script, and these steps run only for a claim a migration left.

// deadClaimedReply is what deadScript answers for a position claimed by
// these steps.
const deadClaimedReply = "claimed"

// deadClaimTTL is how long a claim holds off other writers: far longer
// than the steps' own deadline (the settle's 5 s), so a live writer is
// never taken over. deadClaimSlack is how far before a stale claim the
// dead stream is searched for its letter: the claim's time is the dead
// positions set's node's clock, the letter's id the dead stream's node's.
const (
	deadClaimTTL   = time.Minute
	deadClaimSlack = time.Minute
)

// deadClaimScript claims a position in the dead positions set KEYS[1]
// (ARGV: the position, the claim's TTL in ms). Returns {1} if the
// position is recorded (its letter exists), {2} if another writer claimed
// it less than the TTL ago, or {0, the claim's ms, the stale claim's ms
// or 0} once claimed.
var deadClaimScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local s = redis.call('ZSCORE', KEYS[1], ARGV[1])
local prev = 0
if s then
  s = tonumber(s)
  if s >= 0 then return {1} end
  if now + s < tonumber(ARGV[2]) then return {2} end
  prev = -s
end
redis.call('ZADD', KEYS[1], -now, ARGV[1])
return {0, now, prev}
`)

// deadUnclaimScript takes back the claim of ARGV[1] in KEYS[1] made at
// ARGV[2] ms, unless another writer took it over since.
var deadUnclaimScript = redis.NewScript(`
local s = redis.call('ZSCORE', KEYS[1], ARGV[1])
if s and tonumber(s) == -tonumber(ARGV[2]) then
  return redis.call('ZREM', KEYS[1], ARGV[1])
end
return 0
`)

// deadConfirmScript records ARGV[1] in the dead positions set KEYS[1]
// with its ms (ARGV[2]) and bounds the set (ARGV[3] the horizon's ms,
// ARGV[4] the cap), as deadScript does.
var deadConfirmScript = redis.NewScript(`
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
local pkey, horizon, cap = KEYS[1], ARGV[3], tonumber(ARGV[4])
` + deadPosTrimLua + `
return 1
`)

// deadAckScript XACKs position ARGV[2] of stream KEYS[1] for group
// ARGV[1] if it is still pending with consumer ARGV[3]: as in deadScript,
// an entry a peer claimed since step 1 is the peer's, and is not acked
// from under it.
var deadAckScript = redis.NewScript(`
if #redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[2], ARGV[2], 1, ARGV[3]) == 0 then
  return 0
end
return redis.call('XACK', KEYS[1], ARGV[1], ARGV[2])
`)

// deadBySteps dead-letters, in the single-key steps above, each entry of
// dead whose script was refused with TRYAGAIN or answered
// deadClaimedReply, and puts its result in cmds[i] in the script's form.
func (c *Consumer) deadBySteps(ctx context.Context, dead []delivery, cmds []*redis.Cmd, at string) {
	for i, d := range dead {
		err := cmds[i].Err()
		claimed := err == nil && cmds[i].Val() == deadClaimedReply
		if !claimed && errCode(err) != "TRYAGAIN" {
			continue
		}
		keys, args := c.deadArgs(d, at)
		cmd := redis.NewCmd(ctx)
		if v, err := c.deadSteps(ctx, keys, args); err != nil {
			cmd.SetErr(err)
		} else {
			cmd.SetVal(v)
		}
		cmds[i] = cmd
	}
}

// deadSteps takes the steps for one entry (deadArgs's keys and args) and
// answers as deadScript does: redis.Nil (not pending with this
// consumer), "" (a letter exists) or the new letter's id; errDeadClaimed
// if another writer's claim is live.
func (c *Consumer) deadSteps(ctx context.Context, keys []string, args []any) (any, error) {
	stream, dk, pk := keys[0], keys[1], keys[2]
	pos, _ := args[1].(string)
	ms, horizon, posCap := args[3], args[4], args[5]
	mine, err := c.rdb.XPendingExt(ctx, &redis.XPendingExtArgs{
		Stream: stream, Group: c.cfg.Group, Start: pos, End: pos, Count: 1, Consumer: c.cfg.Consumer,
	}).Result()
	if err != nil {
		return nil, fmt.Errorf("feed: dead-letter %s %s: pending: %w", stream, pos, err)
	}
	if len(mine) == 0 {
		return nil, redis.Nil
	}
	ack := func() error {
		if err := deadAckScript.Run(ctx, c.rdb, []string{stream}, c.cfg.Group, pos, c.cfg.Consumer).Err(); err != nil {
			return fmt.Errorf("feed: dead-letter %s %s: ack: %w", stream, pos, err)
		}
		return nil
	}
	confirm := func() error {
		if err := deadConfirmScript.Run(ctx, c.rdb, []string{pk}, pos, ms, horizon, posCap).Err(); err != nil {
			return fmt.Errorf("feed: dead-letter %s %s: confirm position: %w", stream, pos, err)
		}
		return nil
	}
	claim, err := deadClaimScript.Run(ctx, c.rdb, []string{pk}, pos, deadClaimTTL.Milliseconds()).Int64Slice()
	if err != nil {
		return nil, fmt.Errorf("feed: dead-letter %s %s: claim position: %w", stream, pos, err)
	}
	switch claim[0] {
	case 1:
		return "", ack()
	case 2:
		return nil, fmt.Errorf("%w: %s %s", errDeadClaimed, stream, pos)
	}
	if len(claim) != 3 {
		return nil, fmt.Errorf("feed: dead-letter %s %s: claim position: reply %v", stream, pos, claim)
	}
	at, stale := claim[1], claim[2]
	if stale > 0 {
		// The stale claim's writer may have written the letter before
		// it stopped: write none twice.
		found, err := deadLetterSince(ctx, c.rdb, dk, pos, stale-deadClaimSlack.Milliseconds())
		if err != nil {
			return nil, err
		}
		if found {
			if err := ack(); err != nil {
				return nil, err
			}
			return "", confirm()
		}
	}
	xadd := append([]any{"XADD", dk, "MAXLEN", "~", args[2], "*"}, args[7:]...)
	id, err := c.rdb.Do(ctx, xadd...).Text()
	if err != nil {
		if serverError(err) {
			// Nothing written: the claim goes, and the entry waits
			// pending as the script leaves it. Should this fail, the
			// claim goes stale and is taken over.
			_ = deadUnclaimScript.Run(ctx, c.rdb, []string{pk}, pos, at).Err()
		}
		return nil, fmt.Errorf("feed: dead-letter %s %s: write letter: %w", stream, pos, err)
	}
	// Acked before the position is confirmed: while an entry is pending
	// after its letter, its position stays claimed, and it comes back to
	// these steps, which find the letter. Confirmed first, an ack that
	// failed left it pending with its position recorded as any letter's,
	// and it came back to the handler, to be judged afresh
	// (TestDeadLetterStepsAckFailedNotJudgedAfresh). One acked whose
	// confirm fails keeps a claim with its letter: a take-over or
	// settleOrphanClaim confirms it.
	if err := ack(); err != nil {
		return nil, err
	}
	if err := confirm(); err != nil {
		return nil, err
	}
	return id, nil
}

// deadLetterSince reports whether the dead stream deadKey holds a letter
// of stream position pos written at or after ms (by its id).
func deadLetterSince(ctx context.Context, rdb redis.UniversalClient, deadKey, pos string, ms int64) (bool, error) {
	start := strconv.FormatInt(max(ms, 0), 10)
	for {
		xs, err := rdb.XRangeN(ctx, deadKey, start, "+", 100).Result()
		if err != nil {
			return false, fmt.Errorf("feed: dead-letter: search %s for %s: %w", deadKey, pos, err)
		}
		for _, x := range xs {
			if v, _ := x.Values[DeadStreamID].(string); v == pos {
				return true, nil
			}
		}
		if len(xs) < 100 {
			return false, nil
		}
		start = "(" + xs[len(xs)-1].ID
	}
}
