package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// stateSQL reads what the board cache is kept against: the store's max
// seq, and its deletion count, which DeleteGame bumps so that a process
// whose cache predates a deletion (its own or another process's) drops the
// cache instead of serving a deleted game's board.
const stateSQL = `SELECT coalesce((SELECT max(seq) FROM events), 0),
	coalesce((SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'deletes'), 0)`

// Bounds of the board cache. A gap wider than maxBoardGap seqs (a peer
// wrote a lot since this process last looked) clears the cache rather than
// scanning the gap for the games it touched.
const (
	maxCachedBoards = 4096
	maxBoardGap     = 10000
)

// boardCache keeps the scoreboards of the games whose boards were asked
// for, so that the state frame the web sends after a line costs no read:
// at 1,000 events/s the tailer read and rendered about 400 boards a
// second, a read transaction and two queries each, and the boards that
// fell due together held the lines behind them (docs/benchmarks-journal.md, "State frames from memory").
//
// The invariant: every cached board is its game's state as of the commit
// that made seq validTo, with no deletion after deletes. Seqs grow in
// commit order across the processes that share the file, so a snapshot
// whose max seq is validTo holds nothing the cache does not. A commit of
// this process moves the cache forward with the batch's effects folded in;
// a commit of another process is a gap in seqs, and the games with lines
// in the gap are evicted when a write or a read of this process next sees
// it.
type boardCache struct {
	mu      sync.Mutex
	validTo int64
	deletes int64
	boards  map[string]*cachedBoard
}

func newBoardCache() *boardCache {
	return &boardCache{boards: map[string]*cachedBoard{}}
}

// get returns a copy of game's board if it is cached and reflects every
// line up to seq.
func (c *boardCache) get(game string, seq int64) (Scoreboard, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b := c.boards[game]
	if b == nil || seq > c.validTo {
		boardMisses.Inc()
		return Scoreboard{}, false
	}
	boardHits.Inc()
	return b.board(), true
}

// catchUpLocked brings the cache to the snapshot q reads, whose max seq is
// cur and deletion count deletes, and reports whether the cache is now at
// that snapshot. A reader's snapshot may be older than the cache; it is
// then left alone. The writer's is never older (it holds the write lock),
// so one that looks older means the seqs went back (a deletion of the
// newest lines) and the cache is dropped. So is it when the gap cannot be
// read: an empty cache is never wrong, and a write never fails for it.
func (c *boardCache) catchUpLocked(ctx context.Context, q querier, cur, deletes int64, writer bool) bool {
	switch {
	case deletes < c.deletes:
		return false
	case cur < c.validTo && !writer:
		// An older snapshot, or a deletion of the newest lines moved
		// max(seq) back: the latter drops what the cache holds.
		c.sawDeletesLocked(deletes)
		return false
	case deletes > c.deletes || cur < c.validTo || cur-c.validTo > maxBoardGap:
		clear(c.boards)
	case cur > c.validTo && len(c.boards) > 0:
		if err := c.evictGap(ctx, q, cur); err != nil {
			clear(c.boards)
		}
	}
	c.validTo, c.deletes = cur, deletes
	return true
}

// evictGap evicts the games with lines in (validTo, cur]: the commits of
// other processes since the cache last moved.
func (c *boardCache) evictGap(ctx context.Context, q querier, cur int64) error {
	rows, err := q.QueryContext(ctx, `SELECT DISTINCT game FROM events WHERE seq > ? AND seq <= ?`, c.validTo, cur)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var g string
		if err := rows.Scan(&g); err != nil {
			return err
		}
		delete(c.boards, g)
	}
	return rows.Err()
}

// fill caches board, read in the snapshot q reads (max seq cur, deletion
// count deletes), once the cache has caught up with that snapshot.
func (c *boardCache) fill(ctx context.Context, q querier, cur, deletes int64, board cachedBoard) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.catchUpLocked(ctx, q, cur, deletes, false) {
		return
	}
	if len(c.boards) >= maxCachedBoards {
		for g := range c.boards { // an arbitrary one: the cache only saves reads
			delete(c.boards, g)
			break
		}
	}
	c.boards[board.game.Name] = &board
}

