package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/codemojex/feed/internal/untrusted"
)

// maxInsertRows bounds one multi-row INSERT of events (10 parameters a
// row, far below SQLite's limit). Chunks are powers of two (a batch of 250
// is 128+64+32+16+8+2), so a handful of statements prepared at Open serve
// every batch size.
const maxInsertRows = 128

// upsertTx is one attempt at the whole batch in one IMMEDIATE transaction.
// The fast path inserts the batch with multi-row INSERT … ON CONFLICT DO
// NOTHING (see wholeBatch for how it learns which rows went in) and
// applies the inserted events' effects once per game and player. If any
// statement fails for a reason other than busy, the attempt is rolled back
// and redone with one SAVEPOINT per entry, so the failure is pinned on its
// entry and the rest of the batch still commits. A busy error abandons the
// attempt for retryBusy to run again from scratch; res is rewritten on
// every attempt.
func (db *DB) upsertTx(ctx context.Context, evs []Event, rows []prepared, res []Result) error {
	err := db.attempt(ctx, evs, rows, res, db.slow)
	if db.slow || err == nil || Unavailable(err) || ctx.Err() != nil {
		// A full disk or an I/O error is no entry's fault: pinning it on
		// entries one by one would only make them look bad.
		return err
	}
	upsertFallbacks.Inc()
	db.log.Warn("store batch failed, retrying entry by entry", untrusted.Err(err), "events", len(evs))
	return db.attempt(ctx, evs, rows, res, true)
}

func (db *DB) attempt(ctx context.Context, evs []Event, rows []prepared, res []Result, perEntry bool) error {
	// The transaction runs on a context that carries no cancellation, from
	// BEGIN to COMMIT. On a cancellable one, database/sql starts a goroutine
	// per transaction to roll it back, and the driver one per BEGIN, COMMIT
	// and statement, with a progress handler: on the live path, at a few
	// events per batch, those hand-offs between goroutines cost more CPU
	// and tail latency than the batch's rows did (docs/benchmarks-journal.md,
	// "the store's transaction without cancellation").
	// Instead, ctx is looked at before BEGIN, after it and before COMMIT;
	// an ended ctx rolls the batch back whole. The one wait in between,
	// BEGIN IMMEDIATE's for another process's write lock, is bounded by the
	// writer's busy timeout (writerBusyMax), after which retryBusy backs off
	// and watches ctx. The statements wait for no one: the write lock is
	// held, and in WAL mode COMMIT takes no other.
	live := ctx
	ctx = context.WithoutCancel(ctx)
	if err := live.Err(); err != nil {
		return err
	}
	tx, err := db.w.BeginTx(ctx, nil) // BEGIN IMMEDIATE (_txlock)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := live.Err(); err != nil {
		return err // ended while BEGIN waited for the lock
	}
	s := db.stmts.bind(ctx, tx)
	now := time.Now().UnixNano()
	for i := range evs {
		if rows[i].ok {
			res[i] = Result{}
		}
	}
	var before, deletes int64
	if err := s.get(stState).QueryRowContext(ctx).Scan(&before, &deletes); err != nil {
		return fmt.Errorf("max seq: %w", err)
	}
	db.boards.writerSync(ctx, tx, before, deletes)
	if perEntry {
		err = db.entryByEntry(ctx, s, evs, rows, res, now)
	} else {
		err = db.wholeBatch(ctx, s, evs, rows, res, now, before)
	}
	if err == nil {
		if err = savePositions(ctx, s, evs, rows, res); err != nil {
			err = fmt.Errorf("positions: %w", err)
		}
	}
	if err != nil {
		return err
	}
	if err := live.Err(); err != nil {
		return err // rolled back: nothing of the batch is stored
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	after := before
	var touched []string
	for i := range res {
		if res[i].Inserted {
			after = max(after, res[i].Seq)
			touched = append(touched, evs[i].Game)
		}
	}
	if perEntry {
		// db.fx holds only the last entry's effects: evict instead.
		db.boards.committed(before, after, nil, touched)
	} else {
		db.boards.committed(before, after, db.fx, touched)
	}
	return nil
}

