package bench

import (
	"context"
	"fmt"
	"path/filepath"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/codemojex/feed/internal/event"
)

// storeStats is the store's cost over a run: the CPU time of the commits
// (pipelineLoop's storeCPU), and the batches and events inserted (the
// store's own metrics).
type storeStats struct {
	Seconds float64
	Batches uint64
	Events  float64
}

func (a storeStats) sub(b storeStats) storeStats {
	return storeStats{a.Seconds - b.Seconds, a.Batches - b.Batches, a.Events - b.Events}
}

// perEvent is the store's time per event inserted, in µs.
func (a storeStats) perEvent() float64 {
	if a.Events == 0 {
		return 0
	}
	return 1e6 * a.Seconds / a.Events
}

// batch is the mean batch size.
func (a storeStats) batch() float64 {
	if a.Batches == 0 {
		return 0
	}
	return a.Events / float64(a.Batches)
}

// threadCPU is the CPU time of the calling OS thread (RUSAGE_THREAD): with
// the goroutine locked to its thread, the CPU of what it runs.
func threadCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(1, &ru); err != nil { // RUSAGE_THREAD
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// readStoreStats reads the store's collectors from this process's default
// registry (the pipeline runs in-process).
func readStoreStats() storeStats {
	var st storeStats
	mfs, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		return st
	}
	for _, mf := range mfs {
		switch mf.GetName() {
		case "codemojex_store_upsert_batch_seconds":
			for _, m := range mf.GetMetric() {
				st.Seconds += m.GetHistogram().GetSampleSum()
				st.Batches += m.GetHistogram().GetSampleCount()
			}
		case "codemojex_store_upsert_events_total":
			for _, m := range mf.GetMetric() {
				for _, l := range m.GetLabel() {
					if l.GetName() == "outcome" && l.GetValue() == "inserted" {
						st.Events += m.GetCounter().GetValue()
					}
				}
			}
		}
	}
	return st
}

// paced runs the renderer's consumer (as in the pipeline rounds) on fresh
// games while a writer appends gamesim's events at LowRate over LowGames
// for 3 s, as in the latency benchmark, with the consumer's Linger set to
// linger, and returns what the store spent on the paced events.
func (tr *throughputRun) paced(ctx context.Context, i int, linger time.Duration) (storeStats, error) {
	res := tr.res
	m := event.NewMinter(int64(100 + i))
	games, err := SeedGames(ctx, tr.rdb, m, fmt.Sprintf("low%d", i), res.LowGames)
	if err != nil {
		return storeStats{}, err
	}
	const d = 3 * time.Second
	total := res.LowGames + int(res.LowRate*d.Seconds())
	db := filepath.Join(tr.cfg.Dir, fmt.Sprintf("throughput-low-%d.db", i))
	st0 := readStoreStats()
	done := make(chan error, 1)
	var cpu time.Duration
	go func() {
		_, err := pipelineLoop(ctx, tr.rdb, Keys(games), fmt.Sprintf("low-%d", i), db, tr.cfg.Count, total, linger, &cpu)
		done <- err
	}()
	w := NewWriter(tr.rdb, m, games)
	_, werr := w.Paced(ctx, res.LowRate, d)
	if err := <-done; err != nil {
		return storeStats{}, err
	}
	if werr != nil {
		return storeStats{}, werr
	}
	st := readStoreStats().sub(st0)
	st.Seconds = cpu.Seconds()
	fmt.Fprintf(tr.cfg.Log, "throughput: paced %.0f events/s, linger %v: store CPU %.1f µs per event, %.2f events per batch\n",
		res.LowRate, linger, st.perEvent(), st.batch())
	return st, nil
}
