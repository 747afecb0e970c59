package store

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// ParsePosition splits a stream position "ms-seq" into its numbers.
func ParsePosition(id string) (ms, seq uint64, ok bool) {
	a, b, found := strings.Cut(id, "-")
	if !found {
		return 0, 0, false
	}
	ms, err1 := strconv.ParseUint(a, 10, 63)
	seq, err2 := strconv.ParseUint(b, 10, 63)
	return ms, seq, err1 == nil && err2 == nil
}

// Position returns the highest stream position of game whose line this
// store file has committed ("" when it has none: a new file, or a game it
// never saw). It is written in the transaction of the lines, so it is
// exactly as old as the file: a restored backup reports the backup's.
func (db *DB) Position(ctx context.Context, game string) (string, error) {
	if db.isClosed() {
		return "", ErrClosed
	}
	var pos string
	err := db.retryBusy(ctx, "position", func() error {
		rows, err := db.r.QueryContext(ctx, `SELECT ms, seq FROM positions WHERE game = ?`, game)
		if err != nil {
			return err
		}
		defer rows.Close()
		pos = ""
		if rows.Next() {
			var ms, seq int64
			if err := rows.Scan(&ms, &seq); err != nil {
				return err
			}
			pos = fmt.Sprintf("%d-%d", ms, seq)
		}
		return rows.Err()
	})
	if err != nil {
		return "", fmt.Errorf("store: position of %s: %w", game, err)
	}
	return pos, nil
}