// writerSync catches the cache up with the writer's snapshot at the start
// of a write transaction.
func (c *boardCache) writerSync(ctx context.Context, q querier, cur, deletes int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.catchUpLocked(ctx, q, cur, deletes, true)
}

// cachedBoard is a cached scoreboard with what its rows hold beyond the
// panel: the EVT ids its newer-wins groups came from, so that a batch's
// effects fold into it exactly as the upserts fold them into the rows
// (statements.go), and TestBoardCacheAgreesWithFile holds the two to it.
type cachedBoard struct {
	game                         Game
	infoEvt, statusEvt, roundEvt string
	players                      []cachedPlayer // by score desc, then name
}

type cachedPlayer struct {
	Player
	avatarEvt, presentEvt, guessEvt string
}

// board returns a copy of the panel's part.
func (b *cachedBoard) board() Scoreboard {
	sb := Scoreboard{Game: b.game, Players: make([]Player, len(b.players))}
	for i, p := range b.players {
		sb.Players[i] = p.Player
	}
	return sb
}

// readBoard reads game's board with its EVT ids.
func readBoard(ctx context.Context, q querier, game string) (cachedBoard, error) {
	var b cachedBoard
	g, err := scanGame(q.QueryRowContext(ctx, `SELECT `+gameCols+`, info_evt, status_evt, round_evt
		FROM games WHERE name = ?`, game), &b.infoEvt, &b.statusEvt, &b.roundEvt)
	if errors.Is(err, sql.ErrNoRows) {
		return b, fmt.Errorf("%w: game %q", ErrNotFound, game)
	}
	if err != nil {
		return b, err
	}
	b.game = g
	rows, err := q.QueryContext(ctx, `SELECT `+playerCols+`, avatar_evt, present_evt, guess_evt
		FROM players WHERE game = ? ORDER BY score DESC, name`, game)
	if err != nil {
		return b, err
	}
	defer rows.Close()
	for rows.Next() {
		var cp cachedPlayer
		if cp.Player, err = scanPlayer(rows, &cp.avatarEvt, &cp.presentEvt, &cp.guessEvt); err != nil {
			return b, err
		}
		b.players = append(b.players, cp)
	}
	return b, rows.Err()
}

// foldGame applies a batch's effects on the game row, as mGame does.
func (b *cachedBoard) foldGame(g *gameFx) {
	s := &b.game
	if g.infoEvt > b.infoEvt {
		b.infoEvt = g.infoEvt
		s.Title, s.Rounds, s.CodeLen, s.Palette = g.title, g.rounds, g.codeLen, g.palette
	}
	if g.statusEvt > b.statusEvt {
		b.statusEvt = g.statusEvt
		s.Status, s.Winner = g.status, g.winner
	}
	if g.roundEvt > b.roundEvt {
		b.roundEvt = g.roundEvt
		s.Round = g.round
	}
	s.Events += g.events
	s.LastEvtID = max(s.LastEvtID, g.lastEvtID)
	if g.lastAt != 0 && (s.LastAt.IsZero() || g.lastAt > s.LastAt.UnixNano()) {
		s.LastAt = time.Unix(0, g.lastAt).UTC()
	}
}

