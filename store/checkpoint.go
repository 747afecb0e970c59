package store

import (
	"context"
	"database/sql"
	"errors"
	"time"
)

// Checkpointing is taken off the write path: SQLite's automatic checkpoint
// runs inside the COMMIT that crosses the threshold, so that batch pays for
// copying the WAL into the database plus two fsyncs, which shows as the
// renderer's latency spikes (docs/benchmarks.md, notes from profiles). The writer
// connection keeps a high automatic threshold only as a safety net; a
// goroutine checkpoints (PASSIVE: it never blocks writers or readers) on
// its own connection shortly after batches were committed.
const (
	checkpointEvery = 200 * time.Millisecond
	// walSafetyPages is the writer's own automatic checkpoint threshold,
	// reached only if the background checkpoints fall behind (64 MiB).
	walSafetyPages = 16384
)

// startCheckpointer opens the checkpoint connection and starts its loop.
func (db *DB) startCheckpointer(ctx context.Context, dsn string) error {
	c, err := sql.Open("sqlite", dsn)
	if err != nil {
		return err
	}
	c.SetMaxOpenConns(1)
	c.SetMaxIdleConns(1)
	c.SetConnMaxLifetime(0)
	if err := c.PingContext(ctx); err != nil {
		c.Close()
		return err
	}
	db.ckpt = c
	loopCtx, cancel := context.WithCancel(context.Background())
	db.stopCkpt = cancel
	db.wg.Add(1)
	go db.checkpointLoop(loopCtx)
	return nil
}

func (db *DB) checkpointLoop(ctx context.Context) {
	defer db.wg.Done()
	t := time.NewTicker(checkpointEvery)
	defer t.Stop()
	failures := 0
	var failingSince time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if !db.dirty.Swap(false) {
			continue
		}
		complete, err := db.checkpoint(ctx)
		switch {
		case errors.Is(err, ErrReplaced):
			// Upsert refuses from now on and the renderer says so; the
			// checkpointer only keeps out of the file.
		case err == nil:
			if failures > 0 {
				// Said once, as the failure was: until 5 Dec 2026 only
				// codemojex_store_checkpoints_total told an operator who
				// had read "store checkpoint failed" that it had passed.
				db.log.Info("store checkpoint recovered", "attempts", failures,
					"failing_for", time.Since(failingSince).Round(time.Millisecond))
			}
			failures = 0
			checkpoints.Inc()
			if !complete {
				db.dirty.Store(true) // readers held frames back: try again
			}
		case ctx.Err() != nil:
			return
		case isBusy(err):
			db.dirty.Store(true) // another process is checkpointing
		default:
			db.dirty.Store(true)
			if failures++; failures == 1 {
				failingSince = time.Now()
			}
			if failures == 1 || failures%100 == 0 {
				db.log.Warn("store checkpoint failed", "attempts", failures, "err", err)
			}
		}
	}
}

// checkpoint copies the WAL into the file (PASSIVE) and reports whether
// every frame was copied. It looks at the file first, and copies nothing
// into one deleted, replaced or clobbered in place: a checkpoint grows a
// file cut short in place back to the database's size, zeros where the
// cut pages were, and writes page 1 back over an emptied one, so that
// CheckFile would find the file sound after it while lines went on being
// acknowledged into a malformed file. Until 5 Dec 2026 it did, whenever
// the checkpoint came between the clobber and CheckFile's next look, up
// to 200 ms after a commit. A clobber between this look and the copy is
// still not seen: a window of microseconds in each checkpoint.
func (db *DB) checkpoint(ctx context.Context) (complete bool, err error) {
	if err := db.checkFile(true); errors.Is(err, ErrReplaced) {
		return false, err
	}
	var busy, logFrames, done int64
	if err := db.ckpt.QueryRowContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`).Scan(&busy, &logFrames, &done); err != nil {
		return false, err
	}
	return done >= logFrames, nil
}
