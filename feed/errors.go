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
	// ErrUnavailable marks a handler verdict made with Unavailable: the
	// infrastructure failed, not the entry.
	ErrUnavailable = errors.New("feed: infrastructure unavailable")
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
	// errDeadClaimed: another writer claimed the position's dead letter
	// less than deadClaimTTL ago (deadsteps.go); the entry stays pending.
	errDeadClaimed = errors.New("feed: dead letter under way elsewhere")
)

// Poison turns a handler failure into a verdict that no retry can fix: the
// entry is dead-lettered at once with reason. The result wraps both
// ErrPoison and reason.
func Poison(reason error) error { return PoisonAs("poison", reason) }

// PoisonAs is Poison with a label ("conflict", "future id"): the dead
// letter's reason starts with it and the dead-letter metric counts by it.
func PoisonAs(label string, reason error) error {
	if reason == nil {
		reason = errors.New("poisoned by handler")
	}
	if label == "" {
		label = "poison"
	}
	return &poisonError{label: label, reason: reason}
}

type poisonError struct {
	label  string
	reason error
}

func (e *poisonError) Error() string { return e.reason.Error() }

func (e *poisonError) Unwrap() []error { return []error{ErrPoison, e.reason} }

// Unavailable turns a handler failure into a verdict of broken
// infrastructure (a full disk, a store that cannot be written, a timeout):
// the entry is not at fault, so the failure never counts toward poison. The
// consumer keeps the entries in hand, pauses with capped backoff (Ready
// says why) and hands them to the handler again until it succeeds. The
// result wraps both ErrUnavailable and err.
func Unavailable(err error) error {
	if err == nil {
		err = errors.New("unavailable")
	}
	return &unavailableError{err: err}
}

type unavailableError struct{ err error }

func (e *unavailableError) Error() string { return e.err.Error() }

func (e *unavailableError) Unwrap() []error { return []error{ErrUnavailable, e.err} }
