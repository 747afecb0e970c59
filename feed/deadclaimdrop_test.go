package feed_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/feed"
	"github.com/codemojex/feed/internal/event"
)

// TestStaleClaimLetterDroppedOrRequeuedNotWrittenAgain: a writer in
// single-key steps wrote its letter and stopped before confirming the
// position; an operator then dropped (or requeued) that letter, as
// feedctl dead list shows it. The stale claim's take-over searched the
// dead stream, found no letter of the position, and wrote it a second
// time: the dropped letter came back. Dropping or requeuing a letter now
// confirms its position first, so the take-over finds it recorded and
// only acks the entry.
func TestStaleClaimLetterDroppedOrRequeuedNotWrittenAgain(t *testing.T) {
	for _, how := range []string{"drop", "requeue"} {
		t.Run(how, func(t *testing.T) {
			_, rdb := mustStart(t)
			ctx := context.Background()
			fields := []any{"id", minter.Next(time.Now()), "kind", "chat", "at", time.Now().UTC().Format(time.RFC3339), "bad", "yes"}
			pos := addRaw(t, rdb, stream("g"), fields...)
			// The entry pending with r1, as the stopped writer left it.
			if err := rdb.XGroupCreateMkStream(ctx, stream("g"), group, "0").Err(); err != nil {
				t.Fatal(err)
			}
			if err := rdb.XReadGroup(ctx, &redis.XReadGroupArgs{Group: group, Consumer: "r1", Streams: []string{stream("g"), ">"}, Count: 1}).Err(); err != nil {
				t.Fatal(err)
			}
			claimAt(t, rdb, "g", pos, 2*time.Minute)
			dk := event.DeadKeyOf(stream("g"))
			letter := append(fields, feed.DeadStreamID, pos, feed.DeadReason, "poison: bad entry")
			id, err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: dk, Values: letter}).Result()
			if err != nil {
				t.Fatal(err)
			}
			if how == "drop" {
				err = feed.DropDead(ctx, rdb, dk, id)
			} else {
				_, err = feed.RequeueDead(ctx, rdb, stream("g"), dk, id)
			}
			if err != nil {
				t.Fatal(err)
			}
			c := poisonOpen(t, rdb, "g")
			waitFor(t, 10*time.Second, "the entry acked", func() bool {
				return c.Stats().Dead+c.Stats().DeadDuplicates > 0 && pending(t, rdb, stream("g")) == 0
			})
			ds, score := deadState(t, rdb, "g", pos)
			for _, d := range ds {
				if d.StreamID == pos {
					t.Fatalf("letter %s of %s written again after its %s", d.DeadID, pos, how)
				}
			}
			ms, _, _ := strings.Cut(pos, "-")
			if strconv.FormatFloat(score, 'f', -1, 64) != ms {
				t.Errorf("score %v of %s, want %s", score, pos, ms)
			}
		})
	}
}
