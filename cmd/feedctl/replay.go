package main

import (
	"context"
	"fmt"
	"io"

	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/internal/flagenv"
)

// replay moves the group's last-delivered id of a game's stream back to the
// start, so the renderers re-deliver everything retained. The store's
// idempotence makes this a re-render that changes nothing.
func (g *global) replay(ctx context.Context, args []string, stdout io.Writer) error {
	defer g.rdb.Close()
	var game string
	fs := flagenv.New("replay")
	fs.StringVar(&game, "game", "", "game to replay")
	if err := gameArg(fs, args, &game); err != nil {
		return err
	}
	key := event.StreamKey(game)
	// ENTRIESREAD 0 keeps the group's lag exact after the rewind.
	if err := g.rdb.Do(ctx, "XGROUP", "SETID", key, g.group, "0", "ENTRIESREAD", "0").Err(); err != nil {
		return fmt.Errorf("replay %s: %w", game, err)
	}
	n, _ := g.rdb.XLen(ctx, key).Result()
	fmt.Fprintf(stdout, "replaying %s: %d retained entries re-delivered to group %s\n", game, n, g.group)
	return nil
}
