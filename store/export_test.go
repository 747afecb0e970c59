package store

import (
	"context"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// Exported to the tests.
var (
	Compare      = compare
	LatestSchema = latestSchema
)

// BoardCached reports whether db's board cache holds game as of seq.
func BoardCached(db *DB, game string, seq int64) bool {
	_, ok := db.boards.get(game, seq)
	return ok
}

// BusyRetries is how many times op found the store busy, in this process.
func BusyRetries(op string) float64 {
	return testutil.ToFloat64(busyRetries.WithLabelValues(op))
}

// Conflicts is codemojex_store_conflicts_total, in this process.
func Conflicts() float64 { return testutil.ToFloat64(upsertConflicts) }

// ReadOnlyMinSchema is the oldest schema OpenReadOnly accepts.
const ReadOnlyMinSchema = readOnlyMinSchema

// SeenSize is the largest size CheckFile has seen db's file at.
func SeenSize(db *DB) int64 { return db.headSize.Load() }

// Checkpoint runs one pass of db's background checkpointer now.
func Checkpoint(ctx context.Context, db *DB) error {
	_, err := db.checkpoint(ctx)
	return err
}
