package web

import (
	"sync"
	"sync/atomic"
)

// frame is one encoded websocket message. The bytes are shared by every
// client of a hub and must not be modified.
type frame struct {
	seq  int64  // the line's seq; 0 for other frames
	typ  string // frame type for the counters when not a line or a state
	data []byte
	z    *deflated // data compressed, made once for every socket; nil: never compressed (deflate.go)
}

// kind is f's frame type: a line, a state (the scoreboard), or its typ.
func (f frame) kind() string {
	switch {
	case f.seq != 0:
		return frameLine
	case f.typ == "":
		return frameState
	}
	return f.typ
}

// client is one websocket's mailbox: a queue that grows on demand up to a
// bound instead of a channel preallocated at the bound. A long session that
// once had a burst would otherwise keep SendQueue × 32 B resident per client;
// here a drained client holds no queue at all. The hub never blocks on it: a
// full mailbox marks the client slow and drops it from the hub, and the
// client's own goroutine closes the socket.
type client struct {
	max     int          // unwritten frames allowed before the client is slow
	whole   bool         // the socket did not ask for board frames (board=1)
	pending atomic.Int64 // queued, or drained and not yet taken by the writer

	mu    sync.Mutex
	queue []frame // nil when drained, so an idle client holds nothing

	ready    chan struct{} // one slot: wakes the writer after an offer
	slow     chan struct{}
	slowOnce sync.Once
	counted  atomic.Bool // counted in SlowCloses (claimSlow)
	// wake, when set, is called after every offer instead of signalling
	// ready (and after the client turned slow): the nbio engine has no
	// goroutine waiting on ready (see pollsocket.go).
	wake func()
	// flush, when set (with wake), writes the queued frames on the
	// caller's goroutine unless a writer holds the socket: the tailer's
	// way to wake (see wakes).
	flush func()
	// pass is the tailer's last pass that listed c in its wakes; only
	// the tailer's goroutine touches it.
	pass uint64
}

// newClient returns the mailbox of a socket that asked for board frames
// (boards) or takes whole scoreboard panels only.
func newClient(queue int, boards bool) *client {
	return &client{max: queue, whole: !boards, ready: make(chan struct{}, 1), slow: make(chan struct{})}
}

// claimSlow reports whether the caller is the first to count c in
// SlowCloses, and takes that turn. A client can be judged slow twice in
// the same moments: by its hub, its mailbox full, and by its own writer,
// a write stuck for WriteTimeout (the hub offers to a client until it
// unsubscribes, after its writer gave up). Whoever claims first counts it;
// a look at slow first was not enough, as the hub could close it just
// after (TestSlowClientCountedOnce).
func (c *client) claimSlow() bool { return c.counted.CompareAndSwap(false, true) }

// isClosed reports whether ch is closed, without waiting: the
// engines ask it of a client's slow channel.
func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// offer queues f without blocking and reports whether it fit. The bound
// counts what the writer has drained but not started to write, so a client
// holds at most max unwritten frames, as a channel of max slots would.
func (c *client) offer(f frame) bool {
	if !c.put(f) {
		return false
	}
	c.notify()
	return true
}

// put queues f without waking the writer and reports whether it fit; a
// client found full turns slow, and its writer is woken to close it.
func (c *client) put(f frame) bool {
	c.mu.Lock()
	// pending only falls outside mu (the writer taking frames), so the
	// check can only be too strict by frames taken meanwhile.
	if c.pending.Load() >= int64(c.max) {
		c.mu.Unlock()
		c.slowOnce.Do(func() { close(c.slow) })
		if c.wake != nil {
			c.wake()
		}
		return false
	}
	c.pending.Add(1)
	c.queue = append(c.queue, f)
	c.mu.Unlock()
	return true
}

// notify wakes the writer after frames were put.
func (c *client) notify() {
	if c.wake != nil {
		c.wake()
		return
	}
	select {
	case c.ready <- struct{}{}:
	default: // the writer has a wake-up pending and will drain this too
	}
}

// drain hands the writer every queued frame in offer order and leaves the
// mailbox without a backing array: the batch is garbage once written. The
// writer calls took once per frame as it starts writing it.
func (c *client) drain() []frame {
	c.mu.Lock()
	q := c.queue
	c.queue = nil
	c.mu.Unlock()
	return q
}

