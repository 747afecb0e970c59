package feed

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/internal/event"
)

// DeadLetter is one entry of a dead-letter stream.
type DeadLetter struct {
	DeadID   string            // position in the dead-letter stream
	EvtID    string            // the original id field ("" when it had none)
	Fields   map[string]string // the original fields, id included
	Reason   string
	Attempts int64
	Consumer string    // who dead-lettered it
	StreamID string    // its position in the original stream
	At       time.Time // when
	// Truncated lists the fields cut to a prefix (DeadTruncated) and
	// Dropped the fields left out (DeadDropped): such a dead letter is not
	// the whole entry, and cannot be requeued.
	Truncated string
	Dropped   string
}

// ListDead returns up to n dead letters of deadKey, oldest first (n <= 0:
// all of them).
func ListDead(ctx context.Context, rdb redis.UniversalClient, deadKey string, n int64) ([]DeadLetter, error) {
	var xs []redis.XMessage
	var err error
	if n > 0 {
		xs, err = rdb.XRangeN(ctx, deadKey, "-", "+", n).Result()
	} else {
		xs, err = rdb.XRange(ctx, deadKey, "-", "+").Result()
	}
	if err != nil {
		return nil, fmt.Errorf("feed: list dead %s: %w", deadKey, err)
	}
	out := make([]DeadLetter, 0, len(xs))
	for _, x := range xs {
		d := DeadLetter{DeadID: x.ID, Fields: map[string]string{}}
		for k, v := range x.Values {
			s, _ := v.(string)
			switch k {
			case DeadReason:
				d.Reason = s
			case DeadAttempts:
				d.Attempts, _ = strconv.ParseInt(s, 10, 64)
			case DeadConsumer:
				d.Consumer = s
			case DeadStreamID:
				d.StreamID = s
			case DeadAt:
				d.At, _ = time.Parse(time.RFC3339Nano, s)
			case DeadTruncated:
				d.Truncated = s
			case DeadDropped:
				d.Dropped = s
			default:
				d.Fields[originalFieldName(k)] = s
			}
		}
		d.EvtID = d.Fields[event.FieldID]
		out = append(out, d)
	}
	return out, nil
}

// requeueScript moves a dead letter back to its stream atomically: XADD the
// original fields (the renderer's dead_* ones left out, the original ones
// kept under DeadFieldPrefix put back under their own names, the ones in
// ARGV[2..] pairs replaced or added) and XDEL it from the dead stream. Both
// keys share the game's hash slot.
var requeueScript = redis.NewScript(`
local e = redis.call('XRANGE', KEYS[2], ARGV[1], ARGV[1])
if #e == 0 then return false end
local skip = {dead_reason = true, dead_attempts = true, dead_consumer = true, dead_stream_id = true, dead_at = true}
local escaped = '` + DeadFieldPrefix + `'
for i = 1, #e[1][2], 2 do
  local k = e[1][2][i]
  if k == 'dead_truncated' or k == 'dead_dropped' then
    return redis.error_reply('ERR dead letter was truncated; its original cannot be requeued')
  end
end
local fix, order = {}, {}
for i = 2, #ARGV, 2 do
  if fix[ARGV[i]] == nil then order[#order + 1] = ARGV[i] end
  fix[ARGV[i]] = ARGV[i + 1]
end
local f = e[1][2]
local args, used = {}, {}
for i = 1, #f, 2 do
  local k = f[i]
  local own = skip[k]
  if string.sub(k, 1, #escaped) == escaped then
    k, own = string.sub(k, #escaped + 1), false
  end
  if not own then
    args[#args + 1] = k
    if fix[k] ~= nil then
      args[#args + 1] = fix[k]
      used[k] = true
    else
      args[#args + 1] = f[i + 1]
    end
  end
end
for _, k in ipairs(order) do
  if not used[k] then
    args[#args + 1] = k
    args[#args + 1] = fix[k]
  end
end
if #args == 0 then return redis.error_reply('ERR dead letter has no original fields') end
local id = redis.call('XADD', KEYS[1], '*', unpack(args))
redis.call('XDEL', KEYS[2], ARGV[1])
return id
`)

