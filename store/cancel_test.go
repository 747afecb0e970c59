package store_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/internal/testkit/wait"
	"github.com/codemojex/feed/store"
)

// TestUpsertCancelled: a batch whose context ends while it is written
// either commits whole or fails whole with the context's error (no entry
// is blamed for it) and leaves no line behind. The transaction does not
// watch the context (see attempt): Upsert looks at it before BEGIN, after
// it and before COMMIT, and rolls back when it has ended.
func TestUpsertCancelled(t *testing.T) {
	for _, slow := range []bool{false, true} {
		t.Run(fmt.Sprintf("entryByEntry=%v", slow), func(t *testing.T) {
			db := mustOpenWith(t, store.Options{EntryByEntry: slow})
			m := event.NewMinter(5)
			batch := func() []store.Event {
				evs := make([]store.Event, 0, 200)
				for j := range 200 {
					evs = append(evs, mkEvent(t, m.Next(time.Now()), fmt.Sprintf("g%d", j%20), "chat", time.Now(), "player", "ada", "text", "hi"))
				}
				return evs
			}
			// Cancel at points spread over 0 … 1.5 times how long a batch
			// takes here (race detector or not), so some end before BEGIN,
			// some between statements and some after COMMIT.
			start := time.Now()
			first := batch()
			mustUpsert(t, db, first)
			took := time.Since(start)
			stored := int64(len(first))
			failed := 0
			for i := range 40 {
				evs := batch()
				ctx, cancel := context.WithCancel(context.Background())
				stop := time.AfterFunc(took*time.Duration(i)*3/80, cancel)
				res, err := db.Upsert(ctx, evs)
				stop.Stop()
				cancel()
				if err != nil {
					failed++
					if !errors.Is(err, context.Canceled) {
						t.Fatalf("batch %d: %v, want context.Canceled", i, err)
					}
					for k, r := range res {
						if !errors.Is(r.Err, context.Canceled) {
							t.Fatalf("batch %d entry %d: %+v, want the batch's context error", i, k, r)
						}
					}
					continue
				}
				for k, r := range res {
					if r.Err != nil || !r.Inserted {
						t.Fatalf("batch %d entry %d: %+v", i, k, r)
					}
				}
				stored += int64(len(evs))
			}
			n, err := db.Count(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if n != stored {
				t.Errorf("%d lines stored, want %d (the committed batches' only)", n, stored)
			}
			t.Logf("%d of 40 batches cancelled", failed)
		})
	}
}

// TestUpsertCancelledWhileLocked: a batch waiting for another connection's
// write lock gives up soon after its context ends, with the context's
// error and nothing stored, although the busy timeout is 5 s: the writer's
// waits inside SQLite are capped (see attempt), and the retries between
// them watch the context.
func TestUpsertCancelledWhileLocked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "feed.db")
	db := MustOpen(t, path)
	release := mustHoldWriteLock(t, path)
	m := event.NewMinter(6)
	evs := []store.Event{mkEvent(t, m.Next(time.Now()), "g", "chat", time.Now(), "player", "ada", "text", "hi")}
	retries := store.BusyRetries("upsert")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Cancelled while the batch waits for the lock: once it has found the
	// store busy (SQLite's first refusal comes after writerBusyMax, 250ms),
	// during its backoff or its next BEGIN's wait. A timer of 100ms from
	// the call, as here before, could end the context before the batch
	// reached BEGIN when the goroutine was not run for that long (a loaded
	// machine): Upsert then returned context.Canceled without a wait, and
	// the test failed saying the batch never found the store busy.
	done := make(chan struct{})
	defer close(done)
	cancelled := make(chan time.Time, 1)
	go func() {
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for store.BusyRetries("upsert") == retries {
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
		cancelled <- time.Now()
		cancel()
	}()
	_, err := db.Upsert(ctx, evs)
	returned := time.Now()
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Upsert = %v, want context.Canceled", err)
	}
	select {
	case at := <-cancelled:
		if took := returned.Sub(at); took > 3*time.Second {
			t.Fatalf("Upsert returned %v after its context ended (busy timeout 5 s)", took)
		}
	default:
		t.Fatal("Upsert returned context.Canceled before its context was cancelled")
	}
	if store.BusyRetries("upsert") == retries {
		t.Error("the batch never found the store busy: it did not wait for the lock")
	}
	release()
	if n, err := db.Count(context.Background()); err != nil || n != 0 {
		t.Fatalf("Count = %d, %v; want nothing stored", n, err)
	}
	mustUpsert(t, db, evs)
}

