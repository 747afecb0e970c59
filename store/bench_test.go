package store_test

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/store"
)

// BenchmarkUpsert measures the store alone on realistic batches: the
// generator's mix of kinds (mostly guesses) over several games, fresh EVT
// ids, one Upsert per batch, on a real file in WAL mode.
func BenchmarkUpsert(b *testing.B) {
	for _, c := range []struct{ size, games int }{{1, 8}, {2, 8}, {4, 100}, {8, 100}, {16, 100}, {32, 100}, {64, 100}, {500, 100}, {100, 8}, {250, 8}, {500, 8}} {
		size, games := c.size, c.games
		name := fmt.Sprintf("batch=%d", size)
		if games != 8 {
			// The latency benchmark's shape: a small batch of distinct games.
			name += fmt.Sprintf("/games=%d", games)
		}
		b.Run(name, func(b *testing.B) {
			// Cancellable, as the renderer's run context is: a
			// transaction watching it would start goroutines.
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			db := MustOpen(b, "")
			tmpl := genGames(b, 9, 4)
			m := event.NewMinter(3)
			evs := make([]store.Event, b.N)
			for i := range evs {
				e := tmpl[i%len(tmpl)]
				e.EvtID = m.Next(t0.Add(time.Duration(i) * time.Millisecond))
				e.Game = fmt.Sprintf("bench-%d", i%games)
				evs[i] = e
			}
			b.ReportAllocs()
			b.ResetTimer()
			start, cpu := time.Now(), cpuTime()
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
			report(b, start, cpu)
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
	start, cpu := time.Now(), cpuTime()
	for i := 0; i < b.N; i += 250 {
		off := i % len(evs)
		batch := evs[off:min(off+250, len(evs), off+b.N-i)]
		if _, err := db.Upsert(ctx, batch); err != nil {
			b.Fatal(err)
		}
		i -= 250 - len(batch)
	}
	report(b, start, cpu)
}

// cpuTime is the CPU time this process has used (user + system).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// report adds events/s of wall time and events per CPU-second: on a shared
// machine the wall figure moves with the neighbours' load, the CPU figure
// much less.
func report(b *testing.B, start time.Time, cpu0 time.Duration) {
	wall, cpu := time.Since(start), cpuTime()-cpu0
	b.ReportMetric(float64(b.N)/wall.Seconds(), "events/s")
	if cpu > 0 {
		b.ReportMetric(float64(b.N)/cpu.Seconds(), "events/cpu-s")
	}
}

// BenchmarkRecentGames: the index's read of the 200 most recently active
// games against reading every game (Games, the baseline), as the store's
// games grow. Neither has an index to use (migration 0004).
func BenchmarkRecentGames(b *testing.B) {
	ctx := context.Background()
	tmpl := genGames(b, 9, 4)
	for _, n := range []int{1000, 10000, 50000} {
		db := MustOpen(b, "")
		m := event.NewMinter(3)
		evs := make([]store.Event, 0, 500)
		for i := range n {
			e := tmpl[0]
			e.EvtID = m.Next(t0.Add(time.Duration(i) * time.Millisecond))
			e.Game = fmt.Sprintf("g-%d", i)
			if evs = append(evs, e); len(evs) == cap(evs) || i == n-1 {
				if _, err := db.Upsert(ctx, evs); err != nil {
					b.Fatal(err)
				}
				evs = evs[:0]
			}
		}
		b.Run(fmt.Sprintf("games=%d/all", n), func(b *testing.B) {
			for b.Loop() {
				if gs, err := db.Games(ctx); err != nil || len(gs) != n {
					b.Fatal(len(gs), err)
				}
			}
		})
		b.Run(fmt.Sprintf("games=%d/recent=200", n), func(b *testing.B) {
			for b.Loop() {
				if gs, total, err := db.RecentGames(ctx, 200); err != nil || len(gs) != min(n, 200) || total != n {
					b.Fatal(len(gs), total, err)
				}
			}
		})
	}
}
