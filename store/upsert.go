package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/codemojex/feed/internal/event"
)

// Upsert stores a batch in one transaction. Each entry runs inside its own
// SAVEPOINT, so one entry's failure is its own verdict and the rest of the
// batch still commits. An EVT id already stored is a no-op (Inserted
// false): its side effects (score, wins, guess and line counts) were applied
// by the transaction that inserted it, and only then. Newer-wins state
// (game info, status, round; a player's avatar, presence, last guess) moves
// only when the event's EVT id is greater than the one the state came from,
// so any delivery order, with any duplicates, ends in the same store.
//
// SQLITE_BUSY is retried with backoff until ctx ends; the returned error is
// non-nil only when the whole batch failed (ctx, Close, I/O), and then every
// Result carries it too.
func (db *DB) Upsert(ctx context.Context, evs []Event) ([]Result, error) {
	res := make([]Result, len(evs))
	if len(evs) == 0 {
		return res, nil
	}
	rows := make([]prepared, len(evs))
	valid := 0
	for i := range evs {
		p, err := prepareEvent(&evs[i])
		if err != nil {
			res[i].Err = err
			continue
		}
		rows[i] = p
		valid++
	}
	if valid == 0 {
		upsertEvents.WithLabelValues("error").Add(float64(len(evs)))
		return res, nil
	}

	db.wmu.Lock()
	defer db.wmu.Unlock()
	if db.isClosed() {
		return fail(res, ErrClosed)
	}
	start := time.Now()
	err := db.retryBusy(ctx, "upsert", func() error {
		return db.upsertTx(ctx, evs, rows, res)
	})
	if err != nil {
		return fail(res, err)
	}
	upsertBatchSeconds.Observe(time.Since(start).Seconds())
	var ins, dup, bad int
	for i := range res {
		switch {
		case res[i].Err != nil:
			bad++
		case res[i].Inserted:
			ins++
		default:
			dup++
		}
	}
	upsertEvents.WithLabelValues("inserted").Add(float64(ins))
	upsertEvents.WithLabelValues("duplicate").Add(float64(dup))
	upsertEvents.WithLabelValues("error").Add(float64(bad))
	return res, nil
}

func fail(res []Result, err error) ([]Result, error) {
	err = fmt.Errorf("store: upsert batch: %w", err)
	for i := range res {
		if res[i].Err == nil {
			res[i] = Result{Err: err}
		}
	}
	upsertEvents.WithLabelValues("error").Add(float64(len(res)))
	return res, err
}

// prepared is an Event's columns, computed outside the write lock.
type prepared struct {
	ok      bool
	payload string
	at      any // int64 unix ns, or nil
}

func prepareEvent(e *Event) (prepared, error) {
	switch {
	case e.EvtID == "":
		return prepared{}, fmt.Errorf("%w: no EVT id", ErrInvalidEvent)
	case e.Game == "":
		return prepared{}, fmt.Errorf("%w: %s: no game", ErrInvalidEvent, e.EvtID)
	case e.Kind == "":
		return prepared{}, fmt.Errorf("%w: %s: no kind", ErrInvalidEvent, e.EvtID)
	}
	payload := "{}"
	if len(e.Payload) > 0 {
		b, err := json.Marshal(e.Payload) // map keys sorted: stable bytes
		if err != nil {
			return prepared{}, fmt.Errorf("%w: %s: payload: %v", ErrInvalidEvent, e.EvtID, err)
		}
		payload = string(b)
	}
	p := prepared{ok: true, payload: payload}
	if !e.At.IsZero() {
		p.at = e.At.UnixNano()
	}
	return p, nil
}

