package store

import (
	"context"
	"errors"
	"fmt"
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

// DefaultLockWait is Options.LockWait's default: far longer than the
// replicas of a host ever hold the write lock for a batch (milliseconds),
// so only a lock held outside the renderers' work (an operator's sqlite3
// left inside a transaction, a stuck tool) reaches it.
const DefaultLockWait = 10 * time.Second

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
	return db.retryBusyFor(ctx, op, 0, f)
}

// retryBusyFor is retryBusy that gives up once f has found the store busy
// for limit (0: never), with an error that wraps ErrUnavailable and says
// the lock is held. Upsert bounds its wait so: a lock held outside the
// renderers' own short batches would otherwise hold the consumer silently
// for as long as it lasts, /readyz saying ready.
func (db *DB) retryBusyFor(ctx context.Context, op string, limit time.Duration, f func() error) error {
	wait := backoff.Backoff{Min: busyBackoffMin, Max: busyBackoffMax}
	start := time.Now()
	for attempt := 1; ; attempt++ {
		err := f()
		if err == nil || !isBusy(err) {
			return err
		}
		busyRetries.WithLabelValues(op).Inc()
		if waited := time.Since(start); limit > 0 && waited >= limit {
			return fmt.Errorf("%w: %s: the write lock is held by another connection (%v so far): %w",
				ErrUnavailable, op, waited.Round(time.Millisecond), err)
		}
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
