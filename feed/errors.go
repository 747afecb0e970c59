package feed

import "errors"

// Errors of this package. Decode's errors wrap ErrMalformed; Poison's verdicts
// wrap ErrPoison; Ready's answers wrap ErrNotReady.
var (
	// ErrMalformed marks an entry that no retry can fix (docs/contracts.md,
	// "Bad entries"): it is dead-lettered at once with the wrapped reason.
	ErrMalformed = errors.New("feed: malformed entry")
	// ErrPoison marks a handler verdict made with Poison.
	ErrPoison = errors.New("feed: poison")
	// ErrPanic wraps a handler panic, recovered and turned into an error.
	ErrPanic = errors.New("feed: handler panicked")
	// ErrConsumerTaken is returned by Open when another live process holds
	// the consumer name's lease.
	ErrConsumerTaken = errors.New("feed: consumer name is held by a live process")
	// ErrLeaseLost is reported by Ready while this process does not hold its
	// consumer name's lease (it does not read then).
	ErrLeaseLost = errors.New("feed: consumer lease lost")
	// ErrNotReady is wrapped by every error Ready returns.
	ErrNotReady = errors.New("feed: not ready")
	// ErrClosed is reported by Ready after Close.
	ErrClosed = errors.New("feed: consumer closed")
	// ErrConfig is wrapped by Open's validation errors.
	ErrConfig = errors.New("feed: invalid config")
	// ErrDeadNotFound is returned when a dead letter to requeue or drop does
	// not exist.
	ErrDeadNotFound = errors.New("feed: dead letter not found")
)

// Poison turns a handler failure into a verdict that no retry can fix: the
// entry is dead-lettered at once with reason. The result wraps both
// ErrPoison and reason.
func Poison(reason error) error {
	if reason == nil {
		reason = errors.New("poisoned by handler")
	}
	return &poisonError{reason: reason}
}

type poisonError struct{ reason error }

func (e *poisonError) Error() string { return e.reason.Error() }

func (e *poisonError) Unwrap() []error { return []error{ErrPoison, e.reason} }
