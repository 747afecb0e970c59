// Package registry reads the games registry (event.RegistryKey), the sorted
// set through which game servers announce their games to the feed.
package registry

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/internal/event"
)

// Games returns the valid game names of the registry, in registry order
// (by score, the unix ms of each game's last event). Members that are not
// valid game names are skipped: the registry is written by other programs.
func Games(ctx context.Context, rdb redis.UniversalClient) ([]string, error) {
	all, err := rdb.ZRange(ctx, event.RegistryKey, 0, -1).Result()
	if err != nil {
		return nil, fmt.Errorf("games registry: %w", err)
	}
	out := all[:0]
	for _, name := range all {
		if event.ValidGame(name) {
			out = append(out, name)
		}
	}
	return out, nil
}
