package feed_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/feed"
	"github.com/codemojex/feed/internal/event"
)

// TestDeadLetterOfEarlierRelease: a dead letter as the releases before
// 4 Dec 2026 wrote it, an original field named like the letter's own
// (dead_note) kept under its own name rather than under DeadFieldPrefix,
// stays readable and requeueable after the upgrade: ListDead gives the
// renderer's fields and the original ones apart, and the requeue puts the
// original fields back, that one included, and none of the renderer's.
func TestDeadLetterOfEarlierRelease(t *testing.T) {
	ctx := context.Background()
	_, rdb := mustStart(t)
	game := "older"
	s, dk := stream(game), event.DeadKey(game)
	id := minter.Next(time.Now())
	at := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	deadID, err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: dk, Values: []any{
		"id", id, "kind", "chat", "at", "2026-12-03T09:59:59.000Z", "player", "ana", "text", "hi", "dead_note", "kept",
		feed.DeadReason, "poison: invalid entry", feed.DeadAttempts, "1", feed.DeadConsumer, "r0",
		feed.DeadStreamID, "1764755999000-0", feed.DeadAt, at.Format(time.RFC3339Nano),
	}}).Result()
	if err != nil {
		t.Fatal(err)
	}
	if err := rdb.ZAdd(ctx, feed.DeadPositionsKey(dk), redis.Z{Score: 1764755999000, Member: "1764755999000-0"}).Err(); err != nil {
		t.Fatal(err)
	}

	dead, err := feed.ListDead(ctx, rdb, dk, 0)
	if err != nil || len(dead) != 1 {
		t.Fatalf("ListDead = %v, %v", dead, err)
	}
	d := dead[0]
	if d.EvtID != id || d.Reason != "poison: invalid entry" || d.Attempts != 1 || d.Consumer != "r0" ||
		d.StreamID != "1764755999000-0" || !d.At.Equal(at) || d.Truncated != "" || d.Dropped != "" {
		t.Errorf("letter read as %+v", d)
	}
	want := map[string]string{"id": id, "kind": "chat", "at": "2026-12-03T09:59:59.000Z", "player": "ana", "text": "hi", "dead_note": "kept"}
	if len(d.Fields) != len(want) {
		t.Errorf("original fields %v, want %v", d.Fields, want)
	}
	for k, v := range want {
		if d.Fields[k] != v {
			t.Errorf("original field %s = %q, want %q", k, d.Fields[k], v)
		}
	}

	pos, err := feed.RequeueDead(ctx, rdb, s, dk, deadID)
	if err != nil {
		t.Fatal(err)
	}
	xs, err := rdb.XRange(ctx, s, pos, pos).Result()
	if err != nil || len(xs) != 1 {
		t.Fatalf("requeued entry: %v, %v", xs, err)
	}
	if len(xs[0].Values) != len(want) {
		t.Errorf("requeued entry %v, want the original fields %v", xs[0].Values, want)
	}
	for k, v := range want {
		if xs[0].Values[k] != v {
			t.Errorf("requeued field %s = %v, want %q", k, xs[0].Values[k], v)
		}
	}
}