// upsertTx is one attempt at the whole batch. A busy error anywhere
// abandons the attempt (the deferred rollback undoes it) so retryBusy can
// run it again from scratch; res is rewritten on every attempt.
func (db *DB) upsertTx(ctx context.Context, evs []Event, rows []prepared, res []Result) error {
	tx, err := db.w.BeginTx(ctx, nil) // BEGIN IMMEDIATE (_txlock)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	s := db.stmts.bind(ctx, tx)
	now := time.Now().UnixNano()
	for i := range evs {
		if !rows[i].ok {
			continue
		}
		res[i] = Result{}
		if _, err := s.get(stSavepoint).ExecContext(ctx); err != nil {
			return err
		}
		seq, err := upsertOne(ctx, s, &evs[i], &rows[i], now)
		if err != nil {
			if isBusy(err) || ctx.Err() != nil {
				return err
			}
			if _, rerr := s.get(stRollbackTo).ExecContext(ctx); rerr != nil {
				return fmt.Errorf("rollback to savepoint: %w (after %v)", rerr, err)
			}
			res[i].Err = fmt.Errorf("store: upsert %s: %w", evs[i].EvtID, err)
		} else {
			res[i].Inserted = seq > 0
			res[i].Seq = seq
		}
		if _, err := s.get(stRelease).ExecContext(ctx); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// upsertOne inserts one event and, only if it was really inserted, applies
// its side effects. It returns the new seq, or 0 for a duplicate.
func upsertOne(ctx context.Context, s *boundStmts, e *Event, p *prepared, now int64) (int64, error) {
	r, err := s.get(stInsertEvent).ExecContext(ctx,
		e.EvtID, e.Game, e.Kind, p.payload, e.HTML, e.StreamID, e.Renderer, e.Attempts, p.at, now)
	if err != nil {
		return 0, fmt.Errorf("insert: %w", err)
	}
	if n, err := r.RowsAffected(); err != nil {
		return 0, err
	} else if n == 0 {
		return 0, nil // duplicate: no side effects, ever
	}
	seq, err := r.LastInsertId()
	if err != nil {
		return 0, err
	}
	if _, err := s.get(stTouchGame).ExecContext(ctx, e.Game, e.EvtID, now); err != nil {
		return 0, fmt.Errorf("game: %w", err)
	}
	if err := applyKind(ctx, s, e); err != nil {
		return 0, fmt.Errorf("%s state: %w", e.Kind, err)
	}
	return seq, nil
}

// applyKind applies the state an inserted event of a known kind carries.
// Numeric fields were validated by the renderer (event.Validate); a value
// that does not parse counts as 0 here rather than failing the entry.
func applyKind(ctx context.Context, s *boundStmts, e *Event) error {
	f, g, id := e.Payload, e.Game, e.EvtID
	var err error
	switch e.Kind {
	case event.KindGameStarted:
		_, err = s.get(stGameInfo).ExecContext(ctx, g, f["title"], atoi(f["rounds"]), atoi(f["code_length"]), f["palette"], id)
		if err == nil {
			_, err = s.get(stGameStatus).ExecContext(ctx, g, "playing", "", id)
		}
	case event.KindRoundStarted:
		_, err = s.get(stGameRound).ExecContext(ctx, g, atoi(f["round"]), id)
		if err == nil {
			_, err = s.get(stGameStatus).ExecContext(ctx, g, "playing", "", id)
		}
	case event.KindGameOver:
		_, err = s.get(stGameStatus).ExecContext(ctx, g, "over", f["winner"], id)
	case event.KindPlayerJoined:
		if p := f["player"]; p != "" {
			_, err = s.get(stPlayerJoined).ExecContext(ctx, g, p, f["avatar"], id)
		}
	case event.KindPlayerLeft:
		if p := f["player"]; p != "" {
			_, err = s.get(stPlayerLeft).ExecContext(ctx, g, p, id)
		}
	case event.KindGuess:
		if p := f["player"]; p != "" {
			_, err = s.get(stPlayerGuess).ExecContext(ctx, g, p, f["guess"], atoi(f["exact"]), atoi(f["near"]), id)
		}
	case event.KindRoundWon:
		if p := f["player"]; p != "" {
			_, err = s.get(stPlayerWon).ExecContext(ctx, g, p, atoi64(f["points"]))
		}
		if err == nil {
			_, err = s.get(stGameRound).ExecContext(ctx, g, atoi(f["round"]), id)
		}
	}
	return err
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

func atoi64(s string) int64 {
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}

// Write statement indexes.
const (
	stSavepoint = iota
	stRelease
	stRollbackTo
	stInsertEvent
	stTouchGame
	stGameInfo
	stGameStatus
	stGameRound
	stPlayerJoined
	stPlayerLeft
	stPlayerGuess
	stPlayerWon
	stCount
)

// writeSQL is every statement Upsert runs. Newer-wins columns compare the
// incoming EVT id with the *_evt column of their field group; in an
// ON CONFLICT DO UPDATE every right-hand side sees the row as it was, so
// a group's values and its *_evt move together or not at all.
var writeSQL = [stCount]string{
	stSavepoint:  `SAVEPOINT entry`,
	stRelease:    `RELEASE entry`,
	stRollbackTo: `ROLLBACK TO entry`,
	stInsertEvent: `INSERT INTO events (evt_id, game, kind, payload, html, stream_id, renderer, attempts, at, stored_at)
		VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)
		ON CONFLICT (evt_id) DO NOTHING`,
	stTouchGame: `INSERT INTO games (name, events, last_evt_id, last_at) VALUES (?1, 1, ?2, ?3)
		ON CONFLICT (name) DO UPDATE SET
			events = events + 1,
			last_evt_id = max(last_evt_id, excluded.last_evt_id),
			last_at = max(last_at, excluded.last_at)`,
	stGameInfo: `UPDATE games SET title = ?2, rounds = ?3, code_len = ?4, palette = ?5, info_evt = ?6
		WHERE name = ?1 AND info_evt < ?6`,
	stGameStatus: `UPDATE games SET status = ?2, winner = ?3, status_evt = ?4
		WHERE name = ?1 AND status_evt < ?4`,
	stGameRound: `UPDATE games SET round = ?2, round_evt = ?3
		WHERE name = ?1 AND round_evt < ?3`,
	stPlayerJoined: `INSERT INTO players (game, name, avatar, avatar_evt, present, present_evt)
		VALUES (?1, ?2, ?3, ?4, 1, ?4)
		ON CONFLICT (game, name) DO UPDATE SET
			avatar = CASE WHEN excluded.avatar_evt > avatar_evt THEN excluded.avatar ELSE avatar END,
			avatar_evt = max(avatar_evt, excluded.avatar_evt),
			present = CASE WHEN excluded.present_evt > present_evt THEN 1 ELSE present END,
			present_evt = max(present_evt, excluded.present_evt)`,
	stPlayerLeft: `INSERT INTO players (game, name, present, present_evt)
		VALUES (?1, ?2, 0, ?3)
		ON CONFLICT (game, name) DO UPDATE SET
			present = CASE WHEN excluded.present_evt > present_evt THEN 0 ELSE present END,
			present_evt = max(present_evt, excluded.present_evt)`,
	stPlayerGuess: `INSERT INTO players (game, name, guesses, last_guess, last_exact, last_near, guess_evt)
		VALUES (?1, ?2, 1, ?3, ?4, ?5, ?6)
		ON CONFLICT (game, name) DO UPDATE SET
			guesses = guesses + 1,
			last_guess = CASE WHEN excluded.guess_evt > guess_evt THEN excluded.last_guess ELSE last_guess END,
			last_exact = CASE WHEN excluded.guess_evt > guess_evt THEN excluded.last_exact ELSE last_exact END,
			last_near = CASE WHEN excluded.guess_evt > guess_evt THEN excluded.last_near ELSE last_near END,
			guess_evt = max(guess_evt, excluded.guess_evt)`,
	stPlayerWon: `INSERT INTO players (game, name, score, wins) VALUES (?1, ?2, ?3, 1)
		ON CONFLICT (game, name) DO UPDATE SET
			score = score + excluded.score,
			wins = wins + 1`,
}

// writeStmts are prepared once on the writer pool (one connection), so
// binding them to a transaction reuses the compiled statement.
type writeStmts struct {
	s [stCount]*sql.Stmt
}

func prepareWrite(ctx context.Context, w *sql.DB) (*writeStmts, error) {
	ws := &writeStmts{}
	for i, q := range writeSQL {
		st, err := w.PrepareContext(ctx, q)
		if err != nil {
			ws.close()
			return nil, fmt.Errorf("statement %d: %w", i, err)
		}
		ws.s[i] = st
	}
	return ws, nil
}

func (ws *writeStmts) close() {
	for _, st := range ws.s {
		if st != nil {
			st.Close()
		}
	}
}

// boundStmts binds statements to one transaction lazily: most batches use
// only a few of them.
type boundStmts struct {
	ctx context.Context
	tx  *sql.Tx
	ws  *writeStmts
	b   [stCount]*sql.Stmt
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
