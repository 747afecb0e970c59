package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// Multi-row statements, each prepared at Open for every power of two up to
// its max rows, so any batch is a few statements whatever its size.
const (
	mInsert   = iota // events: the lines
	mGame            // games: folded effects, one row per game
	mPlayer          // players: folded effects, one row per player
	mPosition        // positions: the batch's highest stream position per game
	mCount
)

type multiRow struct {
	head    string // INSERT … VALUES
	cols    int    // parameters per row
	tail    string // ON CONFLICT …
	maxRows int    // a power of two
}

// multiSQL: the events insert does nothing on a stored (game, EVT id); the rows it
// really inserted are the verdicts, and the only events whose effects
// apply. In the games and players upserts,
// newer-wins columns compare the incoming group's EVT id with the *_evt
// column of their group; in ON CONFLICT DO UPDATE every right-hand side
// sees the row as it was, so a group's values and its *_evt move together
// or not at all. A group the batch did not touch comes with an empty EVT
// id, which never wins. Sums add.
var multiSQL = [mCount]multiRow{
	mInsert: {
		head:    `INSERT INTO events (evt_id, game, kind, payload, html, stream_id, renderer, attempts, at, stored_at) VALUES `,
		cols:    10,
		tail:    ` ON CONFLICT (game, evt_id) DO NOTHING`,
		maxRows: maxInsertRows,
	},
	mGame: {
		head: `INSERT INTO games (name, title, rounds, code_len, palette, info_evt, status, winner, status_evt,
			round, round_evt, events, last_evt_id, last_at) VALUES `,
		cols: 14,
		tail: `
		ON CONFLICT (name) DO UPDATE SET
			title    = CASE WHEN excluded.info_evt > info_evt THEN excluded.title ELSE title END,
			rounds   = CASE WHEN excluded.info_evt > info_evt THEN excluded.rounds ELSE rounds END,
			code_len = CASE WHEN excluded.info_evt > info_evt THEN excluded.code_len ELSE code_len END,
			palette  = CASE WHEN excluded.info_evt > info_evt THEN excluded.palette ELSE palette END,
			info_evt = max(info_evt, excluded.info_evt),
			status     = CASE WHEN excluded.status_evt > status_evt THEN excluded.status ELSE status END,
			winner     = CASE WHEN excluded.status_evt > status_evt THEN excluded.winner ELSE winner END,
			status_evt = max(status_evt, excluded.status_evt),
			round     = CASE WHEN excluded.round_evt > round_evt THEN excluded.round ELSE round END,
			round_evt = max(round_evt, excluded.round_evt),
			events      = events + excluded.events,
			last_evt_id = max(last_evt_id, excluded.last_evt_id),
			last_at     = max(last_at, excluded.last_at)`,
		maxRows: 32,
	},
	mPlayer: {
		head: `INSERT INTO players (game, name, avatar, avatar_evt, present, present_evt,
			last_guess, last_exact, last_near, guess_evt, score, wins, guesses) VALUES `,
		cols: 13,
		tail: `
		ON CONFLICT (game, name) DO UPDATE SET
			avatar     = CASE WHEN excluded.avatar_evt > avatar_evt THEN excluded.avatar ELSE avatar END,
			avatar_evt = max(avatar_evt, excluded.avatar_evt),
			present     = CASE WHEN excluded.present_evt > present_evt THEN excluded.present ELSE present END,
			present_evt = max(present_evt, excluded.present_evt),
			last_guess = CASE WHEN excluded.guess_evt > guess_evt THEN excluded.last_guess ELSE last_guess END,
			last_exact = CASE WHEN excluded.guess_evt > guess_evt THEN excluded.last_exact ELSE last_exact END,
			last_near  = CASE WHEN excluded.guess_evt > guess_evt THEN excluded.last_near ELSE last_near END,
			guess_evt  = max(guess_evt, excluded.guess_evt),
			score   = score + excluded.score,
			wins    = wins + excluded.wins,
			guesses = guesses + excluded.guesses`,
		maxRows: 64,
	},
	mPosition: {
		head:    `INSERT INTO positions (game, ms, seq) VALUES `,
		cols:    3,
		tail:    ` ON CONFLICT (game) DO UPDATE SET ms = excluded.ms, seq = excluded.seq WHERE (excluded.ms, excluded.seq) > (positions.ms, positions.seq)`,
		maxRows: 32,
	},
}

