// Package wait is how tests wait: poll a condition until it holds or a
// deadline passes, never sleep a guessed time.
package wait

import (
	"context"
	"testing"
	"time"

	"github.com/codemojex/feed/internal/proc"
)

// Poll is the interval between two looks at a condition (proc.Poll's).
const Poll = proc.PollInterval

// For polls cond until it holds, or fails tb after timeout, saying what it
// waited for.
func For(tb testing.TB, timeout time.Duration, what string, cond func() bool) {
	tb.Helper()
	Until(tb, timeout, cond, func() string { return what })
}

// Until is For with a description made when it fails, so it can show the
// last state the condition saw.
func Until(tb testing.TB, timeout time.Duration, cond func() bool, describe func() string) {
	tb.Helper()
	_, err := proc.Poll(context.Background(), timeout, "", func() (bool, error) { return cond(), nil })
	if err != nil {
		tb.Fatalf("timed out after %v waiting for %s", timeout, describe())
	}
}