// foldPlayer applies a batch's effects on one player row, as mPlayer
// does; a new player's row is the batch's values.
func (b *cachedBoard) foldPlayer(name string, f *playerFx) {
	i := slices.IndexFunc(b.players, func(p cachedPlayer) bool { return p.Name == name })
	if i < 0 {
		b.players = append(b.players, cachedPlayer{
			Player: Player{
				Name: name, Avatar: f.avatar, Present: f.present,
				Score: f.score, Wins: f.wins, Guesses: f.guesses,
				LastGuess: f.guess, LastExact: f.exact, LastNear: f.near,
			},
			avatarEvt: f.avatarEvt, presentEvt: f.presentEvt, guessEvt: f.guessEvt,
		})
		return
	}
	p := &b.players[i]
	if f.avatarEvt > p.avatarEvt {
		p.avatarEvt, p.Avatar = f.avatarEvt, f.avatar
	}
	if f.presentEvt > p.presentEvt {
		p.presentEvt, p.Present = f.presentEvt, f.present
	}
	if f.guessEvt > p.guessEvt {
		p.guessEvt, p.LastGuess, p.LastExact, p.LastNear = f.guessEvt, f.guess, f.exact, f.near
	}
	p.Score += f.score
	p.Wins += f.wins
	p.Guesses += f.guesses
}

// committed moves the cache past a commit of this process that ran on the
// snapshot with max seq before, left max seq after and inserted lines of
// the games touched, whose effects fx holds (nil when it does not hold
// them all). A reader may have moved the cache past this commit already
// (it saw it, and evicted the games in it); else fx folds into the cached
// boards of the games it touched, or, without fx, those are evicted.
func (c *boardCache) committed(before, after int64, fx *effects, touched []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.validTo != before || fx == nil {
		for _, g := range touched {
			delete(c.boards, g)
		}
		if c.validTo == before {
			c.validTo = after
		}
		return
	}
	for name, g := range fx.games {
		if b := c.boards[name]; b != nil {
			b.foldGame(g)
		}
	}
	resort := map[*cachedBoard]struct{}{}
	for _, k := range fx.order {
		if b := c.boards[k.game]; b != nil {
			b.foldPlayer(k.name, fx.players[k])
			resort[b] = struct{}{}
		}
	}
	for b := range resort {
		slices.SortFunc(b.players, func(x, y cachedPlayer) int { return byScore(x.Player, y.Player) })
	}
	c.validTo = after
}

// byScore is the scoreboard's order: score descending, then name.
func byScore(a, b Player) int {
	if a.Score != b.Score {
		if a.Score > b.Score {
			return -1
		}
		return 1
	}
	return strings.Compare(a.Name, b.Name)
}

// sawDeletes drops the cache when a read found the deletion count past
// the cache's: a game was deleted since, maybe by another process, and
// its board must not be served from memory.
func (c *boardCache) sawDeletes(deletes int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sawDeletesLocked(deletes)
}

func (c *boardCache) sawDeletesLocked(deletes int64) {
	if deletes > c.deletes {
		clear(c.boards)
		c.deletes = deletes
	}
}

// drop empties the cache: this process deleted a game, leaving the
// deletion count at deletes. Recording the count keeps a read whose
// snapshot predates the deletion from filling the game's board back in.
func (c *boardCache) drop(deletes int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.boards)
	c.deletes = max(c.deletes, deletes)
}

// ScoreboardAt returns game's scoreboard reflecting at least every line
// with a seq up to seq: the state frame after a line of seq. It is served
// from memory when this process has it (see boardCache), else read.
func (db *DB) ScoreboardAt(ctx context.Context, game string, seq int64) (Scoreboard, error) {
	if db.isClosed() {
		return Scoreboard{}, ErrClosed
	}
	if b, ok := db.boards.get(game, seq); ok {
		return b, nil
	}
	var sb Scoreboard
	err := db.retryBusy(ctx, "scoreboard", func() error {
		tx, err := db.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
		if err != nil {
			return err
		}
		defer tx.Rollback()
		var cur, deletes int64
		if err := tx.QueryRowContext(ctx, stateSQL).Scan(&cur, &deletes); err != nil {
			return err
		}
		b, err := readBoard(ctx, tx, game)
		if err != nil {
			return err
		}
		sb = b.board()
		db.boards.fill(ctx, tx, cur, deletes, b)
		return tx.Commit()
	})
	if err != nil {
		return Scoreboard{}, fmt.Errorf("store: scoreboard %s: %w", game, err)
	}
	return sb, nil
}