// wholeBatch is the fast path: no per-entry failure is expected, so the
// batch goes in with as few statements as possible.
func (db *DB) wholeBatch(ctx context.Context, s *boundStmts, evs []Event, rows []prepared, res []Result, now, before int64) error {
	at := make(map[lineKey]int, len(evs)) // (game, EVT id) → first entry carrying it
	pending := make([]int, 0, len(evs))
	for i := range evs {
		if !rows[i].ok {
			continue
		}
		k := lineKey{evs[i].Game, evs[i].EvtID}
		if _, dup := at[k]; dup {
			continue // a duplicate within the batch: Inserted stays false
		}
		at[k] = i
		pending = append(pending, i)
	}
	// Which rows went in: a chunk whose every row went in holds the seqs
	// last-n+1 … last in VALUES order (one statement, under the write
	// lock, AUTOINCREMENT counting up). A chunk with some rows skipped may
	// leave gaps (a skipped row can use up a seq), so its rows are looked
	// up afterwards among those above the seq the batch started from.
	mixed := false
	args := make([]any, 0, 10*min(len(pending), maxInsertRows))
	for len(pending) > 0 {
		chunk := pending[:multiSQL[mInsert].chunk(len(pending))]
		pending = pending[len(chunk):]
		args = args[:0]
		for _, i := range chunk {
			args = appendInsertArgs(args, &evs[i], &rows[i], now)
		}
		r, err := s.rows(mInsert, len(chunk)).ExecContext(ctx, args...)
		if err != nil {
			return fmt.Errorf("insert: %w", err)
		}
		n, err := r.RowsAffected()
		if err != nil {
			return err
		}
		switch {
		case n == int64(len(chunk)):
			last, err := r.LastInsertId()
			if err != nil {
				return err
			}
			for j, i := range chunk {
				res[i].Inserted, res[i].Seq = true, last-n+1+int64(j)
			}
		case n > 0:
			mixed = true
		}
	}
	if mixed {
		if err := markInserted(ctx, s, before, at, res); err != nil {
			return fmt.Errorf("inserted rows: %w", err)
		}
	}
	for i := range evs {
		if rows[i].ok && !res[i].Inserted {
			if err := checkConflict(ctx, s, &evs[i], &rows[i]); err != nil {
				if !errors.Is(err, ErrConflict) {
					return err
				}
				res[i].Err = err
			}
		}
	}
	fx := db.fx
	fx.reset()
	for i := range evs {
		if res[i].Inserted {
			fx.add(&evs[i], now)
		}
	}
	if err := fx.apply(ctx, s); err != nil {
		return fmt.Errorf("state: %w", err)
	}
	return nil
}

// markInserted reads the rows this transaction inserted (seq > before)
// and marks their entries. Rows of fully inserted chunks come back too;
// their seq must match what was derived for them.
func markInserted(ctx context.Context, s *boundStmts, before int64, at map[lineKey]int, res []Result) error {
	rs, err := s.get(stSince).QueryContext(ctx, before)
	if err != nil {
		return err
	}
	defer rs.Close()
	for rs.Next() {
		var seq int64
		var k lineKey
		if err := rs.Scan(&seq, &k.game, &k.evtID); err != nil {
			return err
		}
		i, ok := at[k]
		id := k.evtID
		if !ok {
			return fmt.Errorf("%s at seq %d was not in this batch", id, seq)
		}
		if res[i].Inserted && res[i].Seq != seq {
			return fmt.Errorf("%s: derived seq %d, stored %d", id, res[i].Seq, seq)
		}
		res[i].Inserted, res[i].Seq = true, seq
	}
	return rs.Err()
}

