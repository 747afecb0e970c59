package web

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Starting answers on a replica's listener from the moment it is bound
// (Listen) until the Server takes it (Config.Listener): /healthz 200 "ok"
// and /readyz 503 "not ready" at once, while any other request waits for
// the Server and is then served by it (Handover), or answered 503 when the
// start fails. A replica binds its port first and then opens the store
// (migrations) and waits for its consumer name (up to 7 s while a crashed
// holder's lease runs out); until 6 Dec 2026 nothing answered the bound
// port meanwhile, so a liveness probe hung for that long and an
// orchestrator could restart a replica that was only starting
// (TestHealthzWhileStarting). A page's websocket taken during the start
// waits for the Server as it did, and is no miss of its transport
// (docs/live-page.md).
type Starting struct {
	ln   *startingListener
	srv  *http.Server
	done chan struct{} // Serve returned

	released sync.Once
	handed   sync.Once
	opened   chan struct{} // closed by Handover
	next     http.Handler  // set before opened is closed; nil: the start failed
}

// ServeStarting serves ln as Starting says until Release. peerTimeout is
// Config.PeerTimeout, given to the connections accepted here as the Server
// gives it to its own: an event stream opened while the replica starts is
// handed to the Server as any other.
func ServeStarting(ln net.Listener, peerTimeout time.Duration, log *slog.Logger) *Starting {
	if log == nil {
		log = slog.Default()
	}
	sl := &startingListener{Listener: ln, accept: ln}
	if peerTimeout > 0 {
		sl.accept = &peerTimeoutListener{Listener: ln, timeout: peerTimeout, log: log}
	}
	st := &Starting{ln: sl, done: make(chan struct{}), opened: make(chan struct{})}
	st.srv = &http.Server{
		Handler:           http.HandlerFunc(st.serve),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    16 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	go func() {
		defer close(st.done)
		st.srv.Serve(st.ln)
	}()
	return st
}

func (st *Starting) serve(w http.ResponseWriter, r *http.Request) {
	select {
	case <-st.opened:
	default:
		switch r.URL.Path {
		case "/healthz":
			w.Header().Set("X-Content-Type-Options", "nosniff")
			writeHealthy(w)
			return
		case "/readyz":
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.Header().Set("X-Content-Type-Options", "nosniff")
			w.Header().Set("Cache-Control", "no-store")
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte("not ready\n"))
			return
		}
		select {
		case <-st.opened:
		case <-r.Context().Done():
			return
		}
	}
	if st.next == nil {
		w.Header().Set("Retry-After", "1")
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		http.Error(w, "not serving", http.StatusServiceUnavailable)
		return
	}
	st.next.ServeHTTP(w, r)
}

// Release stops accepting and returns once nothing accepts on the
// listener, which stays open and bound for the Server to take: no
// connection is refused in between. The connections accepted so far stay
// open, their requests waiting for Handover.
func (st *Starting) Release() {
	st.released.Do(func() {
		st.ln.stop()
		<-st.done
		st.ln.resume()
	})
}

// Handover serves the requests waiting, and every later one on the
// connections Starting accepted, with h: the Server's handler. A nil h
// answers them 503 (the start failed). Only the first call counts.
func (st *Starting) Handover(h http.Handler) {
	st.handed.Do(func() {
		st.next = h
		close(st.opened)
	})
}

// Close releases the listener if need be, answers what still waits 503,
// and waits up to 5 s for the requests in flight on Starting's
// connections (once the Server is closed, nothing of its holds them
// longer), then closes those connections.
func (st *Starting) Close() {
	st.Release()
	st.Handover(nil)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := st.srv.Shutdown(ctx); err != nil {
		st.srv.Close()
	}
}

// startingListener is the listener Starting serves: stop wakes and ends
// Accept (a deadline in the past), and Close leaves the socket bound.
type startingListener struct {
	net.Listener              // the bound socket: its deadline wakes Accept
	accept       net.Listener // Listener, or it with the peer timeout
	stopped      atomic.Bool
}

type deadliner interface{ SetDeadline(time.Time) error }

// errHandedOver ends Starting's Serve; it is no net.Error, so Serve does
// not retry it as it would a timeout.
var errHandedOver = errors.New("web: listener handed over")

func (l *startingListener) Accept() (net.Conn, error) {
	c, err := l.accept.Accept()
	if err != nil && l.stopped.Load() {
		return nil, errHandedOver
	}
	return c, err
}

// Close is called by Serve as it returns; the socket stays bound.
func (l *startingListener) Close() error { return nil }

// stop wakes and ends Accept.
func (l *startingListener) stop() error {
	l.stopped.Store(true)
	if d, ok := l.Listener.(deadliner); ok {
		return d.SetDeadline(time.Now())
	}
	return l.Listener.Close() // no deadline to wake Accept: give the port up
}

// resume clears the deadline stop set, for the Server's Accept.
func (l *startingListener) resume() {
	if d, ok := l.Listener.(deadliner); ok {
		d.SetDeadline(time.Time{})
	}
}
