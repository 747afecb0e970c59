package feed

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// DeadPositions reports, for each of ids (positions in the stream whose
// dead-letter stream is deadKey), whether the renderers dead-lettered it:
// whether it is in the dead positions set (DeadPositionsKey). It is one
// ZMSCORE, a single-key command, so it is cluster-safe; the set shares
// the game's hash slot with its stream anyway.
//
// A path that reads a stream's entries again after the live read judged
// them (a catch-up, feedctl rebuild) asks it first and skips the
// dead-lettered ones: a dead letter is not always refused again. A stream
// id forged more than the future bound ahead of the reader's clock is a
// future id when read before its time and passes once that time has come,
// an entry dead-lettered after PoisonAfter failed deliveries is well
// formed, and a conflict depends on what was stored first. A requeued
// letter is a new entry at a new position, so it is not skipped.
func DeadPositions(ctx context.Context, rdb redis.UniversalClient, deadKey string, ids []string) ([]bool, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	return deadPositionsOf(deadPositionsCmd(ctx, rdb, deadKey, ids), len(ids))
}

// deadPositionsCmd sends (or, on a pipeline, queues) the ZMSCORE of ids in
// deadKey's dead positions set. It goes through Do: go-redis's ZMScore
// reads a member that is absent as 0, the score of a position of ms 0
// (XADD key 0-1) too, so an absent position could not be told from a dead
// one.
func deadPositionsCmd(ctx context.Context, rdb doer, deadKey string, ids []string) *redis.Cmd {
	args := make([]any, 0, 2+len(ids))
	args = append(args, "ZMSCORE", deadPositionsKey(deadKey))
	for _, id := range ids {
		args = append(args, id)
	}
	return rdb.Do(ctx, args...)
}

// doer is what sends a command: a client, or a pipeline that queues it.
type doer interface {
	Do(ctx context.Context, args ...any) *redis.Cmd
}

// deadPositionsOf reads the reply of deadPositionsCmd for n positions.
func deadPositionsOf(cmd *redis.Cmd, n int) ([]bool, error) {
	scores, err := cmd.Slice()
	if err != nil {
		return nil, fmt.Errorf("feed: dead positions: %w", err)
	}
	if len(scores) != n {
		return nil, fmt.Errorf("feed: dead positions: %d scores for %d positions", len(scores), n)
	}
	dead := make([]bool, n)
	for i, s := range scores {
		dead[i] = s != nil
	}
	return dead, nil
}
