package store

import (
	"context"
	"errors"
	"strings"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/codemojex/feed/internal/backoff"
)

// Backoff bounds for busy retries. SQLite's own busy handler waits first
// (Options.BusyTimeout); this loop covers what it does not: a busy that
// surfaces anyway (journal-mode switch, a lock held past the timeout).
const (
	busyBackoffMin = time.Millisecond
	busyBackoffMax = 250 * time.Millisecond
)

// isBusy reports whether err is SQLite's "try again later" (BUSY or LOCKED,
// any extended code).
func isBusy(err error) bool {
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
			return true
		}
		return false
	}
	// Some paths in database/sql lose the typed error; the text is stable.
	return err != nil && strings.Contains(err.Error(), "database is locked")
}

// retryBusy runs f until it returns something other than a busy error,
// backing off (internal/backoff) from busyBackoffMin up to busyBackoffMax. Only
// ctx ending or Close stops it, so a busy error never reaches the caller.
func (db *DB) retryBusy(ctx context.Context, op string, f func() error) error {
	wait := backoff.Backoff{Min: busyBackoffMin, Max: busyBackoffMax}
	for attempt := 1; ; attempt++ {
		err := f()
		if err == nil || !isBusy(err) {
			return err
		}
		busyRetries.WithLabelValues(op).Inc()
		if attempt == 1 || attempt%20 == 0 {
			db.log.Debug("store busy, retrying", "op", op, "attempts", attempt, "err", err)
		}
		t := time.NewTimer(wait.Next())
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-db.closed:
			t.Stop()
			return ErrClosed
		case <-t.C:
		}
	}
}