// RequeueDead moves the dead letter deadID of deadKey back to stream with
// its original fields, atomically, and returns its new stream position. The
// consumers then handle it as a new entry (a still-malformed entry is
// dead-lettered again, once, at its new position). ErrDeadNotFound if there
// is no such dead letter; a truncated dead letter is refused. Like any
// writer, the caller then moves the game's registry score (feedctl does):
// the registry is in another hash slot than the streams, so the script
// cannot, and consumers following the registry read a quiet game only when
// its score moves.
func RequeueDead(ctx context.Context, rdb redis.UniversalClient, stream, deadKey, deadID string) (string, error) {
	return RequeueDeadFixed(ctx, rdb, stream, deadKey, deadID, nil)
}

// RequeueDeadFixed is RequeueDead with some fields replaced (or added) by
// fix first, in the same script: an operator's repair of a malformed entry
// cannot race a concurrent requeue or drop of the same letter.
func RequeueDeadFixed(ctx context.Context, rdb redis.UniversalClient, stream, deadKey, deadID string, fix map[string]string) (string, error) {
	args := []any{deadID}
	keys := make([]string, 0, len(fix))
	for k := range fix {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		args = append(args, k, fix[k])
	}
	if err := confirmLetterPos(ctx, rdb, deadKey, deadID); err != nil {
		return "", fmt.Errorf("feed: requeue %s %s: %w", deadKey, deadID, err)
	}
	pos, err := requeueScript.Run(ctx, rdb, []string{stream, deadKey}, args...).Text()
	if isNil(err) {
		return "", fmt.Errorf("%w: %s %s", ErrDeadNotFound, deadKey, deadID)
	}
	if err != nil {
		return "", fmt.Errorf("feed: requeue %s %s: %w", deadKey, deadID, err)
	}
	return pos, nil
}

// DropDead deletes the dead letter deadID of deadKey for good.
func DropDead(ctx context.Context, rdb redis.UniversalClient, deadKey, deadID string) error {
	if err := confirmLetterPos(ctx, rdb, deadKey, deadID); err != nil {
		return fmt.Errorf("feed: drop dead %s %s: %w", deadKey, deadID, err)
	}
	n, err := rdb.XDel(ctx, deadKey, deadID).Result()
	if err != nil {
		return fmt.Errorf("feed: drop dead %s %s: %w", deadKey, deadID, err)
	}
	if n == 0 {
		return fmt.Errorf("%w: %s %s", ErrDeadNotFound, deadKey, deadID)
	}
	return nil
}

// confirmClaimScript records position ARGV[1] in the dead positions set
// KEYS[1] with its ms (ARGV[2]) if it is claimed there (a negative score),
// and leaves any other score, or its absence, as it is.
var confirmClaimScript = redis.NewScript(`
local s = redis.call('ZSCORE', KEYS[1], ARGV[1])
if s and tonumber(s) < 0 then
  return redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
end
return 0
`)

// confirmLetterPos confirms, before the dead letter deadID of deadKey is
// dropped or requeued, a claim of its stream position (deadsteps.go) that
// its writer left unconfirmed: the writer wrote the letter and stopped
// before step 4. Left a claim, it was taken over once stale, the dead
// stream searched for the letter, which the drop or requeue had taken
// out, and the letter written a second time
// (TestStaleClaimLetterDroppedOrRequeuedNotWrittenAgain). Confirmed, the
// take-over finds the position recorded and only acks the entry. Each
// step is a single-key command, routed by ASK during a migration; a
// letter that is gone, or whose position is not a stream id, changes
// nothing here.
func confirmLetterPos(ctx context.Context, rdb redis.UniversalClient, deadKey, deadID string) error {
	xs, err := rdb.XRangeN(ctx, deadKey, deadID, deadID, 1).Result()
	if err != nil {
		return fmt.Errorf("read letter: %w", err)
	}
	if len(xs) == 0 {
		return nil
	}
	pos, _ := xs[0].Values[DeadStreamID].(string)
	msText, _, ok := strings.Cut(pos, "-")
	ms, perr := strconv.ParseUint(msText, 10, 64)
	if !ok || perr != nil {
		return nil
	}
	if err := confirmClaimScript.Run(ctx, rdb, []string{deadPositionsKey(deadKey)}, pos, ms).Err(); err != nil {
		return fmt.Errorf("confirm position %s: %w", pos, err)
	}
	return nil
}
