package store

import "context"

// TimelineAfter returns up to n lines of game with an EVT id above after,
// in EVT-id order (oldest first): one page of the replay data. after ""
// starts at the beginning; the last line's EvtID is the next page's after.
func (db *DB) TimelineAfter(ctx context.Context, game, after string, n int) ([]Line, error) {
	return db.lines(ctx, "timeline after", `SELECT `+lineCols+` FROM events
		WHERE game = ? AND evt_id > ? ORDER BY evt_id LIMIT ?`, game, after, limitOf(n))
}
