package web

import (
	"sync"
)

// frame is one encoded websocket message. The bytes are shared by every
// client of a hub and must not be modified.
type frame struct {
	seq  int64 // the line's seq; 0 for state and reset frames
	data []byte
}

// client is one websocket's mailbox. The hub never blocks on it: a full
// queue marks the client slow and drops it from the hub, and the client's
// own goroutine closes the socket.
type client struct {
	q        chan frame
	slow     chan struct{}
	slowOnce sync.Once
}

func newClient(queue int) *client {
	return &client{q: make(chan frame, queue), slow: make(chan struct{})}
}

// offer queues f without blocking and reports whether it fit.
func (c *client) offer(f frame) bool {
	select {
	case c.q <- f:
		return true
	default:
		c.slowOnce.Do(func() { close(c.slow) })
		return false
	}
}

// hub fans a game's frames out to the websockets of this replica that watch
// it. It lives while it has clients.
type hub struct {
	game    string
	mu      sync.Mutex
	clients map[*client]struct{}
}

// broadcast offers f to every client; slow ones are dropped from the hub
// (their own goroutine closes them). It returns how many were dropped.
func (h *hub) broadcast(f frame) (dropped int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for c := range h.clients {
		if !c.offer(f) {
			delete(h.clients, c)
			dropped++
		}
	}
	return dropped
}

// hubs is the replica's set of hubs, one per watched game.
type hubs struct {
	mu sync.Mutex
	m  map[string]*hub
}

func newHubs() *hubs { return &hubs{m: map[string]*hub{}} }

// subscribe adds c to game's hub, creating it on the first subscriber.
func (hs *hubs) subscribe(game string, c *client) *hub {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	h, ok := hs.m[game]
	if !ok {
		h = &hub{game: game, clients: map[*client]struct{}{}}
		hs.m[game] = h
	}
	h.mu.Lock()
	h.clients[c] = struct{}{}
	h.mu.Unlock()
	return h
}

// unsubscribe removes c from h and removes h once it is empty.
func (hs *hubs) unsubscribe(h *hub, c *client) {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	h.mu.Lock()
	delete(h.clients, c)
	empty := len(h.clients) == 0
	h.mu.Unlock()
	if empty && hs.m[h.game] == h {
		delete(hs.m, h.game)
	}
}

// get returns game's hub, or nil when no websocket watches game.
func (hs *hubs) get(game string) *hub {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	return hs.m[game]
}

func (hs *hubs) len() int {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	return len(hs.m)
}
