package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/codemojex/feed/internal/event"
)

// querier is what both *sql.DB and *sql.Tx offer, so one read helper can
// serve a lone query and the single read transaction of Page.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

const lineCols = `seq, evt_id, game, kind, html, at`

// Page returns a game's latest n lines (newest first, by EVT id), the
// highest seq in the store and the scoreboard, all from one read
// transaction: a browser that resumes from Page.Seq misses nothing and
// sees nothing twice.
func (db *DB) Page(ctx context.Context, game string, n int) (Page, error) {
	if db.isClosed() {
		return Page{}, ErrClosed
	}
	var p Page
	err := db.retryBusy(ctx, "page", func() error {
		tx, err := db.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
		if err != nil {
			return err
		}
		defer tx.Rollback()
		// The first read fixes the WAL snapshot for the rest of the tx.
		if p.Seq, err = maxSeq(ctx, tx); err != nil {
			return err
		}
		if p.Lines, err = queryLines(ctx, tx, `SELECT `+lineCols+` FROM events
			WHERE game = ? ORDER BY evt_id DESC LIMIT ?`, game, limitOf(n)); err != nil {
			return err
		}
		if p.Last, _, err = lastAt(ctx, tx, game, p.Seq); err != nil {
			return err
		}
		if p.Board, err = scoreboard(ctx, tx, game); err != nil && !errors.Is(err, ErrNotFound) {
			return err
		}
		if errors.Is(err, ErrNotFound) {
			p.Board = Scoreboard{Game: Game{Name: game, Status: event.StatusWaiting}}
		}
		return tx.Commit()
	})
	if err != nil {
		return Page{}, fmt.Errorf("store: page %s: %w", game, err)
	}
	return p, nil
}

// LastAt returns the EVT id of game's line with the greatest seq at or
// below seq, and false when the game has no line there. A client resuming
// after seq holds that line last, in this store's numbering; a store whose
// numbering went another way since (a backup restored, a peer's file
// copied, both keeping the store's ID) answers with another line, which is
// how the web tells such a cursor from a good one (docs/contracts.md).
func (db *DB) LastAt(ctx context.Context, game string, seq int64) (string, bool, error) {
	var (
		id string
		ok bool
	)
	err := db.read(ctx, "last at", func() (err error) { id, ok, err = lastAt(ctx, db.r, game, seq); return err })
	return id, ok, err
}

func lastAt(ctx context.Context, q querier, game string, seq int64) (string, bool, error) {
	var id string
	err := q.QueryRowContext(ctx, `SELECT evt_id FROM events
		WHERE game = ? AND seq <= ? ORDER BY seq DESC LIMIT 1`, game, seq).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	return id, err == nil, err
}

// Before returns up to n lines of game older than evtID (by EVT id), newest
// first: the next page below what a browser shows.
func (db *DB) Before(ctx context.Context, game, evtID string, n int) ([]Line, error) {
	return db.lines(ctx, "before", `SELECT `+lineCols+` FROM events
		WHERE game = ? AND evt_id < ? ORDER BY evt_id DESC LIMIT ?`, game, evtID, limitOf(n))
}

// After returns up to limit lines of game with seq > seq, in seq order: a
// websocket's catch-up from the browser's cursor.
func (db *DB) After(ctx context.Context, game string, seq int64, limit int) ([]Line, error) {
	return db.lines(ctx, "after", `SELECT `+lineCols+` FROM events
		WHERE game = ? AND seq > ? ORDER BY seq LIMIT ?`, game, seq, limitOf(limit))
}

// CountAfter returns how many of game's lines have a seq above seq,
// counting no further than limit: a web server asks whether a cursor is
// more than its backlog behind before it replays any line. It reads the
// (game, seq) index alone.
func (db *DB) CountAfter(ctx context.Context, game string, seq int64, limit int) (int, error) {
	var n int
	err := db.read(ctx, "countafter", func() error {
		return db.r.QueryRowContext(ctx, `SELECT count(*) FROM (SELECT 1 FROM events
			WHERE game = ? AND seq > ? LIMIT ?)`, game, seq, limitOf(limit)).Scan(&n)
	})
	return n, err
}

