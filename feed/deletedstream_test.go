package feed_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/internal/event"
)

// TestDeletedStreamNotRecreated: `feedctl prune -streams` takes a
// quiet game out of the registry and deletes its streams. A renderer that
// still knows the game (until its sweep pass ends) must not bring the
// stream back: its poll meets NOGROUP there, and the group door's XGROUP
// CREATE … MKSTREAM used to re-create the deleted key, empty, for good. It
// forgets the game instead, until a writer scores it again.
func TestDeletedStreamNotRecreated(t *testing.T) {
	ctx := context.Background()
	_, rdb := mustStart(t)
	games := []string{"rv-keep", "rv-pruned"}
	register(t, rdb, games)
	rec := &recorder{}
	cfg := registryConfig(t, rdb, "c1")
	cfg.SweepEvery = time.Hour // the pass that forgets the game is far off
	cfg.PollEvery = 100 * time.Millisecond
	cfg.Handler = rec.handler
	c := mustOpen(t, cfg)
	waitFor(t, 10*time.Second, "both games handled", func() bool { return len(rec.ids()) == len(games) })
	waitFor(t, 5*time.Second, "drained", func() bool { return pending(t, rdb, stream("rv-pruned")) == 0 })

	// What prune -streams does.
	pruned := stream("rv-pruned")
	if err := rdb.ZRem(ctx, event.RegistryKey, "rv-pruned").Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Del(ctx, pruned, event.DeadKeyOf(pruned)).Err(); err != nil {
		t.Fatal(err)
	}
	before := c.Stats().GroupsRecreated
	waitFor(t, 10*time.Second, "the deleted game forgotten", func() bool { return c.Stats().Known == 1 })
	if n, _ := rdb.Exists(ctx, pruned).Result(); n != 0 {
		t.Errorf("pruned stream %s exists again (groups re-created: %d)", pruned, c.Stats().GroupsRecreated-before)
	}
	// The game kept goes on.
	id := add(t, rdb, stream("rv-keep"))
	rdb.ZAdd(ctx, event.RegistryKey, redis.Z{Score: float64(time.Now().UnixMilli()), Member: "rv-keep"})
	waitFor(t, 5*time.Second, "the kept game read", func() bool { return rec.count(id) == 1 })
}

// TestDeletedStreamStaysDeleted: a game's stream deleted while the
// registry still lists the game (an operator's DEL, or feedctl prune
// -streams between its DEL and its ZREM, or stopped there) is forgotten
// until a writer scores it again, as the group door says. The next sweep
// page (or beat) listed it at its old score, took it for a new game, and
// its door, XGROUP CREATE … MKSTREAM, brought the deleted stream back,
// empty, for good.
func TestDeletedStreamStaysDeleted(t *testing.T) {
	ctx := context.Background()
	_, rdb := mustStart(t)
	games := []string{"rd-keep", "rd-deleted"}
	register(t, rdb, games)
	rec := &recorder{}
	cfg := registryConfig(t, rdb, "c1")
	cfg.SweepEvery = 200 * time.Millisecond // a pass every 200ms: one page
	cfg.PollEvery = 100 * time.Millisecond
	cfg.Handler = rec.handler
	c := mustOpen(t, cfg)
	waitFor(t, 10*time.Second, "both games handled", func() bool { return len(rec.ids()) == len(games) })
	waitFor(t, 5*time.Second, "drained", func() bool { return pending(t, rdb, stream("rd-deleted")) == 0 })

	deleted := stream("rd-deleted")
	if err := rdb.Del(ctx, deleted).Err(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the deleted game forgotten", func() bool { return c.Stats().Known == 1 })
	passes := commandCalls(t, rdb)["zrange"]
	waitFor(t, 10*time.Second, "three more sweep passes", func() bool { return commandCalls(t, rdb)["zrange"] >= passes+3 })
	if n, _ := rdb.Exists(ctx, deleted).Result(); n != 0 {
		t.Errorf("deleted stream %s exists again: the sweep took its game for a new one (known %d, groups created %d)",
			deleted, c.Stats().Known, c.Stats().GroupsCreated)
	}
	if k := c.Stats().Known; k != 1 {
		t.Errorf("%d games known; want 1 until a writer scores the deleted one again", k)
	}

	// A writer's next entry brings the game back.
	id := add(t, rdb, deleted)
	rdb.ZAdd(ctx, event.RegistryKey, redis.Z{Score: float64(time.Now().UnixMilli()), Member: "rd-deleted"})
	waitFor(t, 5*time.Second, "the game written again read", func() bool { return rec.count(id) == 1 })
}
