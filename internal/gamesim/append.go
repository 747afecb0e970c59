package gamesim

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/internal/event"
)

// Append writes events to game's stream in one pipeline, each stamped with
// an id from m and the current time, and moves the game's registry score to
// the last one. It returns the EVT ids in order. It is the small writer for
// tests that add a few known events to a live system; Run is the real one.
func Append(ctx context.Context, rdb redis.UniversalClient, m *event.Minter, game string, events ...Event) ([]string, error) {
	if !event.ValidGame(game) {
		return nil, fmt.Errorf("%w: game %q", ErrConfig, game)
	}
	if len(events) == 0 {
		return nil, nil
	}
	ids := make([]string, len(events))
	pipe := rdb.Pipeline()
	var at time.Time
	for i, e := range events {
		at = time.Now()
		ids[i] = m.Next(at)
		pipe.XAdd(ctx, &redis.XAddArgs{Stream: event.StreamKey(game), Values: e.Entry(ids[i], at)})
	}
	pipe.ZAddGT(ctx, event.RegistryKey, redis.Z{Score: float64(at.UnixMilli()), Member: game})
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, fmt.Errorf("gamesim: append to %s: %w", game, err)
	}
	return ids, nil
}
