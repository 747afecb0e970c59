package feed

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/redis/go-redis/v9"
)

// Fields a dead letter may add when it could not copy the entry whole.
const (
	// DeadTruncated lists the fields whose key or value was cut to a
	// prefix: one line each, "key <size> bytes sha256 <hex>".
	DeadTruncated = "dead_truncated"
	// DeadDropped says how many fields (and bytes) were left out once the
	// dead letter's budget was spent.
	DeadDropped = "dead_dropped"
	// DeadFieldPrefix is put before an original field name that starts
	// with "dead_", the prefix of the dead letter's own fields: in the
	// letter, an entry's dead_truncated is "dead_field:dead_truncated".
	// Beside the renderer's fields it once read as theirs (an original
	// dead_truncated made the letter truncated, and refused for requeue).
	// ListDead and the requeue take the prefix off again.
	DeadFieldPrefix = "dead_field:"
)

// deadOwnPrefix starts the name of every field a dead letter adds.
const deadOwnPrefix = "dead_"

// deadFieldName is the name an original field has in a dead letter: its
// own, unless it starts with deadOwnPrefix (then DeadFieldPrefix and its
// own). No renderer's field starts with DeadFieldPrefix, and every name
// that does is an original one, so the names read back unambiguously.
func deadFieldName(k string) string {
	if strings.HasPrefix(k, deadOwnPrefix) {
		return DeadFieldPrefix + k
	}
	return k
}

// originalFieldName undoes deadFieldName: the original name of a dead
// letter's field that is not one of the renderer's.
func originalFieldName(k string) string {
	if rest, ok := strings.CutPrefix(k, DeadFieldPrefix); ok {
		return rest
	}
	return k
}

// Bounds of one dead letter: whatever the entry's size, its dead letter
// stays under 16 KiB (keys, values and the dead_* fields together).
const (
	deadValueMax  = 512      // bytes of a value kept as a prefix
	deadKeyMax    = 128      // bytes of a key kept as a prefix
	deadBudget    = 10 << 10 // bytes of copied keys and values
	deadNotesMax  = 2 << 10  // bytes of DeadTruncated
	deadReasonMax = 1 << 10  // bytes of the reason
)

// deadPositionsKey names the sorted set of a stream's positions that have a
// dead letter: the dead key's name plus ":pos", so it shares its hash slot
// (the {game} tag) with the stream and the dead stream.
func deadPositionsKey(deadKey string) string { return deadKey + ":pos" }

// DeadPositionsKey returns the key of the dead positions set that goes with
// deadKey (docs/contracts.md, "Keys"): whoever deletes a game's streams
// (feedctl prune -streams) deletes it too, or it outlives them for good.
func DeadPositionsKey(deadKey string) string { return deadPositionsKey(deadKey) }

// deadScript dead-letters one entry atomically: unless the position is in
// the dead positions set already, it XADDs the dead letter (MAXLEN ~ cap)
// and then records the position there; either way it XACKs the original.
// All three keys share the game's hash slot. An entry no longer pending
// with this consumer (a peer settled or claimed it meanwhile) is left
// alone. So there is exactly one dead
// letter per stream position, whatever the number of groups (each acks its
// own delivery, only the first writes), replays (XGROUP SETID re-delivers
// the same positions) or retried settles.
//
// The position is recorded only once the letter is written. A script is
// not a transaction: a command that fails (the dead key holds another
// type) stops it, and the writes before it stay. Recorded first, as it
// once was, a letter that failed was taken for written when the claim
// brought the entry back, and the entry was acked without one
// (TestDeadLetterFailureLeavesPending). Now a failure changes nothing and
// the entry stays pending; a set that cannot be read (ZSCORE fails)
// stops the script before any write.
//
// The set is bounded without reading the stream (its first entry may be
// the 20 MB entry that was dead-lettered): positions more than
// deadPosHorizon older than the one being added (or than this process's
// clock, where that is earlier: a forged position) are forgotten, and past
// deadPosMax members the oldest go. A replay of a position older than that
// would write a second dead letter for it.
//
// Only an entry still pending with this consumer is dead-lettered (the
// extended XPENDING, filtered by consumer). One a peer claimed meanwhile
// (this handler outlived MinIdle while its keep-alive failed) is the
// peer's: it may be handling it now, and may well succeed where this
// consumer did not. Pending with anyone, as the script once checked, the
// entry was dead-lettered and acked under the live peer
// (TestDeadLetterLeavesPeersEntry).
//
// A position whose score is negative is claimed by a dead letter written
// in single-key steps (deadsteps.go: during a migration of the game's
// slot the script is refused): the script changes nothing and answers
// deadClaimedReply, and the caller settles the entry by those steps,
// which know what a claim means.
//
// KEYS: stream, dead stream, dead positions. ARGV: group, position, maxlen,
// the position's ms (the score), the horizon's ms, the set's cap, the
// consumer, fields... Returns false (not pending with this consumer), ""
// (a dead letter exists already), deadClaimedReply or the new dead
// letter's id.
var deadScript = redis.NewScript(`
if #redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[2], ARGV[2], 1, ARGV[7]) == 0 then
  return false
end
local id = ''
local s = redis.call('ZSCORE', KEYS[3], ARGV[2])
if s and tonumber(s) < 0 then
  return '` + deadClaimedReply + `'
end
if not s then
  id = redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[3], '*', unpack(ARGV, 8))
  redis.call('ZADD', KEYS[3], ARGV[4], ARGV[2])
  local pkey, horizon, cap = KEYS[3], ARGV[5], tonumber(ARGV[6])
` + deadPosTrimLua + `
end
redis.call('XACK', KEYS[1], ARGV[1], ARGV[2])
return id
`)