// Since returns up to limit lines of every game with seq > seq, in seq
// order: the tailer's read. Because seq grows in commit order, a tailer that
// advances its cursor to the last seq it got never skips a line.
func (db *DB) Since(ctx context.Context, seq int64, limit int) ([]Line, error) {
	return db.lines(ctx, "since", `SELECT `+lineCols+` FROM events
		WHERE seq > ? ORDER BY seq LIMIT ?`, seq, limitOf(limit))
}

// Timeline returns a game's whole timeline in EVT-id order (oldest first):
// the tests' yardstick. The replay page reads it a page at a time
// (TimelineAfter).
func (db *DB) Timeline(ctx context.Context, game string) ([]Line, error) {
	return db.lines(ctx, "timeline", `SELECT `+lineCols+` FROM events
		WHERE game = ? ORDER BY evt_id`, game)
}

// MaxSeq returns the highest seq stored (0 for an empty store). It reads
// the deletion count with it: a web server asks for a board at the seq
// MaxSeq returned (a backfill's state frame), which the board cache may
// hold from before another process's DeleteGame, so a count that moved
// drops the cache first (see boardCache).
func (db *DB) MaxSeq(ctx context.Context) (int64, error) {
	var n, deletes int64
	err := db.read(ctx, "maxseq", func() error {
		return db.r.QueryRowContext(ctx, stateSQL).Scan(&n, &deletes)
	})
	if err == nil {
		db.boards.sawDeletes(deletes)
	}
	return n, err
}

// HighSeq returns the highest seq ever given to a line (0 for a new
// store). Unlike MaxSeq it never goes down: seqs are not reused
// (AUTOINCREMENT), so a deletion of the newest lines leaves it where it
// was. A cursor at or below it numbers no line the client lacks.
func (db *DB) HighSeq(ctx context.Context) (int64, error) {
	var n int64
	err := db.read(ctx, "highseq", func() error {
		return db.r.QueryRowContext(ctx, `SELECT max(
			coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'events'), 0),
			coalesce((SELECT max(seq) FROM events), 0))`).Scan(&n)
	})
	return n, err
}

// Count returns the number of stored lines.
func (db *DB) Count(ctx context.Context) (int64, error) {
	var n int64
	err := db.read(ctx, "count", func() error {
		return db.r.QueryRowContext(ctx, `SELECT count(*) FROM events`).Scan(&n)
	})
	return n, err
}

// Scoreboard returns a game's state and its players by score (desc), then
// name. ErrNotFound when no line of the game is stored.
func (db *DB) Scoreboard(ctx context.Context, game string) (Scoreboard, error) {
	var sb Scoreboard
	err := db.read(ctx, "scoreboard", func() error {
		tx, err := db.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
		if err != nil {
			return err
		}
		defer tx.Rollback()
		if sb, err = scoreboard(ctx, tx, game); err != nil {
			return err
		}
		return tx.Commit()
	})
	return sb, err
}

// Game returns one game's summary and state; ErrNotFound when no line of it
// is stored.
func (db *DB) Game(ctx context.Context, game string) (Game, error) {
	var g Game
	err := db.read(ctx, "game", func() (err error) {
		g, err = gameRow(ctx, db.r, game)
		return err
	})
	return g, err
}

// Games returns every game, most recently active first.
func (db *DB) Games(ctx context.Context) ([]Game, error) {
	gs, _, err := db.RecentGames(ctx, 0)
	return gs, err
}

// RecentGames returns the n most recently active games, most recent
// first (every game when n ≤ 0), and how many games the store holds, as
// of one snapshot.
//
// games has no index on last_at (migration 0004 dropped it: it moved on
// every stored line), so finding the n most recent still visits every
// row. It reads only their keys, SQLite keeps the top n as it goes, and
// only those n rows are read whole: about a tenth of the cost of Games
// for 10,000 games and more (docs/store.md, "Migrations").
func (db *DB) RecentGames(ctx context.Context, n int) ([]Game, int, error) {
	var (
		gs    []Game
		total int
	)
	q, args := `SELECT `+gameCols+`, (SELECT count(*) FROM games) FROM games ORDER BY last_at DESC, name`, []any(nil)
	if n > 0 {
		q, args = `SELECT `+gameCols+`, (SELECT count(*) FROM games) FROM games
			WHERE name IN (SELECT name FROM games ORDER BY last_at DESC, name LIMIT ?)
			ORDER BY last_at DESC, name`, []any{n}
	}
	err := db.read(ctx, "games", func() error {
		gs, total = gs[:0], 0
		rows, err := db.r.QueryContext(ctx, q, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			g, err := scanGame(rows, &total)
			if err != nil {
				return err
			}
			gs = append(gs, g)
		}
		return rows.Err()
	})
	return gs, total, err
}

