package feed_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/feed"
	"github.com/codemojex/feed/internal/event"
)

// TestDeadLetterStepsAckFailedNotJudgedAfresh: the single-key steps wrote
// an entry's letter and then failed to ack it (here its XACK refused by
// an ACL, as a lost connection or the settle's deadline would fail it).
// They confirmed the position before the ack, so the entry stayed pending
// with its position recorded as any letter's, and when it came back (a
// claim, the own pending list) nothing told it from an entry of another
// group's letter: it was handed to the handler and judged afresh, and one
// that passed then (a future id whose time had come, one dead-lettered
// after PoisonAfter failures) was stored and acked beside its letter. The
// steps now ack before they confirm: an entry pending after its letter
// keeps its position claimed, and comes back to the steps, which find the
// letter once the claim is stale.
func TestDeadLetterStepsAckFailedNotJudgedAfresh(t *testing.T) {
	s, admin := mustStart(t)
	ctx := context.Background()
	if err := admin.Do(ctx, "ACL", "SETUSER", "renderer", "on", ">pw", "~*", "&*", "+@all", "-xack").Err(); err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr, Username: "renderer", Password: "pw", ContextTimeoutEnabled: true})
	t.Cleanup(func() { rdb.Close() })
	st, dk := stream("g"), event.DeadKeyOf(stream("g"))
	id := minter.Next(time.Now())
	pos := addRaw(t, admin, st, "id", id, "kind", "chat", "at", time.Now().UTC().Format(time.RFC3339), "bad", "yes")
	if err := admin.XGroupCreateMkStream(ctx, st, group, "0").Err(); err != nil {
		t.Fatal(err)
	}
	if err := admin.XReadGroup(ctx, &redis.XReadGroupArgs{Group: group, Consumer: "r1", Streams: []string{st, ">"}, Count: 1}).Err(); err != nil {
		t.Fatal(err)
	}
	// A stale claim: its entry comes back to the steps, which take it over.
	claimAt(t, admin, "g", pos, 2*time.Minute)
	var rec recorder // passes every entry: the verdict has changed
	cfg := baseConfig(t, rdb, "r1", st)
	cfg.Handler = rec.handler
	mustOpen(t, cfg)
	waitFor(t, 10*time.Second, "the letter written", func() bool {
		ds, err := feed.ListDead(ctx, admin, dk, 0)
		return err == nil && len(ds) == 1
	})
	if err := admin.Do(ctx, "ACL", "SETUSER", "renderer", "+xack").Err(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the entry settled or delivered thrice more", func() bool {
		p, err := admin.XPendingExt(ctx, &redis.XPendingExtArgs{Stream: st, Group: group, Start: "-", End: "+", Count: 1}).Result()
		return err == nil && (len(p) == 0 || p[0].RetryCount >= 5)
	})
	if n := rec.count(id); n != 0 {
		t.Fatalf("the entry whose letter was written was handed to the handler %d times", n)
	}
	if ds, err := feed.ListDead(ctx, admin, dk, 0); err != nil || len(ds) != 1 {
		t.Fatalf("letters %+v (%v): want the one", ds, err)
	}
}
