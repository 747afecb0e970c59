// Package logsample bounds log lines that outside input can repeat at
// will (a flood of bad entries, a client repeating a refused request): one
// line per key and period, which says how many it stands for.
package logsample

import (
	"sync"
	"time"
)

// Sampler lets through one log line per key and period, and counts the
// lines it held back. Its zero value is not usable: see New. It is safe
// for concurrent use.
type Sampler struct {
	every time.Duration
	mu    sync.Mutex
	last  map[string]time.Time
	held  map[string]int64
}

// New returns a Sampler that lets one line per key through every period.
func New(every time.Duration) *Sampler {
	return &Sampler{every: every, last: map[string]time.Time{}, held: map[string]int64{}}
}

// Allow reports whether to log key now, and how many of its lines were
// held back since the last one logged (for a "similar_unlogged" attribute).
// Keys are the caller's own constants, never outside input: each one is
// kept for good.
func (s *Sampler) Allow(key string) (bool, int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	if t, ok := s.last[key]; ok && now.Sub(t) < s.every {
		s.held[key]++
		return false, 0
	}
	n := s.held[key]
	s.last[key], s.held[key] = now, 0
	return true, n
}
