package proc

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// PollInterval is the interval between two looks at a condition: short
// enough not to slow a caller, long enough not to busy a shared machine.
const PollInterval = 5 * time.Millisecond

// ErrTimeout is returned by Poll when its condition did not hold in time.
var ErrTimeout = errors.New("proc: timed out")

// Poll calls cond every PollInterval until it returns true or an error,
// ctx ends, or timeout passes (ErrTimeout, naming what it waited for). It
// returns how long it waited.
func Poll(ctx context.Context, timeout time.Duration, what string, cond func() (bool, error)) (time.Duration, error) {
	start := time.Now()
	for {
		ok, err := cond()
		if err != nil {
			return time.Since(start), err
		}
		if ok {
			return time.Since(start), nil
		}
		if time.Since(start) > timeout {
			return time.Since(start), fmt.Errorf("%w after %v: %s", ErrTimeout, timeout, what)
		}
		select {
		case <-ctx.Done():
			return time.Since(start), ctx.Err()
		case <-time.After(PollInterval):
		}
	}
}
