package feed_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/feed"
	"github.com/codemojex/feed/internal/event"
)

// claimAt plants, in game's dead positions set, a claim of position pos
// made age ago by Redis's clock: what a dead letter written in single-key
// steps during a slot migration leaves when its writer stops between its
// claim and its confirm.
func claimAt(t *testing.T, rdb redis.UniversalClient, game, pos string, age time.Duration) {
	t.Helper()
	ctx := context.Background()
	now, err := rdb.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	dk := event.DeadKeyOf(stream(game))
	if err := rdb.ZAdd(ctx, feed.DeadPositionsKey(dk), redis.Z{Score: -float64(now.Add(-age).UnixMilli()), Member: pos}).Err(); err != nil {
		t.Fatal(err)
	}
}

// poisonOpen opens a consumer of game that poisons every entry with a
// field bad.
func poisonOpen(t *testing.T, rdb redis.UniversalClient, game string) *feed.Consumer {
	t.Helper()
	cfg := baseConfig(t, rdb, "r1", stream(game))
	cfg.Handler = func(ctx context.Context, m feed.Message) error {
		if m.Payload["bad"] != "" {
			return feed.Poison(errors.New("bad entry"))
		}
		return nil
	}
	return mustOpen(t, cfg)
}

// deadState returns game's dead letters and the score of pos in its dead
// positions set.
func deadState(t *testing.T, rdb redis.UniversalClient, game, pos string) ([]feed.DeadLetter, float64) {
	t.Helper()
	ctx := context.Background()
	dk := event.DeadKeyOf(stream(game))
	ds, err := feed.ListDead(ctx, rdb, dk, 0)
	if err != nil {
		t.Fatal(err)
	}
	score, err := rdb.ZScore(ctx, feed.DeadPositionsKey(dk), pos).Result()
	if err != nil {
		t.Fatalf("zscore %s: %v", pos, err)
	}
	return ds, score
}

// TestDeadLetterStaleClaimTakenOver: a claim older than its TTL whose
// writer stopped before its letter is taken over by the script's next
// attempt (it answers "claimed", and the settle takes the single-key
// steps): the letter is written, once, the position confirmed, the entry
// acked. Before claims existed, the script took any score in the set for
// a letter written, and acked the entry with none.
func TestDeadLetterStaleClaimTakenOver(t *testing.T) {
	_, rdb := mustStart(t)
	pos := addRaw(t, rdb, stream("g"), "id", minter.Next(time.Now()), "kind", "chat", "at", time.Now().UTC().Format(time.RFC3339), "bad", "yes")
	claimAt(t, rdb, "g", pos, 2*time.Minute)
	c := poisonOpen(t, rdb, "g")
	waitFor(t, 10*time.Second, "the entry acked", func() bool { return c.Stats().Dead+c.Stats().DeadDuplicates > 0 && pending(t, rdb, stream("g")) == 0 })
	ds, score := deadState(t, rdb, "g", pos)
	ms, _, _ := strings.Cut(pos, "-")
	if len(ds) != 1 || ds[0].StreamID != pos || strconv.FormatFloat(score, 'f', -1, 64) != ms {
		t.Fatalf("letters %+v, score %v: want one letter of %s, its position scored %s", ds, score, pos, ms)
	}
	if s := c.Stats(); s.Dead != 1 || s.DeadDuplicates != 0 {
		t.Errorf("Dead %d, DeadDuplicates %d: want 1, 0", s.Dead, s.DeadDuplicates)
	}
}

// TestDeadLetterStaleClaimWithLetterNotWrittenTwice: a stale claim whose
// writer wrote the letter but stopped before confirming it: the dead
// stream is searched, the letter found, the position confirmed and the
// entry acked as a duplicate, with no second letter.
func TestDeadLetterStaleClaimWithLetterNotWrittenTwice(t *testing.T) {
	_, rdb := mustStart(t)
	ctx := context.Background()
	pos := addRaw(t, rdb, stream("g"), "id", minter.Next(time.Now()), "kind", "chat", "at", time.Now().UTC().Format(time.RFC3339), "bad", "yes")
	claimAt(t, rdb, "g", pos, 2*time.Minute)
	dk := event.DeadKeyOf(stream("g"))
	if err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: dk, Values: []any{"bad", "yes", feed.DeadStreamID, pos, feed.DeadReason, "poison: bad entry"}}).Err(); err != nil {
		t.Fatal(err)
	}
	c := poisonOpen(t, rdb, "g")
	waitFor(t, 10*time.Second, "the entry acked", func() bool { return c.Stats().DeadDuplicates > 0 && pending(t, rdb, stream("g")) == 0 })
	ds, score := deadState(t, rdb, "g", pos)
	ms, _, _ := strings.Cut(pos, "-")
	if len(ds) != 1 || strconv.FormatFloat(score, 'f', -1, 64) != ms {
		t.Fatalf("letters %+v, score %v: want the one letter, its position scored %s", ds, score, ms)
	}
	if s := c.Stats(); s.Dead != 0 {
		t.Errorf("Dead %d, want 0: the letter existed", s.Dead)
	}
}

// TestDeadLetterLiveClaimLeftPending: a claim younger than its TTL is
// another writer's letter under way: the entry stays pending, attempt
// after attempt, with no letter written and the claim kept.
func TestDeadLetterLiveClaimLeftPending(t *testing.T) {
	_, rdb := mustStart(t)
	ctx := context.Background()
	pos := addRaw(t, rdb, stream("g"), "id", minter.Next(time.Now()), "kind", "chat", "at", time.Now().UTC().Format(time.RFC3339), "bad", "yes")
	claimAt(t, rdb, "g", pos, 0)
	poisonOpen(t, rdb, "g")
	waitFor(t, 10*time.Second, "three deliveries", func() bool {
		p, err := rdb.XPendingExt(ctx, &redis.XPendingExtArgs{Stream: stream("g"), Group: group, Start: "-", End: "+", Count: 1}).Result()
		return err == nil && len(p) == 1 && p[0].RetryCount >= 3
	})
	ds, score := deadState(t, rdb, "g", pos)
	if len(ds) != 0 || score >= 0 {
		t.Fatalf("letters %+v, score %v: want none, the claim kept", ds, score)
	}
}