// TestUpsertLockHeldTooLong: a write lock that another connection holds
// for longer than Options.LockWait fails the batch whole with an error
// that wraps ErrUnavailable and says the lock is held (the consumer pauses
// on it and /readyz gives the reason), stores nothing, and blames no
// entry; once the lock is let go the batch goes in.
func TestUpsertLockHeldTooLong(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "feed.db")
	db, err := store.OpenWith(ctx, path, store.Options{LockWait: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	release := mustHoldWriteLock(t, path)
	m := event.NewMinter(7)
	evs := []store.Event{mkEvent(t, m.Next(time.Now()), "g", "chat", time.Now(), "player", "ada", "text", "hi")}
	// The deadline only keeps a store that waits for good from hanging
	// the test: it must give up long before it.
	uctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	start := time.Now()
	res, err := db.Upsert(uctx, evs)
	took := time.Since(start)
	if !errors.Is(err, store.ErrUnavailable) || !store.Unavailable(err) {
		t.Fatalf("Upsert = %v, want ErrUnavailable", err)
	}
	if !errors.Is(res[0].Err, store.ErrUnavailable) {
		t.Errorf("Result.Err = %v, want the batch's ErrUnavailable", res[0].Err)
	}
	if want := "write lock is held"; !strings.Contains(err.Error(), want) {
		t.Errorf("Upsert = %v, want it to say %q", err, want)
	}
	if took < 300*time.Millisecond || took > 5*time.Second {
		t.Errorf("Upsert gave up after %v, LockWait 300ms", took)
	}
	release()
	if n, err := db.Count(ctx); err != nil || n != 0 {
		t.Fatalf("Count = %d, %v; want nothing stored", n, err)
	}
	if res := mustUpsert(t, db, evs); !res[0].Inserted {
		t.Fatalf("after the lock: %+v, want inserted", res[0])
	}
}

// TestCancelledWhileWriterHeld: a call that waits for the process's own
// writer, held by another call (a DeleteGame, as feedctl prune's, waiting
// here for another connection's lock), gives up once its context ends,
// with the context's error wrapped as the store's errors are, while the
// writer is still held; it stores or deletes nothing. Until 6 Dec 2026
// the wait was a plain mutex: the call stayed blocked for as long as the
// other one held the writer, whatever its context said.
func TestCancelledWhileWriterHeld(t *testing.T) {
	m := event.NewMinter(8)
	for _, w := range []struct {
		name string
		call func(context.Context, *store.DB, store.Event) error
	}{
		{"Upsert", func(ctx context.Context, db *store.DB, ev store.Event) error {
			res, err := db.Upsert(ctx, []store.Event{ev})
			if err != nil && !errors.Is(res[0].Err, context.Canceled) {
				return fmt.Errorf("Result.Err %v, want the batch's error", res[0].Err)
			}
			return err
		}},
		{"DeleteGame", func(ctx context.Context, db *store.DB, _ store.Event) error {
			_, err := db.DeleteGame(ctx, "other")
			return err
		}},
	} {
		t.Run(w.name, func(t *testing.T) {
			ctx := context.Background()
			path := filepath.Join(t.TempDir(), "feed.db")
			db := MustOpen(t, path)
			for _, g := range []string{"old", "other"} {
				mustUpsert(t, db, []store.Event{mkEvent(t, m.Next(time.Now()), g, "chat", time.Now(), "player", "ada", "text", "hi")})
			}
			release := mustHoldWriteLock(t, path)
			// DeleteGame takes the writer, then finds the file locked and
			// retries until the holder lets go.
			retries := store.BusyRetries("delete game")
			deleted := make(chan error, 1)
			go func() {
				_, err := db.DeleteGame(ctx, "old")
				deleted <- err
			}()
			wait.For(t, 10*time.Second, "DeleteGame to hold the writer and find the file locked", func() bool {
				return store.BusyRetries("delete game") > retries
			})

			ev := mkEvent(t, m.Next(time.Now()), "new", "chat", time.Now(), "player", "ada", "text", "hi")
			cctx, cancel := context.WithCancel(ctx)
			returned := make(chan error, 1)
			go func() { returned <- w.call(cctx, db, ev) }()
			cancel()
			var werr error
			wait.For(t, 10*time.Second, w.name+" to return once its context ended, the writer still held", func() bool {
				select {
				case werr = <-returned:
					return true
				default:
					return false
				}
			})
			if !errors.Is(werr, context.Canceled) || !strings.HasPrefix(werr.Error(), "store: ") {
				t.Errorf("%s = %v, want the store's error wrapping context.Canceled", w.name, werr)
			}
			select {
			case err := <-deleted:
				t.Fatalf("DeleteGame returned (%v) before the lock was let go: the writer was not held", err)
			default:
			}
			release()
			if err := <-deleted; err != nil {
				t.Fatalf("DeleteGame after the lock was let go: %v", err)
			}
			for _, g := range []string{"new", "other"} {
				want := map[string]int{"new": 0, "other": 1}[g]
				if tl, err := db.Timeline(ctx, g); err != nil || len(tl) != want {
					t.Errorf("game %s: %d lines (%v), want %d: the cancelled call changed the store", g, len(tl), err, want)
				}
			}
		})
	}
}
