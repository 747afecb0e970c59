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
	raw := mustRaw(t, path)
	holder, err := raw.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	if _, err := holder.ExecContext(context.Background(), "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	m := event.NewMinter(6)
	evs := []store.Event{mkEvent(t, m.Next(time.Now()), "g", "chat", time.Now(), "player", "ada", "text", "hi")}
	retries := store.BusyRetries("upsert")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Cancelled while BEGIN waits for the lock: the batch starts at once,
	// and SQLite's first refusal comes after writerBusyMax (250ms).
	stop := time.AfterFunc(100*time.Millisecond, cancel)
	defer stop.Stop()
	start := time.Now()
	_, err = db.Upsert(ctx, evs)
	took := time.Since(start)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Upsert = %v, want context.Canceled", err)
	}
	if took > 3*time.Second {
		t.Fatalf("Upsert returned %v after it began, its context ended after 100ms (busy timeout 5 s)", took)
	}
	if store.BusyRetries("upsert") == retries {
		t.Error("the batch never found the store busy: it did not wait for the lock")
	}
	if _, err := holder.ExecContext(context.Background(), "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
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
	holder, err := mustRaw(t, path).Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	if _, err := holder.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
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
	if _, err := holder.ExecContext(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	if n, err := db.Count(ctx); err != nil || n != 0 {
		t.Fatalf("Count = %d, %v; want nothing stored", n, err)
	}
	if res := mustUpsert(t, db, evs); !res[0].Inserted {
		t.Fatalf("after the lock: %+v, want inserted", res[0])
	}
}
