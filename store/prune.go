package store

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"time"
)

// Ended returns the games that are over (a game_over was stored) and whose
// latest line was written before t by the writer's clock (the store's
// clock for lines without one), oldest first: the candidates of a
// retention prune.
func (db *DB) Ended(ctx context.Context, before time.Time) ([]Game, error) {
	var gs []Game
	err := db.read(ctx, "ended", func() error {
		gs = gs[:0]
		rows, err := db.r.QueryContext(ctx, `
			SELECT `+gameCols+` FROM games
			WHERE status = 'over'
			  AND (SELECT max(coalesce(at, stored_at)) FROM events WHERE events.game = games.name) < ?
			ORDER BY last_at, name`, before.UnixNano())
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			g, err := scanGame(rows)
			if err != nil {
				return err
			}
			gs = append(gs, g)
		}
		return rows.Err()
	})
	return gs, err
}

// DeleteGame removes a game from the store: its lines, its players and its
// row, in one transaction. It returns the number of lines removed (0 for a
// game the store does not hold). A line of the game stored again later
// (a re-delivery, a rebuild) brings the game back with that line only, so
// prune a game only once its stream is fully handled. A tool that decided
// to remove the game from an earlier read of the store wants
// DeleteGameUpTo, which leaves a line stored since.
//
// The game's stream position (Position) stays, on purpose: without it a
// renderer that finds the game's stream again (a new match under the same
// name) would take this store for one that lost the game and catch it up
// from the stream's start, bringing every retained old line back. With it
// the game comes back with what follows only (docs/store.md, "Progress"). It waits for the
// process's writer (a batch in progress) and for another process's lock
// until ctx ends.
func (db *DB) DeleteGame(ctx context.Context, game string) (int64, error) {
	return db.deleteGame(ctx, game, math.MaxInt64)
}

// DeleteGameUpTo removes a game as DeleteGame does, but only while every
// line of it has a seq at or below seq: a store's seqs grow in commit order
// (docs/store.md, "Two orders"), so a line with a higher one was stored
// after seq was read (HighSeq), after the caller decided. Such a game is
// left whole, its lines, players and row, and the error wraps
// ErrNewerLines: what remained of it if only the older lines went would be
// a scoreboard counting points of lines no longer there, and state from
// events no longer shown. feedctl prune reads HighSeq before its plan and
// hands it here, so that an event stored while it runs is never deleted.
func (db *DB) DeleteGameUpTo(ctx context.Context, game string, seq int64) (int64, error) {
	return db.deleteGame(ctx, game, seq)
}

func (db *DB) deleteGame(ctx context.Context, game string, upTo int64) (int64, error) {
	if err := db.lockWriter(ctx); err != nil {
		return 0, fmt.Errorf("store: delete game %s: %w", game, err)
	}
	defer db.unlockWriter()
	if db.isClosed() {
		return 0, ErrClosed
	}
	if db.readOnlyOpen() {
		return 0, fmt.Errorf("store: delete game %s: %w", game, ErrReadOnly)
	}
	// As Upsert does: deleted from a file moved away or replaced, the
	// lines stay in the file now at the path, and the caller, told they
	// are gone, acts on that (feedctl prune unregistered the game:
	// TestPruneRefusesStoreSwappedSincePlan).
	if err := db.CheckFile(); err != nil {
		return 0, fmt.Errorf("store: delete game %s: %w", game, err)
	}
	var n, deletes, newer int64
	err := db.retryBusy(ctx, "delete game", func() error {
		n, newer, deletes = 0, 0, 0
		tx, err := db.w.BeginTx(ctx, nil) // BEGIN IMMEDIATE (_txlock)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		// Under the write lock: no line can be committed between this
		// look and the delete.
		if upTo < math.MaxInt64 {
			if err := tx.QueryRowContext(ctx, `SELECT coalesce(max(seq), 0) FROM events WHERE game = ?`, game).Scan(&newer); err != nil {
				return err
			}
			if newer > upTo {
				return nil // rolled back: nothing was written
			}
			newer = 0
		}
		var res sql.Result
		if res, err = tx.ExecContext(ctx, `DELETE FROM events WHERE game = ?`, game); err != nil {
			return err
		}
		if n, err = res.RowsAffected(); err != nil {
			return err
		}
		rows := n
		for _, q := range []string{`DELETE FROM players WHERE game = ?`, `DELETE FROM games WHERE name = ?`} {
			res, err := tx.ExecContext(ctx, q, game)
			if err != nil {
				return err
			}
			k, err := res.RowsAffected()
			if err != nil {
				return err
			}
			rows += k
		}
		if rows == 0 {
			// A game this store does not hold (prune deletes each
			// planned game from its host's store, which may lack some):
			// rolled back, the deletion not counted, so that
			// no process drops its boards for it
			// (TestDeleteAbsentGameKeepsBoards).
			deletes = -1
			return nil
		}
		// Every process's board cache drops what it holds when it sees
		// the count move (see boardCache).
		if err := tx.QueryRowContext(ctx, `INSERT INTO meta (key, value) VALUES ('deletes', '1')
			ON CONFLICT (key) DO UPDATE SET value = CAST(value AS INTEGER) + 1
			RETURNING CAST(value AS INTEGER)`).Scan(&deletes); err != nil {
			return err
		}
		return tx.Commit()
	})
	if err != nil {
		return 0, fmt.Errorf("store: delete game %s: %w", game, err)
	}
	if newer > 0 {
		return 0, fmt.Errorf("store: delete game %s: line seq %d stored after seq %d: %w", game, newer, upTo, ErrNewerLines)
	}
	if deletes < 0 {
		return 0, nil
	}
	db.boards.drop(deletes)
	db.dirty.Store(true)
	return n, nil
}
