package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// copyLookback is how far back noteFile moves the positions of a file
// found to be a copy: the feed's catch-up lookback (5 min of stream time),
// the span within which entries are still in flight while newer ones
// commit.
const copyLookback = 5 * time.Minute

// noteFile records in meta ("file") the device, inode and birth time this
// file is opened as (fileID). A file last opened as another one is a copy (a backup moved
// into place, a host started from a peer's file), and a copy may lack
// lines below its positions: entries that were in flight when it was
// taken (the replicas of a host, and a retried entry, commit out of
// stream order) and were committed and acked into the original since.
// When nothing above its position was acked after it, the group's cursor
// is no further than the position and the catch-up would find nothing to
// do. So the positions of a copy move back by copyLookback, in the
// transaction that records its identity (a crash before the catch-up
// leaves them back): the lines it has are then found acked past its
// position, and the catch-up re-reads from there (docs/store.md).
// A copy written into the original file (same inode) is not seen.
func (db *DB) noteFile(ctx context.Context) error {
	want := db.file.String()
	// A record without the birth time (written before it was part of the
	// identity) of this device and inode is taken for this file: its
	// positions stay, and the record is rewritten in full.
	legacy := db.file.legacy()
	had := func(q querier) (string, error) {
		var v string
		err := q.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = 'file'`).Scan(&v)
		if errors.Is(err, sql.ErrNoRows) {
			return "", nil
		}
		return v, err
	}
	if v, err := had(db.w); err != nil || v == want {
		return err // the file it was: nothing to write
	}
	return db.retryBusy(ctx, "file identity", func() error {
		tx, err := db.w.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		was, err := had(tx)
		if err != nil || was == want {
			return err // another process noted it first
		}
		if was != "" && was != legacy {
			r, err := tx.ExecContext(ctx, `UPDATE positions SET ms = max(ms - ?, 0), seq = 0`, copyLookback.Milliseconds())
			if err != nil {
				return fmt.Errorf("positions: %w", err)
			}
			if n, _ := r.RowsAffected(); n > 0 {
				db.log.Warn("store file is a copy of another; its positions move back to be caught up from the streams",
					"was", was, "now", want, "games", n, "back", copyLookback)
			}
			// What it stores from now on is numbered its own way, and a
			// game's lines may come in another order than in the file it
			// was copied from: a browser's cursor from that file could
			// name a line both hold last (docs/contracts.md, last) with
			// one it never had below it here. A name of its own resets
			// such cursors (TestLiveResetCopiedStore).
			if _, err := tx.ExecContext(ctx, `UPDATE meta SET value = lower(hex(randomblob(8))) WHERE key = 'store_id'`); err != nil {
				return fmt.Errorf("store id: %w", err)
			}
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO meta (key, value) VALUES ('file', ?)
			ON CONFLICT (key) DO UPDATE SET value = excluded.value`, want); err != nil {
			return err
		}
		return tx.Commit()
	})
}
