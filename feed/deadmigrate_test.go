package feed_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/codemojex/feed/feed"
	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/internal/testkit/redistest"
)

// TestClusterDeadLetterDuringSlotMigration: an entry poisoned while its
// game's slot migrates, the game with no dead letter yet, is dead-lettered
// and acked during the migration. The dead letter was one script over the
// game's stream, dead stream and dead positions set, and Redis refuses a
// script over several keys of a migrating slot with TRYAGAIN whenever one
// of them is missing on the node asked (here the two dead keys, which do
// not exist yet): the entry stayed pending, and failed again at every
// claim, until the migration ended. Now a TRYAGAIN sends the dead letter
// through its single-key steps (claim the position, XADD the letter,
// confirm the position, XACK), each sent on by ASK where its key is. The
// letter is written once, and the position is in the set after the move.
func TestClusterDeadLetterDuringSlotMigration(t *testing.T) {
	rc := redistest.MustStartCluster(t, redistest.ClusterOptions{Replicas: -1})
	rdb := rc.Client(t)
	ctx := context.Background()
	game := "g0"
	st, dk := stream(game), event.DeadKeyOf(stream(game))
	rec := &recorder{}
	cfg := baseConfig(t, rdb, "r1", st)
	logs := captureLogs(t, &cfg)
	cfg.Handler = func(ctx context.Context, m feed.Message) error {
		if m.Payload["bad"] != "" {
			return feed.Poison(errors.New("bad entry"))
		}
		return rec.handler(ctx, m)
	}
	c := mustOpen(t, cfg)
	first := add(t, rdb, st)
	waitFor(t, 10*time.Second, "the first entry handled", handled1(rec, first))

	slot := rc.Slot(t, st)
	move := rc.StartSlotMove(t, slot, rc.OtherMaster(t, rc.MasterOfSlot(t, slot)))
	bad := add(t, rdb, st, "bad", "yes")
	waitFor(t, 10*time.Second, "the poisoned entry dead-lettered and acked while the slot migrates", func() bool {
		ds, err := feed.ListDead(ctx, rdb, dk, 0)
		return err == nil && len(ds) == 1 && ds[0].EvtID == bad && pending(t, rdb, st) == 0
	})
	t.Logf("during the move: %d failed dead letters logged; stats %+v", logs.count("dead-letter failed"), c.Stats())

	move.Finish(t)
	good := add(t, rdb, st)
	waitFor(t, 10*time.Second, "an entry handled after the move", handled1(rec, good))
	ds, err := feed.ListDead(ctx, rdb, dk, 0)
	if err != nil || len(ds) != 1 || ds[0].EvtID != bad {
		t.Fatalf("dead letters after the move: %+v, %v; want the one of %s", ds, err, bad)
	}
	dead, err := feed.DeadPositions(ctx, rdb, st, dk, []string{ds[0].StreamID})
	if err != nil || len(dead) != 1 || !dead[0] {
		t.Fatalf("position %s in the dead positions set: %v, %v", ds[0].StreamID, dead, err)
	}
	score, err := rdb.ZScore(ctx, feed.DeadPositionsKey(dk), ds[0].StreamID).Result()
	if err != nil || score < 0 {
		t.Fatalf("position %s scored %v (%v): want its milliseconds, not a claim", ds[0].StreamID, score, err)
	}
	if s := c.Stats(); s.DeadDuplicates != 0 {
		t.Errorf("DeadDuplicates = %d, want 0", s.DeadDuplicates)
	}
	// The last entry is acked once its handler returned (maybe just now).
	waitFor(t, 10*time.Second, "nothing pending after the move", func() bool { return pending(t, rdb, st) == 0 })
}

// TestClusterDeadLetterDuringSlotMigrationTwoGroups: two groups (two
// hosts) dead-letter the same position while the game's slot migrates. The
// script's once-guard (ZSCORE and XADD in one script) is replaced there by
// the claim of the position in the dead positions set: one group writes
// the letter, the other finds the claim or the confirmed position and acks
// its delivery without a second letter.
func TestClusterDeadLetterDuringSlotMigrationTwoGroups(t *testing.T) {
	rc := redistest.MustStartCluster(t, redistest.ClusterOptions{Replicas: -1})
	rdb := rc.Client(t)
	ctx := context.Background()
	st, dk := stream("g0"), event.DeadKeyOf(stream("g0"))
	poison := func(ctx context.Context, m feed.Message) error {
		if m.Payload["bad"] != "" {
			return feed.Poison(errors.New("bad entry"))
		}
		return nil
	}
	var cs []*feed.Consumer
	for _, g := range []string{"host-a", "host-b"} {
		cfg := baseConfig(t, rdb, "r1", st)
		cfg.Group, cfg.Handler = g, poison
		cs = append(cs, mustOpen(t, cfg))
	}
	add(t, rdb, st)
	waitFor(t, 10*time.Second, "both groups acked the first entry", func() bool {
		return cs[0].Stats().Acked == 1 && cs[1].Stats().Acked == 1
	})
	slot := rc.Slot(t, st)
	move := rc.StartSlotMove(t, slot, rc.OtherMaster(t, rc.MasterOfSlot(t, slot)))
	bad := add(t, rdb, st, "bad", "yes")
	groupPending := func(g string) int64 {
		p, err := rdb.XPending(ctx, st, g).Result()
		if err != nil {
			return -1
		}
		return p.Count
	}
	waitFor(t, 10*time.Second, "both groups' deliveries acked while the slot migrates", func() bool {
		return groupPending("host-a") == 0 && groupPending("host-b") == 0
	})
	ds, err := feed.ListDead(ctx, rdb, dk, 0)
	if err != nil || len(ds) != 1 || ds[0].EvtID != bad {
		t.Fatalf("dead letters: %+v, %v; want one, of %s", ds, err, bad)
	}
	a, b := cs[0].Stats(), cs[1].Stats()
	if a.Dead+b.Dead != 1 || a.DeadDuplicates+b.DeadDuplicates != 1 {
		t.Errorf("Dead %d+%d, DeadDuplicates %d+%d: want one letter written and one duplicate", a.Dead, b.Dead, a.DeadDuplicates, b.DeadDuplicates)
	}
	move.Finish(t)
	if ds, err := feed.ListDead(ctx, rdb, dk, 0); err != nil || len(ds) != 1 {
		t.Fatalf("dead letters after the move: %+v, %v; want one", ds, err)
	}
}
