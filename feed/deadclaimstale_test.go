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

// TestStaleClaimOfVanishedEntryNoLongerDead: a claim in the dead
// positions set whose writer stopped between its claim and its confirm
// (single-key steps, during a slot migration) is taken over when its
// pending entry comes back. An entry that never comes back (its group
// destroyed, or acked by someone else) left the claim for good, and
// DeadPositions called the position dead: a catch-up and feedctl rebuild
// skipped an entry that has no letter. Met by DeadPositions once stale,
// such a claim is now removed, unless a letter of the position exists
// (then the position is confirmed: it is dead-lettered) or a group still
// has the entry pending (then the take-over is still to come), and a
// live claim is left alone.
func TestStaleClaimOfVanishedEntryNoLongerDead(t *testing.T) {
	for _, tc := range []struct {
		name   string
		age    time.Duration
		vanish func(ctx context.Context, rdb redis.UniversalClient, st, pos string) error
		letter bool
		dead   bool // what DeadPositions answers, and the claim's fate
	}{
		{name: "group destroyed", age: 2 * time.Minute, vanish: destroyGroup},
		{name: "acked elsewhere", age: 2 * time.Minute, vanish: ackElsewhere},
		{name: "still pending", age: 2 * time.Minute, dead: true},
		{name: "letter written", age: 2 * time.Minute, vanish: destroyGroup, letter: true, dead: true},
		{name: "live claim", age: 0, vanish: destroyGroup, dead: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, rdb := mustStart(t)
			ctx := context.Background()
			st, dk := stream("g"), event.DeadKeyOf(stream("g"))
			fields := []any{"id", minter.Next(time.Now()), "kind", "chat", "at", time.Now().UTC().Format(time.RFC3339), "bad", "yes"}
			pos := addRaw(t, rdb, st, fields...)
			// The entry pending with r1, as the stopped writer left it.
			if err := rdb.XGroupCreateMkStream(ctx, st, group, "0").Err(); err != nil {
				t.Fatal(err)
			}
			if err := rdb.XReadGroup(ctx, &redis.XReadGroupArgs{Group: group, Consumer: "r1", Streams: []string{st, ">"}, Count: 1}).Err(); err != nil {
				t.Fatal(err)
			}
			claimAt(t, rdb, "g", pos, tc.age)
			before, err := rdb.ZScore(ctx, feed.DeadPositionsKey(dk), pos).Result()
			if err != nil {
				t.Fatal(err)
			}
			if tc.letter {
				letter := append(fields, feed.DeadStreamID, pos, feed.DeadReason, "poison: bad entry")
				if err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: dk, Values: letter}).Err(); err != nil {
					t.Fatal(err)
				}
			}
			if tc.vanish != nil {
				if err := tc.vanish(ctx, rdb, st, pos); err != nil {
					t.Fatal(err)
				}
			}
			dead, err := feed.DeadPositions(ctx, rdb, st, dk, []string{pos})
			if err != nil {
				t.Fatal(err)
			}
			if dead[0] != tc.dead {
				t.Fatalf("DeadPositions(%s) = %v, want %v", pos, dead[0], tc.dead)
			}
			score, err := rdb.ZScore(ctx, feed.DeadPositionsKey(dk), pos).Result()
			ms, _, _ := strings.Cut(pos, "-")
			switch {
			case !tc.dead:
				if err != redis.Nil {
					t.Errorf("the stale claim of %s kept (score %v, %v): want it removed", pos, score, err)
				}
			case tc.letter:
				if err != nil || strconv.FormatFloat(score, 'f', -1, 64) != ms {
					t.Errorf("score %v (%v) of %s: want its letter's position confirmed, %s", score, err, pos, ms)
				}
			default:
				if err != nil || score != before {
					t.Errorf("score %v (%v) of %s: want the claim kept as it was, %v", score, err, pos, before)
				}
			}
			ds, err := feed.ListDead(ctx, rdb, dk, 0)
			if err != nil {
				t.Fatal(err)
			}
			if want := map[bool]int{true: 1}[tc.letter]; len(ds) != want {
				t.Errorf("%d letters, want %d: a look at the set writes none", len(ds), want)
			}
		})
	}
}

func destroyGroup(ctx context.Context, rdb redis.UniversalClient, st, _ string) error {
	return rdb.XGroupDestroy(ctx, st, group).Err()
}

func ackElsewhere(ctx context.Context, rdb redis.UniversalClient, st, pos string) error {
	return rdb.XAck(ctx, st, group, pos).Err()
}
