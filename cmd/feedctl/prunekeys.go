package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/feed"
	"github.com/codemojex/feed/internal/event"
)

// keyMarkScript deletes a key only while its mark, what prune compares it
// by between its plan and its deletion, is the one the plan read (ARGV[1];
// keyMark reads it the same way without a script, so that a -dry-run
// needs no EVAL). A stream's mark is its
// last-generated id, which every XADD moves (an entry trimmed or deleted
// since does not take it back); a sorted set's (the dead positions) its
// size and its lowest and highest members, one of which every dead letter
// written since changes (feed's deadScript adds a position and trims the
// oldest); a missing key's is "". A key gone since the plan (another prune
// took it) is no change: nothing of it to delete or to keep. One key, in one
// script: nothing can be added between the look and the DEL, and it runs on
// a cluster while the key's slot migrates (a key alone is sent on, ASK),
// which a multi-key command is refused (TRYAGAIN;
// TestPruneStreamsDuringSlotMigration). Returns {1, mark} when the key is
// deleted or absent, {0, mark} otherwise.
//
// XINFO STREAM is the one command that says a stream's last-generated id
// (XLEN does not move on an XADD the writer's MAXLEN trims back, and the
// last entry's id, XREVRANGE's, misses an XADD whose entry was deleted
// since), and its answer holds the stream's first and last entries in
// full. Prune reads it once per stream and run, for the plan (keyMark),
// and once more here, on the server, where the entries make no reply;
// the look between the two asks for entries after the mark only
// (unchanged; TestPruneReadsBigEntryOnce).
var keyMarkScript = redis.NewScript(`
local function mark(k)
  local t = redis.call('TYPE', k)['ok']
  if t == 'none' then return '' end
  if t == 'stream' then
    local info = redis.call('XINFO', 'STREAM', k)
    for i = 1, #info, 2 do
      if info[i] == 'last-generated-id' then return 'stream ' .. info[i + 1] end
    end
  elseif t == 'zset' then
    local lo = redis.call('ZRANGE', k, 0, 0)[1] or ''
    local hi = redis.call('ZRANGE', k, -1, -1)[1] or ''
    return 'zset ' .. redis.call('ZCARD', k) .. ' ' .. lo .. ' ' .. hi
  end
  return t
end
local m = mark(KEYS[1])
if m == '' then return {1, m} end
if m == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return {1, m}
end
return {0, m}
`)

// gameKeys are the keys of a game that prune -streams deletes, in the
// order it deletes them: the event stream first, since a dead letter
// follows an entry of it.
func gameKeys(game string) []string {
	dead := event.DeadKey(game)
	return []string{event.StreamKey(game), dead, feed.DeadPositionsKey(dead)}
}

// keyMark returns key's mark as keyMarkScript reads it. Its reads are not
// one snapshot: an entry added between them gives a mark no later look
// matches, and the game is kept, never one that hides the entry.
func (g *global) keyMark(ctx context.Context, key string) (string, error) {
	t, err := g.rdb.Type(ctx, key).Result()
	if err != nil {
		return "", fmt.Errorf("%s: %w", key, err)
	}
	switch t {
	case "none":
		return "", nil
	case "stream":
		info, err := g.rdb.XInfoStream(ctx, key).Result()
		if noSuchKey(err) {
			return "", nil
		}
		if err != nil {
			return "", fmt.Errorf("%s: %w", key, err)
		}
		return "stream " + info.LastGeneratedID, nil
	case "zset":
		n, err := g.rdb.ZCard(ctx, key).Result()
		if err != nil {
			return "", fmt.Errorf("%s: %w", key, err)
		}
		var ends [2]string
		for i, at := range []int64{0, -1} {
			m, err := g.rdb.ZRange(ctx, key, at, at).Result()
			if err != nil {
				return "", fmt.Errorf("%s: %w", key, err)
			}
			if len(m) > 0 {
				ends[i] = m[0]
			}
		}
		return fmt.Sprintf("zset %d %s %s", n, ends[0], ends[1]), nil
	}
	return t, nil
}

// unchanged reports whether key's mark is still was (or the key is gone).
// For a stream it asks for an entry after the mark (XRANGE, exclusive),
// which is none when nothing was added, rather than XINFO STREAM's answer
// with the first and last entries in full again. An entry added and
// deleted since is not seen here, but it moved the mark, and the removal
// compares the mark itself (keyMarkScript): the game is then late, where
// it would be kept.
func (g *global) unchanged(ctx context.Context, key, was string) (bool, error) {
	if id, ok := strings.CutPrefix(was, "stream "); ok {
		t, err := g.rdb.Type(ctx, key).Result()
		if err != nil {
			return false, fmt.Errorf("%s: %w", key, err)
		}
		switch t {
		case "none":
			return true, nil
		case "stream":
			xs, err := g.rdb.XRangeN(ctx, key, "("+id, "+", 1).Result()
			if err != nil {
				return false, fmt.Errorf("%s: %w", key, err)
			}
			return len(xs) == 0, nil
		}
	}
	m, err := g.keyMark(ctx, key)
	return m == "" || m == was, err
}

// delIfUnchanged deletes key unless its mark moved from was: false, with
// the mark now, when something was added to it since.
func (g *global) delIfUnchanged(ctx context.Context, key, was string) (bool, string, error) {
	r, err := keyMarkScript.Run(ctx, g.rdb, []string{key}, was).Slice()
	if err != nil {
		return false, "", fmt.Errorf("%s: %w", key, err)
	}
	if len(r) != 2 {
		return false, "", fmt.Errorf("%s: mark script answered %v", key, r)
	}
	ok, _ := r[0].(int64)
	m, _ := r[1].(string)
	return ok == 1, m, nil
}
