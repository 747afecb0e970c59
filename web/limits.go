package web

import (
	"net/http"
	"sync"
	"time"
)

// slots counts what each client key holds at once (requests in flight,
// open websockets) against a cap. A slot is taken before the work starts
// and given back when it ends, so the cap holds exactly however many
// requests race for it.
type slots struct {
	max int

	mu   sync.Mutex
	held map[string]int
}

func newSlots(max int) *slots { return &slots{max: max, held: map[string]int{}} }

// acquire takes a slot for key, reporting false when key holds max already.
func (sl *slots) acquire(key string) bool {
	sl.mu.Lock()
	defer sl.mu.Unlock()
	if sl.held[key] >= sl.max {
		return false
	}
	sl.held[key]++
	return true
}

// release gives back a slot acquire took.
func (sl *slots) release(key string) {
	sl.mu.Lock()
	defer sl.mu.Unlock()
	if sl.held[key] <= 1 {
		delete(sl.held, key) // the map holds only clients with work in hand
		return
	}
	sl.held[key]--
}

// total returns the slots held by every key.
func (sl *slots) total() int64 {
	sl.mu.Lock()
	defer sl.mu.Unlock()
	var n int64
	for _, c := range sl.held {
		n += int64(c)
	}
	return n
}

// limitRequests caps the plain (non-websocket) requests one client has in
// flight: a client that opens many connections and reads slowly holds at
// most MaxRequestsPerClient handlers, and their buffers, at once.
func (s *Server) limitRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := s.clientKey(r)
		if !s.requests.acquire(key) {
			mRequestsRejected.Inc()
			w.Header().Set("Retry-After", "1")
			http.Error(w, "too many requests in flight from your address", http.StatusTooManyRequests)
			return
		}
		defer s.requests.release(key)
		next.ServeHTTP(w, r)
	})
}

// writeDeadline gives a plain response ResponseTimeout to be written in
// full: a client that asks and never reads is cut off then, and its handler
// and buffers go with it. http.Server.WriteTimeout would also end every
// websocket, so the deadline is set per request on the routes that are not
// websockets (and live clears it before the handshake all the same).
func (s *Server) writeDeadline(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		if err := rc.SetWriteDeadline(time.Now().Add(s.cfg.ResponseTimeout)); err != nil {
			s.log.Warn("web: set write deadline", "err", err)
		}
		next.ServeHTTP(w, r)
	})
}
