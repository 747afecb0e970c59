package feed

import (
	"context"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// orphanClaimScript looks at the claim of position ARGV[2] in the dead
// positions set KEYS[2] of stream KEYS[1], read as score ARGV[3] (minus
// the claim's ms). It answers 1 if it is still that claim, at least
// ARGV[4] ms old by Redis's clock (stale: its writer stopped), and no
// group of the stream has the entry pending (so no own pending list nor
// claim will bring it back to the steps that take a stale claim over);
// with ARGV[1] "remove" it then removes the claim. Otherwise it answers
// 0 and changes nothing. One script over the stream and the set, which
// share the game's slot: no group can take the entry between the look
// and the removal.
var orphanClaimScript = redis.NewScript(`
local s = redis.call('ZSCORE', KEYS[2], ARGV[2])
if not s or tonumber(s) ~= tonumber(ARGV[3]) then return 0 end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if now + tonumber(s) < tonumber(ARGV[4]) then return 0 end
if redis.call('EXISTS', KEYS[1]) == 1 then
  for _, g in ipairs(redis.call('XINFO', 'GROUPS', KEYS[1])) do
    local name
    for i = 1, #g, 2 do
      if g[i] == 'name' then name = g[i + 1] end
    end
    if #redis.call('XPENDING', KEYS[1], name, ARGV[2], ARGV[2], 1) > 0 then return 0 end
  end
end
if ARGV[1] == 'remove' then redis.call('ZREM', KEYS[2], ARGV[2]) end
return 1
`)

// settleOrphanClaim settles, where it can, the claim of position pos (its
// score in the dead positions set of deadKey) that a look at the set met,
// and reports whether the position still counts as dead-lettered.
//
// A claim is the once-guard of a letter written in single-key steps
// (deadsteps.go), taken over once stale by the steps when its pending
// entry comes back. An entry that never comes back (its group destroyed,
// acked by hand) left the claim for good, counted as dead: a catch-up and
// feedctl rebuild skipped an entry that had no letter
// (TestStaleClaimOfVanishedEntryNoLongerDead). Such a claim, stale and
// pending in no group (orphanClaimScript), is settled as the take-over
// would: if the dead stream holds a letter of the position written since
// the claim (its writer stopped after its XADD) the position is confirmed
// and stays dead; otherwise the claim is removed and the position is not
// dead. Either way no letter is written and no pending entry is touched:
// a group that delivers the entry later (a rewind, a cursor below it)
// judges it afresh and writes its one letter by deadScript, the position
// absent. A live claim, or one whose entry a group still has pending, is
// left as it is and counts, and so is one the look could not settle
// (a failed call, a migration's TRYAGAIN): the answer is the set's, as
// before.
func settleOrphanClaim(ctx context.Context, rdb redis.UniversalClient, stream, deadKey, pos string, score float64) bool {
	pk := deadPositionsKey(deadKey)
	scoreText := strconv.FormatFloat(score, 'f', -1, 64)
	ttl := deadClaimTTL.Milliseconds()
	if n, err := orphanClaimScript.Run(ctx, rdb, []string{stream, pk}, "look", pos, scoreText, ttl).Int(); err != nil || n == 0 {
		return true
	}
	found, err := deadLetterSince(ctx, rdb, deadKey, pos, int64(-score)-deadClaimSlack.Milliseconds())
	if err != nil {
		return true
	}
	if found {
		ms, _ := splitID(pos)
		_ = confirmClaimScript.Run(ctx, rdb, []string{pk}, pos, ms).Err()
		return true
	}
	n, err := orphanClaimScript.Run(ctx, rdb, []string{stream, pk}, "remove", pos, scoreText, ttl).Int()
	return err != nil || n == 0
}

// settleDeletedClaims settles, as DeadPositions does, the stale claims of
// positions of stream that this consumer found deleted while pending
// (XDEL, a trim) and dropped from its pending list. No reader meets such
// a position again, since the stream no longer holds it, so its claim
// stayed in the set for good: the set's trim spares claims
// (TestStaleClaimOfDeletedEntryCleared). Its answer and errors are left:
// a claim not settled here is one a group still has pending, or one the
// next reader to meet its position settles.
func (c *Consumer) settleDeletedClaims(stream string, ids []string) {
	ctx, cancel := c.callCtx(c.ctx, 5*time.Second)
	defer cancel()
	_, _ = DeadPositions(ctx, c.rdb, stream, c.cfg.DeadKey(stream), ids)
}
