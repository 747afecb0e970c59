package main

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/internal/testkit/redistest"
)

// TestPruneReadsBigEntryOnce: a stream's mark, its last-generated id, is
// read with XINFO STREAM, the only command that says it, and whose answer
// holds the stream's first and last entries in full. Prune asked it three
// times per game: for the plan's mark, again for the group check, and
// again before the removal to see the mark unmoved, so that a game whose
// first entry was big cost three times its size in replies. The group
// check now compares with the mark read, and the look before the removal
// asks only for entries after it (XRANGE, exclusive), none when nothing
// was added: one XINFO STREAM reply per stream and run, as the dry run's.
func TestPruneReadsBigEntryOnce(t *testing.T) {
	s := redistest.MustStart(t)
	rdb := s.Client(t)
	ctx := context.Background()
	const game = "old-1"
	const size = 1 << 20
	key := event.StreamKey(game)
	big := strings.Repeat("x", size)
	if err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: key, Values: []any{"kind", "chat", "player", "ada", "text", big}}).Err(); err != nil {
		t.Fatal(err)
	}
	addGameOver(t, rdb, game)
	// The group has read it all.
	if err := rdb.XGroupCreate(ctx, key, "feed", "$").Err(); err != nil {
		t.Fatal(err)
	}
	register(t, rdb, game, twoDaysAgo())
	sent := func() int64 {
		t.Helper()
		info, err := rdb.Info(ctx, "stats").Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(info, "\r\n") {
			if v, ok := strings.CutPrefix(line, "total_net_output_bytes:"); ok {
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					t.Fatal(err)
				}
				return n
			}
		}
		t.Fatalf("no total_net_output_bytes in INFO stats:\n%s", info)
		return 0
	}
	for _, args := range [][]string{
		{"prune", "-older-than", "24h", "-streams", "-dry-run"},
		{"prune", "-older-than", "24h", "-streams", "-yes"},
	} {
		before := sent()
		out := mustRunCtl(t, s.Addr, args...)
		if n := sent() - before; n >= 2*size {
			t.Errorf("%s: Redis sent %d bytes, the %d-byte entry more than once\n%s", strings.Join(args, " "), n, size, out)
		}
	}
	if n, err := rdb.Exists(ctx, key, event.RegistryKey).Result(); err != nil || n != 0 {
		t.Errorf("after prune -streams: %d of the stream and registry left, %v", n, err)
	}
}
