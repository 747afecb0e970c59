package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/store"
)

// TestUpsertCancelled: a batch whose context ends while it is written
// either commits whole or fails whole with the context's error (no entry
// is blamed for it) and leaves no line behind. The statements inside the
// transaction do not watch the context (see attempt), so this holds only
// because database/sql rolls the transaction back and Upsert reports why.
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
