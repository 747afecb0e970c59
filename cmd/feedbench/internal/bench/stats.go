package bench

import (
	"bufio"
	"fmt"
	"os"
	"slices"
	"time"
)

// Quantiles summarise a set of durations.
type Quantiles struct {
	N                  int
	P50, P90, P99, Max time.Duration
}

// Summarize sorts ds in place and returns its quantiles (nearest rank).
func Summarize(ds []time.Duration) Quantiles {
	if len(ds) == 0 {
		return Quantiles{}
	}
	slices.Sort(ds)
	q := func(p float64) time.Duration {
		i := int(p*float64(len(ds))+0.5) - 1
		return ds[min(max(i, 0), len(ds)-1)]
	}
	return Quantiles{N: len(ds), P50: q(0.50), P90: q(0.90), P99: q(0.99), Max: ds[len(ds)-1]}
}

func (q Quantiles) String() string {
	return fmt.Sprintf("p50 %s · p99 %s · max %s (n=%d)", ms(q.P50), ms(q.P99), ms(q.Max), q.N)
}

// ms formats a duration in milliseconds with sensible precision.
func ms(d time.Duration) string {
	f := float64(d) / float64(time.Millisecond)
	switch {
	case f < 10:
		return fmt.Sprintf("%.2f ms", f)
	case f < 100:
		return fmt.Sprintf("%.1f ms", f)
	default:
		return fmt.Sprintf("%.0f ms", f)
	}
}

// Latencies returns the latency of every delivery of a line w sent since
// its last Reset, and per send time (one per Broadcast) the latest of them.
func Latencies(w *Writer, ds []Delivery) ([]time.Duration, map[int64]time.Duration) {
	lat := make([]time.Duration, 0, len(ds))
	last := map[int64]time.Duration{}
	for _, d := range ds {
		at, _, ok := w.Sent(d.ID)
		if !ok {
			continue
		}
		l := time.Duration(d.At - at)
		lat = append(lat, l)
		last[at] = max(last[at], l)
	}
	return lat, last
}

func dumpDeliveries(path string, w *Writer, from time.Time, ds []Delivery) {
	f, err := os.Create(path)
	if err != nil {
		return
	}
	defer f.Close()
	bw := bufio.NewWriter(f)
	defer bw.Flush()
	for _, d := range ds {
		if at, _, ok := w.Sent(d.ID); ok {
			fmt.Fprintf(bw, "%d,%d\n", (at-from.UnixNano())/1000, (d.At-at)/1000)
		}
	}
}

// windowP99 returns the p99 latency of the deliveries of each window of
// send time since from, sorted.
func windowP99(w *Writer, from time.Time, window time.Duration, ds []Delivery) []time.Duration {
	by := map[int64][]time.Duration{}
	for _, d := range ds {
		at, _, ok := w.Sent(d.ID)
		if !ok {
			continue
		}
		k := (at - from.UnixNano()) / int64(window)
		by[k] = append(by[k], time.Duration(d.At-at))
	}
	out := make([]time.Duration, 0, len(by))
	for _, lat := range by {
		out = append(out, Summarize(lat).P99)
	}
	slices.Sort(out)
	return out
}
