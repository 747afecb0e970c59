package backoff_test

import (
	"testing"
	"time"

	"github.com/codemojex/feed/internal/backoff"
)

func TestNext(t *testing.T) {
	const ms = time.Millisecond
	tests := []struct {
		name     string
		min, max time.Duration
		// ceilings of the successive waits: each wait is in [c/2, c].
		ceilings []time.Duration
	}{
		{"doubles to the cap", 10 * ms, 75 * ms, []time.Duration{10 * ms, 20 * ms, 40 * ms, 75 * ms, 75 * ms}},
		{"min equals max", 5 * ms, 5 * ms, []time.Duration{5 * ms, 5 * ms, 5 * ms}},
		{"odd nanoseconds", 3, 1000, []time.Duration{3, 6, 12, 24, 48, 96, 192, 384, 768, 1000}},
		{"no overflow after many", time.Second, time.Minute, append(
			[]time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 32 * time.Second},
			repeat(time.Minute, 60)...)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for round := 0; round < 50; round++ { // the draws are random
				b := backoff.Backoff{Min: tt.min, Max: tt.max}
				for i, c := range tt.ceilings {
					if got := b.Next(); got < c/2 || got > c {
						t.Fatalf("round %d: wait %d = %v, want in [%v, %v]", round, i, got, c/2, c)
					}
				}
				b.Reset()
				if got := b.Next(); got < tt.ceilings[0]/2 || got > tt.ceilings[0] {
					t.Fatalf("after Reset: wait = %v, want in [%v, %v]", got, tt.ceilings[0]/2, tt.ceilings[0])
				}
			}
		})
	}
}

// TestNextSpreads checks the jitter is there: many draws at the cap are not
// all the same, and both halves of the random range are reached.
func TestNextSpreads(t *testing.T) {
	b := backoff.Backoff{Min: time.Second, Max: time.Second}
	var low, high bool
	for i := 0; i < 1000 && !(low && high); i++ {
		d := b.Next()
		low = low || d < 750*time.Millisecond
		high = high || d > 750*time.Millisecond
	}
	if !low || !high {
		t.Errorf("1000 draws in [0.5s, 1s]: below 0.75s %v, above %v; want both", low, high)
	}
}

func repeat(d time.Duration, n int) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = d
	}
	return out
}
