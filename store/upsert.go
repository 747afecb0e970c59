package store

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Upsert stores a batch in one transaction, each entry's verdict its own:
// should any entry fail, the batch is redone with every entry inside its
// own SAVEPOINT, so that entry alone fails and the rest still commits.
//
// An EVT id already stored is a no-op (Inserted false): its side effects
// (score, wins, guess and line counts) were applied by the transaction that
// inserted it, and only then. Newer-wins state (game info, status, round; a
// player's avatar, presence, last guess) moves only when the event's EVT id
// is greater than the one the state came from, so any delivery order, with
// any duplicates, ends in the same store.
//
// SQLITE_BUSY is retried with backoff until ctx ends; the returned error is
// non-nil only when the whole batch failed (ctx, Close, I/O), and then every
// Result carries it too, bar those of entries already judged on their own
// (ErrInvalidEvent, or an ErrConflict a rolled-back attempt found). ctx is seen before the batch's transaction begins,
// once it has the write lock, and before it commits (a wait for another
// process's lock is cut short within 250ms), not during its statements: a
// batch whose ctx ends commits whole or not at all. Upsert is safe for
// concurrent use; calls serialise on the process's writer connection, and
// one that waits for it while another call holds it (a batch, a
// DeleteGame) gives up when ctx ends, with ctx's error.
func (db *DB) Upsert(ctx context.Context, evs []Event) ([]Result, error) {
	return db.UpsertBatch(ctx, NewBatch(evs))
}

// Batch is a batch of events made ready for Upsert outside the write lock:
// each event checked and its payload encoded. NewBatch touches no database,
// so a pipeline builds the next batch while the one before commits.
type Batch struct {
	evs   []Event
	rows  []prepared
	errs  []error // the events that cannot be stored (ErrInvalidEvent)
	valid int
}

// NewBatch prepares evs for UpsertBatch. evs must not change until the
// batch has been upserted.
func NewBatch(evs []Event) *Batch {
	b := &Batch{evs: evs, rows: make([]prepared, len(evs)), errs: make([]error, len(evs))}
	for i := range evs {
		p, err := prepareEvent(&evs[i])
		if err != nil {
			b.errs[i] = err
			continue
		}
		b.rows[i] = p
		b.valid++
	}
	return b
}

// UpsertBatch is Upsert of a batch prepared by NewBatch. A batch may be
// upserted again (a retry after an unavailable store): its verdicts are
// the same as the first time's, bar those the store's state decides.
func (db *DB) UpsertBatch(ctx context.Context, b *Batch) ([]Result, error) {
	evs, rows, valid := b.evs, b.rows, b.valid
	res := make([]Result, len(evs))
	if len(evs) == 0 {
		return res, nil
	}
	for i, err := range b.errs {
		res[i].Err = err
	}
	if valid == 0 {
		upsertEvents.WithLabelValues("error").Add(float64(len(evs)))
		return res, nil
	}

	if err := db.lockWriter(ctx); err != nil {
		return fail(res, err)
	}
	defer db.unlockWriter()
	if db.isClosed() {
		return fail(res, ErrClosed)
	}
	if db.readOnlyOpen() {
		return fail(res, ErrReadOnly)
	}
	// Lines written into a deleted or replaced file would be acked and
	// lost: refuse, so the consumer pauses and /readyz says why.
	if err := db.CheckFile(); err != nil {
		return fail(res, err)
	}
	start := time.Now()
	err := db.retryBusyFor(ctx, "upsert", db.lockWait, func() error {
		return db.upsertTx(ctx, evs, rows, res)
	})
	if err != nil {
		return fail(res, err)
	}
	upsertBatchSeconds.Observe(time.Since(start).Seconds())
	db.dirty.Store(true)
	// Counted from the verdicts of the attempt that committed: an attempt
	// rolled back (a full disk at COMMIT, then retried for as long as it
	// lasts) had found the same conflicts.
	var ins, dup, bad, conflicts int
	for i := range res {
		switch {
		case res[i].Err != nil:
			bad++
			if errors.Is(res[i].Err, ErrConflict) {
				conflicts++
			}
		case res[i].Inserted:
			ins++
		default:
			dup++
		}
	}
	upsertEvents.WithLabelValues("inserted").Add(float64(ins))
	upsertEvents.WithLabelValues("duplicate").Add(float64(dup))
	upsertEvents.WithLabelValues("error").Add(float64(bad))
	upsertConflicts.Add(float64(conflicts))
	return res, nil
}

func fail(res []Result, err error) ([]Result, error) {
	if Unavailable(err) && !errors.Is(err, ErrUnavailable) {
		err = fmt.Errorf("store: upsert batch: %w: %w", ErrUnavailable, err)
	} else {
		err = fmt.Errorf("store: upsert batch: %w", err)
	}
	for i := range res {
		// Only verdicts an entry earns on its own stand; any other error
		// was pinned by an attempt that was rolled back with the batch.
		if e := res[i].Err; e == nil || !(errors.Is(e, ErrInvalidEvent) || errors.Is(e, ErrConflict)) {
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
	p := prepared{ok: true, payload: encodePayload(e.Payload)}
	if !e.At.IsZero() {
		p.at = e.At.UnixNano()
	}
	return p, nil
}