// read runs f with busy retries and wraps its error with the operation.
func (db *DB) read(ctx context.Context, op string, f func() error) error {
	if db.isClosed() {
		return ErrClosed
	}
	if err := db.retryBusy(ctx, op, f); err != nil {
		return fmt.Errorf("store: %s: %w", op, err)
	}
	return nil
}

func (db *DB) lines(ctx context.Context, op, q string, args ...any) ([]Line, error) {
	var ls []Line
	err := db.read(ctx, op, func() (err error) {
		ls, err = queryLines(ctx, db.r, q, args...)
		return err
	})
	return ls, err
}

// limitOf maps a non-positive n to SQLite's "no limit".
func limitOf(n int) int {
	if n <= 0 {
		return -1
	}
	return n
}

func maxSeq(ctx context.Context, q querier) (int64, error) {
	var n int64
	err := q.QueryRowContext(ctx, `SELECT coalesce(max(seq), 0) FROM events`).Scan(&n)
	return n, err
}

func queryLines(ctx context.Context, q querier, query string, args ...any) ([]Line, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	ls := []Line{}
	for rows.Next() {
		var l Line
		var at sql.NullInt64
		if err := rows.Scan(&l.Seq, &l.EvtID, &l.Game, &l.Kind, &l.HTML, &at); err != nil {
			return nil, err
		}
		if at.Valid {
			l.At = time.Unix(0, at.Int64).UTC()
		}
		ls = append(ls, l)
	}
	return ls, rows.Err()
}

const gameCols = `name, title, status, round, rounds, code_len, palette, winner, events, last_at, last_evt_id`

type scanner interface{ Scan(dest ...any) error }

// scanGame scans gameCols, then any columns given in more.
func scanGame(s scanner, more ...any) (Game, error) {
	var g Game
	var lastAt int64
	err := s.Scan(append([]any{&g.Name, &g.Title, &g.Status, &g.Round, &g.Rounds, &g.CodeLen, &g.Palette, &g.Winner,
		&g.Events, &lastAt, &g.LastEvtID}, more...)...)
	if lastAt != 0 {
		g.LastAt = time.Unix(0, lastAt).UTC()
	}
	return g, err
}

const playerCols = `name, avatar, present, score, wins, guesses, last_guess, last_exact, last_near`

// scanPlayer scans playerCols, then any columns given in more.
func scanPlayer(s scanner, more ...any) (Player, error) {
	var p Player
	err := s.Scan(append([]any{&p.Name, &p.Avatar, &p.Present, &p.Score, &p.Wins, &p.Guesses,
		&p.LastGuess, &p.LastExact, &p.LastNear}, more...)...)
	return p, err
}

func gameRow(ctx context.Context, q querier, game string) (Game, error) {
	g, err := scanGame(q.QueryRowContext(ctx, `SELECT `+gameCols+` FROM games WHERE name = ?`, game))
	if errors.Is(err, sql.ErrNoRows) {
		return Game{}, fmt.Errorf("%w: game %q", ErrNotFound, game)
	}
	return g, err
}

func scoreboard(ctx context.Context, q querier, game string) (Scoreboard, error) {
	b, err := readBoard(ctx, q, game)
	if err != nil {
		return Scoreboard{}, err
	}
	return b.board(), nil
}

// ID returns the store file's own random id, made when the file was
// created and made anew when Open finds the file is a copy (noteFile).
// Seqs are only meaningful within one store: the web compares ids
// so that a browser never resumes with another store's cursor.
func (db *DB) ID(ctx context.Context) (string, error) {
	var id string
	err := db.read(ctx, "id", func() error {
		return db.r.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = 'store_id'`).Scan(&id)
	})
	if err != nil {
		return "", err // read says "store: id: …"
	}
	return id, nil
}
