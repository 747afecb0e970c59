package bench

import (
	"fmt"
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