// deadPosTrimLua bounds the dead positions set pkey (horizon the
// horizon's ms, cap its cap: locals of the script) after a position was
// recorded. Claims (negative scores, deadsteps.go) are neither forgotten
// by the horizon nor counted or dropped by the cap: each is a dead letter
// under way, which its writer or the next attempt settles.
const deadPosTrimLua = `
  redis.call('ZREMRANGEBYSCORE', pkey, 0, '(' .. horizon)
  local n = redis.call('ZCOUNT', pkey, 0, '+inf')
  if n > cap then
    local c = redis.call('ZCOUNT', pkey, '-inf', '(0')
    redis.call('ZREMRANGEBYRANK', pkey, c, c + n - cap - 1)
  end
`

// Bounds of the dead positions set of a game.
const (
	deadPosHorizon = 30 * 24 * time.Hour // of stream time
	deadPosMax     = 100000
)

// deadFields returns the fields of d's dead letter, bounded: keys and
// values past their caps are cut to a prefix (on a UTF-8 boundary) and
// listed in DeadTruncated with their size and sha256; fields past the
// budget are left out and counted in DeadDropped. An original field named
// like the letter's own (dead_…) is kept under deadFieldName.
func deadFields(values map[string]any) []any {
	var out []any
	var notes strings.Builder
	notesLeft, budget := 0, deadBudget
	dropped, droppedBytes := 0, 0
	for n, k := range sortedFields(values) {
		v, _ := values[k].(string)
		if n >= maxDeadFields || budget <= 0 {
			dropped++
			droppedBytes += len(k) + len(v)
			continue
		}
		name := deadFieldName(k)
		kk, vv := prefix(name, deadKeyMax), prefix(v, deadValueMax)
		if len(kk) < len(name) || len(vv) < len(v) {
			line := fmt.Sprintf("%s %d bytes sha256 %s\n", kk, len(k)+len(v), sum(k, v))
			if notes.Len()+len(line) <= deadNotesMax {
				notes.WriteString(line)
			} else {
				notesLeft++
			}
		}
		budget -= len(kk) + len(vv)
		out = append(out, kk, vv)
	}
	if notesLeft > 0 {
		fmt.Fprintf(&notes, "and %d more\n", notesLeft)
	}
	if notes.Len() > 0 {
		out = append(out, DeadTruncated, notes.String())
	}
	if dropped > 0 {
		out = append(out, DeadDropped, fmt.Sprintf("%d fields, %d bytes", dropped, droppedBytes))
	}
	return out
}

func sum(k, v string) string {
	h := sha256.New()
	h.Write([]byte(k))
	h.Write([]byte{0})
	h.Write([]byte(v))
	return hex.EncodeToString(h.Sum(nil))
}

// prefix returns s cut to at most n bytes, on a rune boundary: the
// longest such prefix. It once cut while the last four bytes were not
// valid UTF-8 on their own, which they never are when they begin inside a
// three-byte character, so a value of ★ or CJK text kept one character
// (TestDeadLetterKeepsLongestPrefix).
func prefix(s string, n int) string {
	if len(s) <= n {
		return s
	}
	// Back off past the continuation bytes of the character cut, at most
	// UTFMax-1 of them: bytes that are not valid UTF-8 anyway are cut
	// where n says.
	for i := n; i > 0 && i > n-utf8.UTFMax; i-- {
		if utf8.RuneStart(s[i]) {
			return s[:i]
		}
	}
	return s[:n]
}

// deadArgs is the deadScript call for d.
func (c *Consumer) deadArgs(d delivery, at string) (keys []string, args []any) {
	dk := c.cfg.DeadKey(d.stream)
	ms, _ := splitID(d.x.ID)
	// The horizon is measured from the position, or from this process's
	// clock where that is earlier: a producer may choose a position
	// itself (XADD key <ms>-<seq>) a year ahead, and measured from there
	// the horizon forgot every dead position of the game below it
	// (TestForgedFuturePositionKeepsDeadPositions).
	from := min(ms, uint64(max(time.Now().UnixMilli(), 0)))
	horizon := from - min(from, uint64(deadPosHorizon.Milliseconds()))
	args = []any{c.cfg.Group, d.x.ID, c.cfg.DeadMaxLen, strconv.FormatUint(ms, 10),
		strconv.FormatUint(horizon, 10), deadPosMax, c.cfg.Consumer}
	args = append(args, deadFields(d.x.Values)...)
	args = append(args,
		DeadReason, prefix(d.reason, deadReasonMax),
		DeadAttempts, strconv.FormatInt(d.attempts, 10),
		DeadConsumer, c.cfg.Consumer,
		DeadStreamID, d.x.ID,
		DeadAt, at)
	return []string{d.stream, dk, deadPositionsKey(dk)}, args
}
