package web

import (
	"context"
	"sync"
	"time"

	"github.com/codemojex/feed/store"
)

// indexGames bounds the games index: every open index tab polls it every
// 3 s, and a store of many thousand games would otherwise render them all
// each time (the status page is bounded the same way).
const indexGames = 200

// recentFresh is how long one read of the index's games serves every
// request. Finding the most recent games visits every games row (there is
// no index on last_at, for the write path's sake), so without it the
// store's cost would grow with the open index tabs and with anyone asking
// for /fragments/games, times every game the store holds. The tabs poll
// every 3 s: a second more of staleness is not seen.
const recentFresh = time.Second

// recentGames is the index's games, read at most once per recentFresh
// however many requests ask; concurrent requests share one read.
type recentGames struct {
	mu    sync.Mutex
	at    time.Time // when games was read; zero before the first read
	games []store.Game
	total int
	busy  chan struct{} // closed when the read in flight ends; nil when none
}

// get returns the indexGames most recently active games and how many the
// store holds in all. The slice is shared between requests: read only.
func (c *recentGames) get(ctx context.Context, db Store) ([]store.Game, int, error) {
	for {
		c.mu.Lock()
		if !c.at.IsZero() && time.Since(c.at) < recentFresh {
			gs, n := c.games, c.total
			c.mu.Unlock()
			return gs, n, nil
		}
		if busy := c.busy; busy != nil {
			c.mu.Unlock()
			select {
			case <-busy:
				continue // read, or failed: then this request tries itself
			case <-ctx.Done():
				return nil, 0, ctx.Err()
			}
		}
		busy := make(chan struct{})
		c.busy = busy
		c.mu.Unlock()

		gs, n, err := db.RecentGames(ctx, indexGames)
		c.mu.Lock()
		if err == nil {
			c.games, c.total, c.at = gs, n, time.Now()
		}
		c.busy = nil
		c.mu.Unlock()
		close(busy)
		return gs, n, err
	}
}