// took frees the slot of one drained frame.
func (c *client) took() { c.pending.Add(-1) }

// hub fans a game's frames out to the websockets of this replica that watch
// it. It lives while it has clients.
type hub struct {
	game    string
	mu      sync.Mutex
	clients map[*client]struct{}
	subs    atomic.Int64 // subscriptions so far: the tailer's board compares it
	whole   atomic.Int64 // clients that take whole panels only (client.whole)
}

// subscriptions returns how many clients have subscribed to h so far.
func (h *hub) subscriptions() int64 { return h.subs.Load() }

// takeBoards reports whether every client of h takes board frames.
func (h *hub) takeBoards() bool { return h.whole.Load() == 0 }

// removeLocked takes c out of h, once; h.mu is held.
func (h *hub) removeLocked(c *client) {
	if _, ok := h.clients[c]; !ok {
		return
	}
	delete(h.clients, c)
	if c.whole {
		h.whole.Add(-1)
	}
}

// broadcast offers f to every client and wakes their writers; slow ones
// are dropped from the hub (their own goroutine closes them). It returns
// how many it dropped that were not counted as slow already (claimSlow).
func (h *hub) broadcast(f frame) (dropped int) { return h.broadcastTo(f, nil) }

// broadcastTo is broadcast for the tailer: with w, a client whose frames
// the caller can write itself (the nbio engine's) is not woken but listed
// in w, once per pass, and the tailer writes to it when its pass has queued
// every frame (wakes.run). A pass's frames then cost no goroutine per
// socket and frame, and a socket's frames of one pass mostly go in one
// write (docs/benchmarks-journal.md, "the tailer writes").
func (h *hub) broadcastTo(f frame, w *wakes) (dropped int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for c := range h.clients {
		if c.whole && f.typ == frameBoard {
			// Subscribed while the tailer made the patch: a whole
			// panel follows (sendBoard).
			continue
		}
		var ok bool
		if w != nil && c.flush != nil {
			if ok = c.put(f); ok {
				w.add(c)
			}
		} else {
			ok = c.offer(f)
		}
		if !ok {
			h.removeLocked(c)
			if c.claimSlow() {
				dropped++
			}
		}
	}
	return dropped
}

// wakes lists the clients a tailer's pass queued frames for without waking
// them (see broadcastTo). It belongs to the tailer's goroutine.
type wakes struct {
	done uint64 // passes ended (and spills): the current pass is done+1
	list []*client
}

// add lists c unless the current pass listed it already. Passes count
// from 1, so a new client (pass 0) is never taken for listed.
func (w *wakes) add(c *client) {
	if c.pass != w.done+1 {
		c.pass = w.done + 1
		w.list = append(w.list, c)
	}
}

// spillAt is how many listed sockets a pass writes to on the tailer's
// goroutine: a pass that lists more hands each spillAt of them to a
// goroutine as it goes, so that a burst to thousands of sockets is written
// while its pass still queues frames, and on every core, as a goroutine
// per socket did; the live path's passes, of tens of sockets, start none.
const spillAt = 256

// spill hands the listed clients to a goroutine that runs their writers
// once they are spillAt. The tailer calls it between broadcasts (a writer
// must not run under the hub's lock). A client that gets more frames in
// the same pass is listed again: its writer, if still busy then, looks at
// the mailbox again before it lets go.
func (w *wakes) spill() {
	if len(w.list) < spillAt {
		return
	}
	part := w.list
	w.list = nil
	w.done++
	go flushAll(part)
}

// run ends a pass: it runs the listed clients' writers on the caller's
// goroutine, holding no lock (a writer's close may unsubscribe its socket,
// which takes the hub's). A client whose writer is busy is left to it;
// that writer looks at the mailbox again before it lets go.
func (w *wakes) run() {
	flushAll(w.list)
	clear(w.list)
	w.list = w.list[:0]
	w.done++
}

func flushAll(cs []*client) {
	for _, c := range cs {
		c.flush()
	}
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
	h.subs.Add(1)
	if c.whole {
		h.whole.Add(1)
	}
	h.mu.Unlock()
	return h
}

// unsubscribe removes c from h and removes h once it is empty.
func (hs *hubs) unsubscribe(h *hub, c *client) {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	h.mu.Lock()
	h.removeLocked(c)
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
