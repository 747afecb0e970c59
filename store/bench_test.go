package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/store"
)

// BenchmarkUpsert measures the store alone on realistic batches: the
// generator's mix of kinds (mostly guesses) over several games, fresh EVT
// ids, one Upsert per batch, on a real file in WAL mode.
func BenchmarkUpsert(b *testing.B) {
	for _, size := range []int{100, 250, 500} {
		b.Run(fmt.Sprintf("batch=%d", size), func(b *testing.B) {
			ctx := context.Background()
			db := MustOpen(b, "")
			tmpl := genGames(b, 9, 4)
			m := event.NewMinter(3)
			evs := make([]store.Event, b.N)
			for i := range evs {
				e := tmpl[i%len(tmpl)]
				e.EvtID = m.Next(t0.Add(time.Duration(i) * time.Millisecond))
				e.Game = fmt.Sprintf("bench-%d", i%8)
				evs[i] = e
			}
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			for i := 0; i < len(evs); i += size {
				res, err := db.Upsert(ctx, evs[i:min(i+size, len(evs))])
				if err != nil {
					b.Fatal(err)
				}
				for _, r := range res {
					if r.Err != nil || !r.Inserted {
						b.Fatalf("%+v", r)
					}
				}
			}
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "events/s")
		})
	}
}

// BenchmarkUpsertDuplicates is the redelivery path (replay, re-claims):
// every event is already stored.
func BenchmarkUpsertDuplicates(b *testing.B) {
	ctx := context.Background()
	db := MustOpen(b, "")
	evs := genGames(b, 9, 4)
	mustUpsert(b, db, evs)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i += 250 {
		off := i % len(evs)
		batch := evs[off:min(off+250, len(evs), off+b.N-i)]
		if _, err := db.Upsert(ctx, batch); err != nil {
			b.Fatal(err)
		}
		i -= 250 - len(batch)
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "events/s")
}
