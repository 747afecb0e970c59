package feed_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/internal/testkit/redistest"
)

// TestClusterReadsPerSlot: on a 3-master cluster, a consumer following the
// registry reads games spread over every node (one multi-key XREADGROUP
// per slot: a read over two slots would fail with CROSSSLOT), handles
// each entry once, and rides out a slot move under a blocked read of a hot
// game (UNBLOCKED in Redis 7.0, NOGROUP or a redirection elsewhere)
// without losing the group. event.Slot agrees with CLUSTER KEYSLOT.
func TestClusterReadsPerSlot(t *testing.T) {
	ctx := context.Background()
	rc := redistest.MustStartCluster(t)
	rdb := rc.Client(t)

	t.Run("keyslot", func(t *testing.T) {
		keys := []string{"codemojex:{g-1}:events", "codemojex:{g-1}:dead", "codemojex:games",
			"plain", "{}", "a{}b", "{a}{b}", "x{y}", "{{z}}", "}{w}", "codemojex:feed:lease:{feed}:r1", ""}
		for i := range 200 {
			keys = append(keys, event.StreamKey(fmt.Sprintf("game-%d", i)))
		}
		for _, k := range keys {
			if got, want := event.Slot(k), rc.Slot(t, k); got != want {
				t.Errorf("Slot(%q) = %d; CLUSTER KEYSLOT says %d", k, got, want)
			}
		}
	})

	rec := &recorder{}
	cfg := baseConfig(t, rdb, "c1")
	cfg.Streams, cfg.Registry = nil, event.RegistryKey
	cfg.WakeEvery, cfg.ActiveWindow, cfg.SweepEvery = 50*time.Millisecond, time.Second, time.Minute
	cfg.Handler = rec.handler
	c := mustOpen(t, cfg)

	const games = 40
	var want []string
	for i := range games {
		g := fmt.Sprintf("cl-%d", i)
		for range 3 {
			want = append(want, add(t, rdb, stream(g)))
		}
		if err := rdb.ZAddGT(ctx, event.RegistryKey, redisZ(g)).Err(); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 20*time.Second, "every entry handled", func() bool { return len(rec.ids()) == len(want) })

	// Every other game quiet, one game live: the consumer blocks on that
	// game's slot alone. Move the slot away while the game goes on writing:
	// every entry must arrive once, and the group must survive.
	waitFor(t, 10*time.Second, "the games quiet", func() bool { return c.Stats().Hot == 0 })
	hot := "cl-hot"
	stop, done := make(chan struct{}), make(chan []string)
	go func() {
		var ids []string
		defer func() { done <- ids }()
		for {
			id := minter.Next(time.Now())
			err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: stream(hot), Values: []any{"id", id, "kind", "chat",
				"at", time.Now().UTC().Format(time.RFC3339), "player", "ana", "text", "hi"}}).Err()
			if err == nil {
				ids = append(ids, id)
				rdb.ZAddGT(ctx, event.RegistryKey, redisZ(hot))
			}
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	waitFor(t, 10*time.Second, "the live game hot", func() bool { return c.Stats().Hot == 1 && len(rec.ids()) > len(want) })
	slot := rc.Slot(t, stream(hot))
	from := rc.MasterOfSlot(t, slot)
	rc.MoveSlot(t, slot, rc.OtherMaster(t, from))
	time.Sleep(500 * time.Millisecond) // the game goes on writing after the move
	close(stop)
	want = append(want, <-done...)
	waitFor(t, 20*time.Second, "entries around the slot move handled", func() bool { return len(rec.ids()) == len(want) })
	for _, id := range want {
		if n := rec.count(id); n != 1 {
			t.Errorf("%s handled %d times", id, n)
		}
	}
	t.Logf("stats after the slot move: %+v", c.Stats())
	if s := c.Stats(); s.GroupsRecreated != 0 {
		t.Errorf("groups re-created %d times; a slot move must not lose a group", s.GroupsRecreated)
	}
	for i := range games {
		if p := pending(t, rdb, stream(fmt.Sprintf("cl-%d", i))); p != 0 {
			t.Errorf("cl-%d: %d pending", i, p)
		}
	}
}
