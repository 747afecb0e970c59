package main

import (
	"context"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/feed"
	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/internal/testkit/redistest"
	"github.com/codemojex/feed/internal/testkit/wait"
)

// TestRequeueDuringSlotMigration: dead requeue while a migration of the
// game's slot has moved its stream to the importing master and not its
// dead stream. The requeue is one script over both keys, which Redis
// refuses with TRYAGAIN while they are split; go-redis retries it three
// times, about 100 ms, and the requeue failed. It now retries with a
// backoff, says so, and requeues the letter once the split ends (here
// when the move finishes): the entry is back in the stream once, the
// letter gone.
func TestRequeueDuringSlotMigration(t *testing.T) {
	rc := redistest.MustStartCluster(t, redistest.ClusterOptions{Replicas: -1})
	rdb := rc.Client(t)
	ctx := context.Background()
	const game = "split-1"
	key, deadKey := event.StreamKey(game), event.DeadKey(game)
	addGameOver(t, rdb, game)
	at := time.Now().UTC().Format(time.RFC3339)
	letter := []any{"id", event.NewMinter(2).Next(time.Now()), "kind", event.KindGameOver, "at", at, "winner", "ada",
		feed.DeadReason, "poison: renderer bug", feed.DeadAttempts, "1", feed.DeadConsumer, "r1", feed.DeadStreamID, "1-0", feed.DeadAt, at}
	if err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: deadKey, Values: letter}).Err(); err != nil {
		t.Fatal(err)
	}
	d := oneDead(t, rdb, game)

	slot := rc.Slot(t, key)
	from := rc.MasterOfSlot(t, slot)
	mv := rc.StartSlotMove(t, slot, rc.OtherMaster(t, from))
	mv.Migrate(t, key)
	fromc := from.Client(t)
	before := tryAgains(t, fromc)

	type result struct {
		out, errOut string
		err         error
	}
	done := make(chan result, 1)
	var ended atomic.Bool
	go func() {
		out, errOut, err := runCtl(t, rc.Addrs()[0], "dead", "requeue", "-game", game, "-id", d.DeadID)
		ended.Store(true)
		done <- result{out, errOut, err}
	}()
	// More TRYAGAINs than go-redis's own retries of one call give.
	wait.For(t, 20*time.Second, "the requeue retried past go-redis's retries while the slot is split", func() bool {
		return ended.Load() || tryAgains(t, fromc)-before >= 8
	})
	mv.Finish(t)
	r := <-done
	if r.err != nil || !strings.Contains(r.out, "retrying") || !strings.Contains(r.out, "requeued "+d.DeadID) {
		t.Fatalf("dead requeue while the game's slot migrates: %v\n%s%s", r.err, r.out, r.errOut)
	}
	if n, err := rdb.XLen(ctx, key).Result(); err != nil || n != 2 {
		t.Errorf("stream holds %d entries (%v), want 2: the game over and the requeued one", n, err)
	}
	if n, err := rdb.XLen(ctx, deadKey).Result(); err != nil || n != 0 {
		t.Errorf("dead stream holds %d letters (%v), want none", n, err)
	}
}

// tryAgains is the number of TRYAGAIN replies the node of s gave (INFO errorstats).
func tryAgains(t *testing.T, s *redis.Client) int {
	t.Helper()
	info, err := s.Info(context.Background(), "errorstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "errorstat_TRYAGAIN:count="); ok {
			n, _ := strconv.Atoi(v)
			return n
		}
	}
	return 0
}