// sql returns the statement for n rows.
func (m multiRow) sql(n int) string {
	var b strings.Builder
	b.WriteString(m.head)
	row := "(" + strings.Repeat("?,", m.cols-1) + "?)"
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(row)
	}
	b.WriteString(m.tail)
	return b.String()
}

// chunk is the largest power of two ≤ n, capped at maxRows.
func (m multiRow) chunk(n int) int {
	c := m.maxRows
	for c > n {
		c >>= 1
	}
	return c
}

// Fixed statement indexes.
const (
	stSavepoint = iota
	stRelease
	stRollbackTo
	stState
	stSince
	stPayload
	stCount
)

var fixedSQL = [stCount]string{
	stSavepoint:  `SAVEPOINT entry`,
	stRelease:    `RELEASE entry`,
	stRollbackTo: `ROLLBACK TO entry`,
	stState:      stateSQL,
	stSince:      `SELECT seq, game, evt_id FROM events WHERE seq > ? ORDER BY seq`,
	stPayload:    `SELECT payload FROM events WHERE game = ? AND evt_id = ?`,
}

// writeStmts are prepared once on the writer pool (one connection), so
// binding them to a transaction reuses the compiled statement.
type writeStmts struct {
	s     [stCount]*sql.Stmt
	multi [mCount]map[int]*sql.Stmt // by row count: powers of two
}

func prepareWrite(ctx context.Context, w *sql.DB) (*writeStmts, error) {
	ws := &writeStmts{}
	for i, q := range fixedSQL {
		st, err := w.PrepareContext(ctx, q)
		if err != nil {
			ws.close()
			return nil, fmt.Errorf("statement %d: %w", i, err)
		}
		ws.s[i] = st
	}
	for k, m := range multiSQL {
		ws.multi[k] = map[int]*sql.Stmt{}
		for n := 1; n <= m.maxRows; n <<= 1 {
			st, err := w.PrepareContext(ctx, m.sql(n))
			if err != nil {
				ws.close()
				return nil, fmt.Errorf("statement %d of %d rows: %w", k, n, err)
			}
			ws.multi[k][n] = st
		}
	}
	return ws, nil
}

func (ws *writeStmts) close() {
	for _, st := range ws.s {
		if st != nil {
			st.Close()
		}
	}
	for _, m := range ws.multi {
		for _, st := range m {
			st.Close()
		}
	}
}

// boundStmts binds statements to one transaction lazily: most batches use
// only a few of them.
type boundStmts struct {
	ctx   context.Context
	tx    *sql.Tx
	ws    *writeStmts
	b     [stCount]*sql.Stmt
	multi [mCount]map[int]*sql.Stmt
}

func (ws *writeStmts) bind(ctx context.Context, tx *sql.Tx) *boundStmts {
	return &boundStmts{ctx: ctx, tx: tx, ws: ws}
}

func (b *boundStmts) get(i int) *sql.Stmt {
	if b.b[i] == nil {
		b.b[i] = b.tx.StmtContext(b.ctx, b.ws.s[i])
	}
	return b.b[i]
}

// rows returns multi-row statement k for n rows (n a power of two ≤ its
// maxRows) bound to the transaction.
func (b *boundStmts) rows(k, n int) *sql.Stmt {
	if b.multi[k] == nil {
		b.multi[k] = map[int]*sql.Stmt{}
	}
	st := b.multi[k][n]
	if st == nil {
		st = b.tx.StmtContext(b.ctx, b.ws.multi[k][n])
		b.multi[k][n] = st
	}
	return st
}