// entryByEntry is the careful path: each entry in its own SAVEPOINT, so a
// failing entry is rolled back alone (line and effects) with its own error.
func (db *DB) entryByEntry(ctx context.Context, s *boundStmts, evs []Event, rows []prepared, res []Result, now int64) error {
	fx := db.fx
	args := make([]any, 0, 10)
	for i := range evs {
		if !rows[i].ok {
			continue
		}
		if _, err := s.get(stSavepoint).ExecContext(ctx); err != nil {
			return err
		}
		seq, err := func() (int64, error) {
			r, err := s.rows(mInsert, 1).ExecContext(ctx, appendInsertArgs(args[:0], &evs[i], &rows[i], now)...)
			if err != nil {
				return 0, fmt.Errorf("insert: %w", err)
			}
			if n, err := r.RowsAffected(); err != nil || n == 0 {
				if err == nil {
					// A duplicate: no side effects, ever; a conflict if
					// its payload differs from the stored line's.
					err = checkConflict(ctx, s, &evs[i], &rows[i])
				}
				return 0, err
			}
			seq, err := r.LastInsertId()
			if err != nil {
				return 0, err
			}
			fx.reset()
			fx.add(&evs[i], now)
			if err := fx.apply(ctx, s); err != nil {
				return 0, fmt.Errorf("%s state: %w", evs[i].Kind, err)
			}
			return seq, nil
		}()
		if err != nil {
			// ErrTxDone: the transaction itself is gone, which is no
			// entry's fault.
			if Unavailable(err) || errors.Is(err, sql.ErrTxDone) {
				return err
			}
			if _, rerr := s.get(stRollbackTo).ExecContext(ctx); rerr != nil {
				return fmt.Errorf("rollback to savepoint: %w (after %v)", rerr, err)
			}
			res[i].Err = fmt.Errorf("store: upsert %s: %w", evs[i].EvtID, err)
		} else {
			res[i].Inserted, res[i].Seq = seq > 0, seq
		}
		if _, err := s.get(stRelease).ExecContext(ctx); err != nil {
			return err
		}
	}
	return nil
}

func appendInsertArgs(args []any, e *Event, p *prepared, now int64) []any {
	return append(args, e.EvtID, e.Game, e.Kind, p.payload, e.HTML, e.StreamID, e.Renderer, e.Attempts, p.at, now)
}

// lineKey is a line's identity: two games may carry the same EVT id.
type lineKey struct{ game, evtID string }

// checkConflict compares a line that was not inserted with the stored
// line of the same (game, EVT id): a redelivery carries the same payload;
// anything else is a producer fault, and the first line stays.
func checkConflict(ctx context.Context, s *boundStmts, e *Event, p *prepared) error {
	var stored string
	if err := s.get(stPayload).QueryRowContext(ctx, e.Game, e.EvtID).Scan(&stored); err != nil {
		return fmt.Errorf("stored payload: %w", err)
	}
	if stored != p.payload {
		return fmt.Errorf("%w: %s of game %s is stored with another payload; the first line stays", ErrConflict, e.EvtID, e.Game)
	}
	return nil
}

// savePositions records, per game, the highest stream position among the
// batch's entries that are stored (inserted now or before), in the
// transaction of the lines: the store's own progress (docs/store.md).
func savePositions(ctx context.Context, s *boundStmts, evs []Event, rows []prepared, res []Result) error {
	type pos struct{ ms, seq uint64 }
	top := map[string]pos{}
	var order []string
	for i := range evs {
		if !rows[i].ok || res[i].Err != nil {
			continue
		}
		ms, seq, ok := ParsePosition(evs[i].StreamID)
		if !ok {
			continue
		}
		cur, seen := top[evs[i].Game]
		if !seen {
			order = append(order, evs[i].Game)
		}
		if !seen || ms > cur.ms || (ms == cur.ms && seq > cur.seq) {
			top[evs[i].Game] = pos{ms, seq}
		}
	}
	// One multi-row upsert for the batch's games (each appears once), as
	// for games and players: a statement per game made a batch of events
	// of many games pay a statement each.
	args := make([]any, 0, 3*min(len(order), multiSQL[mPosition].maxRows))
	for len(order) > 0 {
		chunk := order[:multiSQL[mPosition].chunk(len(order))]
		order = order[len(chunk):]
		args = args[:0]
		for _, g := range chunk {
			p := top[g]
			args = append(args, g, int64(p.ms), int64(p.seq))
		}
		if _, err := s.rows(mPosition, len(chunk)).ExecContext(ctx, args...); err != nil {
			return err
		}
	}
	return nil
}
