// Package backoff spaces out the retries of a long-lived part after errors.
package backoff

import (
	"math/rand/v2"
	"time"
)

// Backoff is a capped exponential backoff with equal jitter. The n-th call
// of Next since the last Reset (counting from 0) returns a duration drawn
// uniformly from [d/2, d], where d = min(Max, Min·2^n).
//
// Equal jitter rather than full jitter: the fixed half keeps a floor under
// every wait, so a part that fails at once never retries in a tight loop,
// while the random half spreads replicas apart, so a wave of them does not
// hit a recovering Redis or SQLite at one instant.
//
// The zero Backoff is not useful: set Min and Max (0 < Min <= Max). A
// Backoff is not safe for concurrent use.
type Backoff struct {
	Min, Max time.Duration
	n        int
}

// Next returns the wait before the next retry and counts one attempt.
func (b *Backoff) Next() time.Duration {
	d := b.Min << min(b.n, 30)
	if d > b.Max || d <= 0 {
		d = b.Max
	}
	b.n++
	return d/2 + rand.N(d-d/2+1)
}

// Reset starts the sequence again from Min, after a success.
func (b *Backoff) Reset() { b.n = 0 }
