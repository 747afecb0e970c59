package web

import (
	"context"
	"sync"
	"time"
)

// readyMaxAge is how long a readiness result answers later probes. Probes
// come every few seconds per load balancer or node; a quarter second keeps
// the answer current for them all while bounding what any number of probes
// costs: at most four checks of Redis and SQLite a second.
const readyMaxAge = 250 * time.Millisecond

// readiness runs Config.Ready for /readyz on behalf of every probe at once.
// /readyz is outside the per-client request cap, as /healthz is: a probe
// shares its address with the traffic it watches, and a cap that refused
// it under load would take a serving replica out of rotation. So its cost
// is bounded here instead: concurrent probes share one check in flight,
// and a result younger than readyMaxAge is answered as it is.
type readiness struct {
	check func(context.Context) error

	mu      sync.Mutex
	at      time.Time     // when err was found; zero before the first check
	err     error         // the last check's result
	running chan struct{} // closed when the check in flight ends; nil if none
	waiting int           // probes waiting on the check in flight (for tests)
}

// get returns the result of a check that ended at most readyMaxAge ago,
// running one when there is none. The caller that starts a check runs it
// itself, detached from its request's cancellation (a probe that hangs up
// must not fail the probes waiting on the same check) and bounded by
// statusTimeout; the others wait for it or for their own ctx.
func (r *readiness) get(ctx context.Context) error {
	r.mu.Lock()
	if !r.at.IsZero() && time.Since(r.at) < readyMaxAge {
		err := r.err
		r.mu.Unlock()
		return err
	}
	if ch := r.running; ch != nil {
		r.waiting++
		r.mu.Unlock()
		var err error
		select {
		case <-ch:
			r.mu.Lock()
			err = r.err
		case <-ctx.Done():
			r.mu.Lock()
			err = ctx.Err()
		}
		r.waiting--
		r.mu.Unlock()
		return err
	}
	ch := make(chan struct{})
	r.running = ch
	r.mu.Unlock()

	err := errReadyPanicked
	defer func() {
		// Also on a panic in check (the recoverer answers 500): the next
		// probe must find no check in flight rather than wait forever.
		r.mu.Lock()
		r.err, r.at, r.running = err, time.Now(), nil
		r.mu.Unlock()
		close(ch)
	}()
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), statusTimeout)
	defer cancel()
	err = r.check(cctx)
	return err
}
