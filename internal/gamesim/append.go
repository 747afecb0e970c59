package gamesim

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/internal/event"
)

// Item is one event for a game's stream under a given EVT id.
type Item struct {
	Game  string
	ID    string
	Event Event
}

// Append writes events to game's stream in one pipeline, each stamped with
// an id from m and the current time, and moves the game's registry score to
// it. It returns the EVT ids in order. It is the small writer for tests
// that add a few known events to a live system; Run is the real one.
func Append(ctx context.Context, rdb redis.UniversalClient, m *event.Minter, game string, events ...Event) ([]string, error) {
	at := time.Now()
	ids := make([]string, len(events))
	items := make([]Item, len(events))
	for i, e := range events {
		ids[i] = m.Next(at)
		items[i] = Item{Game: game, ID: ids[i], Event: e}
	}
	if err := AppendItems(ctx, rdb, at, items...); err != nil {
		return nil, err
	}
	return ids, nil
}

// AppendItems writes items, of one game or several, in one pipeline, each
// stamped with at, and moves each game's registry score to at. Callers that
// choose the ids (out of order, or a duplicate) or the time use it, as
// feedbench's paced writer does; Append mints them.
func AppendItems(ctx context.Context, rdb redis.UniversalClient, at time.Time, items ...Item) error {
	if len(items) == 0 {
		return nil
	}
	pipe := rdb.Pipeline()
	seen := make(map[string]bool)
	for _, it := range items {
		if !event.ValidGame(it.Game) {
			return fmt.Errorf("%w: game %q", ErrConfig, it.Game)
		}
		pipe.XAdd(ctx, &redis.XAddArgs{Stream: event.StreamKey(it.Game), Values: it.Event.Entry(it.ID, at)})
		seen[it.Game] = true
	}
	for g := range seen {
		pipe.ZAddGT(ctx, event.RegistryKey, redis.Z{Score: float64(at.UnixMilli()), Member: g})
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("gamesim: append: %w", err)
	}
	return nil
}
