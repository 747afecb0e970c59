package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"github.com/lesismal/nbio"
	nbws "github.com/lesismal/nbio/nbhttp/websocket"

	"github.com/codemojex/feed/internal/untrusted"
)

// pollSocket is one websocket, or one event stream (stream), on the nbio
// engine.
type pollSocket struct {
	p    *poller
	game string
	c    *client
	h    *hub
	// conn is set by the upgrader's open handler, or by nbio's first
	// callback if that comes first; nil for a stream. Atomic: nbio may
	// parse a peer's close frame, on its own goroutine, as soon as the 101
	// is written, before Upgrade returns to the handler (the race detector
	// saw onClose read it while livePoll set it).
	conn atomic.Pointer[nbws.Conn]

	// stream is the connection of an event stream (pollstream.go): frames
	// go out as server-sent events, the sweep's pings are ping events, and a
	// close is the connection's, once what was written has gone out.
	stream *nbio.Conn

	last    int64 // seq of the last line written; the writer's alone
	deflate bool  // permessage-deflate was negotiated (deflate.go)

	// wire, when set (newWireCheck), is given the bytes the kernel takes,
	// under nbio's lock of the socket.
	wire func(b []byte)

	queued   atomic.Int64  // bytes handed to nbio
	written  atomic.Int64  // bytes the kernel took
	progress atomic.Int64  // unix ns: unsent bytes last moved (or started)
	room     chan struct{} // one slot: bytes were written (the backfill waits on it)

	busy    atomic.Bool // a writer holds the socket
	closing atomic.Bool // a close frame went out: nothing more is written
	// ctl is taken by every write of the socket with a look at closing,
	// so that nothing follows the close frame (see closeNow).
	ctl      sync.Mutex
	closeReq atomic.Pointer[pollClose]

	pingAt   atomic.Int64 // unix ns of the last unanswered ping, or of when bytes ahead of it last moved; 0 when answered
	pingWait pongWait     // the sweep's alone

	mu      sync.Mutex // guards the fields below: end races the subscription
	started bool       // counted in clients and subscribed to h
	ended   bool

	endOnce  sync.Once
	slowOnce sync.Once
}

// livePoll is live's tail for the nbio engine: the admission checks are
// done, release gives back the slots, and the s.wg slot is taken.
func (s *Server) livePoll(w http.ResponseWriter, r *http.Request, game, key string, after int64, rs resume, c *client, release func()) {
	// The handler's own slot, taken while the socket's is surely held
	// (the handshake is still ahead): the socket's goes back at its
	// close, which may come in the middle of the backfill below, and
	// Close must not return while that still runs on this goroutine
	// (TestCloseWaitsForBackfill).
	s.wg.Add(1)
	defer s.wg.Done()
	p := s.poll
	ps := &pollSocket{p: p, game: game, c: c, room: make(chan struct{}, 1)}
	ps.c.wake = ps.wake
	ps.c.flush = ps.flushHere
	ps.busy.Store(true) // the backfill below is the first writer
	up := nbws.NewUpgrader()
	up.Engine = p.eng
	up.KeepaliveTime = 0 // liveness is the sweep's pings
	up.MessageLengthLimit = 512
	up.CheckOrigin = func(r *http.Request) bool { return originAllowed(r, s.cfg.AllowedOrigins) }
	if !s.cfg.NoCompression {
		// nbio answers an offer with no context takeover either way and
		// inflates what the page sends; this package frames and
		// compresses what it writes (deflate.go), so nbio's own
		// compression of writes stays off.
		up.EnableCompression(true)
		ps.deflate = offersDeflate(r)
	}
	if newWireCheck != nil {
		ps.wire = newWireCheck(game, ps.deflate)
	}
	up.OnOpen(func(c *nbws.Conn) {
		ps.conn.Store(c)
		c.EnableWriteCompression(false)
		c.SetSession(ps)
	})
	up.OnMessage(ps.onMessage)
	up.SetPongHandler(func(*nbws.Conn, string) { ps.pingAt.Store(0) })
	up.SetPingHandler(func(c *nbws.Conn, data string) {
		ps.conn.CompareAndSwap(nil, c)
		// nbio's own answer would not look at closing (see closeNow).
		if ps.control(nbws.PongMessage, []byte(data)) != nil {
			c.Close()
		}
	})
	up.SetCloseHandler(ps.onClose)
	up.OnClose(func(_ *nbws.Conn, err error) { ps.end(err, release) })
	conn, err := up.UpgradeAndTransferConnToPoller(w, r, nil)
	if err != nil {
		if ps.conn.Load() == nil {
			// Refused before the switch (403 for a foreign Origin, 400
			// for a request that is no websocket handshake): answered.
			mUpgradesRejected.WithLabelValues("handshake").Inc()
			s.log.Info("web: websocket refused", "game", game, "remote", key, untrusted.Err(err))
		}
		ps.end(err, release)
		return
	}
	ps.conn.Store(conn)
	defer func() {
		if v := recover(); v != nil {
			s.log.Error("web: websocket panicked", "game", game, untrusted.Attr("panic", fmt.Sprint(v)), "stack", string(debug.Stack()))
			ps.hardClose()
		}
	}()
	if !ps.start() {
		return // closed during the handshake's tail
	}
	if s.ctx.Err() != nil {
		// Close began before this socket was listed: shutdown missed it.
		ps.requestClose(websocket.StatusGoingAway, reasonShutdown, time.Second)
	}
	s.joined(ps.c, game)
	if testHookSubscribed != nil {
		testHookSubscribed(game)
	}
	ws := &wsConn{s: s, poll: ps, game: game}
	last, err := s.backfill(ws, game, after, rs)
	if err != nil {
		if !errors.Is(err, errReset) {
			s.log.Debug("web: websocket ended in backfill", "game", game, "seq", after, untrusted.Err(err))
		}
		return
	}
	ps.last = last
	ps.flush()
}

// onMessage takes a page's probe; any other message closes the socket (see
// readProbes).
func (ps *pollSocket) onMessage(c *nbws.Conn, typ nbws.MessageType, b []byte) {
	ps.conn.CompareAndSwap(nil, c)
	ps.pingAt.Store(0) // the peer is alive
	if typ != nbws.TextMessage || string(b) != probeMessage {
		ps.requestClose(websocket.StatusPolicyViolation, "unexpected data message", time.Second)
		return
	}
	ps.c.offer(probeFrame)
}

// onClose takes the peer's close frame; nbio closes the connection after
// it. A close the peer began is answered with its code, as nbio's own
// handler does. One that answers the server's (closeNow: a reset, a slow
// client, a shutdown, a failed store read, an unexpected message) ends the
// handshake: nbio's handler would send a second close frame, which a
// browser takes for a protocol error ("Close received after close") and
// fails the connection, so the page saw 1006 and no reason for every close
// the server began.
func (ps *pollSocket) onClose(c *nbws.Conn, code int, reason string) {
	ps.conn.CompareAndSwap(nil, c) // before the open handler ran
	ps.ctl.Lock()
	defer ps.ctl.Unlock()
	if ps.closing.Swap(true) {
		return
	}
	if code == int(websocket.StatusNoStatusRcvd) {
		_ = ps.writeControl(nbws.CloseMessage, nil)
		return
	}
	_ = ps.writeControl(nbws.CloseMessage, closePayload(code, reason))
}

// wake runs a writer unless one holds the socket; that one looks again
// before it lets go.
func (ps *pollSocket) wake() {
	if ps.busy.CompareAndSwap(false, true) {
		go ps.flush()
	}
}

// flushHere runs the writer on the caller's goroutine unless one holds the
// socket. nbio never blocks a write (what the kernel does not take it
// keeps), so the tailer can write its pass's frames itself (see wakes).
func (ps *pollSocket) flushHere() {
	if ps.busy.CompareAndSwap(false, true) {
		ps.flush()
	}
}

// flush is the socket's writer: it drains the mailbox in order until it is
// empty, then lets go of the socket, and takes it again if frames came in
// meanwhile. A close request or a slow mark ends it holding the socket, so
// that nothing is written after the close frame.
func (ps *pollSocket) flush() {
	s := ps.p.s
	defer func() {
		if v := recover(); v != nil {
			s.log.Error("web: websocket panicked", "game", ps.game, untrusted.Attr("panic", fmt.Sprint(v)), "stack", string(debug.Stack()))
			ps.hardClose()
		}
	}()
	for {
		if ps.closing.Load() {
			return
		}
		if r := ps.closeReq.Load(); r != nil {
			ps.closeNow(r.code, r.reason, r.grace)
			return
		}
		if isClosed(ps.c.slow) {
			ps.countSlowOnce() // its hub's, or a probe's answer found it full
			ps.closeSlow(nil)
			return
		}
		if !ps.writeQueued() {
			return
		}
		ps.busy.Store(false)
		if !ps.pending() || !ps.busy.CompareAndSwap(false, true) {
			return
		}
	}
}

// pending reports whether the writer has something to do.
func (ps *pollSocket) pending() bool {
	if ps.closeReq.Load() != nil || isClosed(ps.c.slow) {
		return true
	}
	ps.c.mu.Lock()
	defer ps.c.mu.Unlock()
	return len(ps.c.queue) > 0
}

// writeBackfill writes one backfill frame once the unsent bytes leave room
// for it: the backfill runs on the request's goroutine and may wait, as
// the std engine's blocking writes do, up to WriteTimeout without progress.
// A frame bigger than that room (a big game's panel) goes out once nothing
// is unsent, as the live path sends it (writeQueued): waiting for room it
// can never have would close every socket of the game as slow.
func (ps *pollSocket) writeBackfill(f frame) error {
	s := ps.p.s
	pb := getGather()
	b := ps.appendFrame(*pb, f)
	defer putGather(pb, b)
	timer := time.NewTimer(s.cfg.WriteTimeout)
	defer timer.Stop()
	for ps.unsent() > 0 && ps.unsent()+int64(len(b)) > ps.p.limit/2 {
		select {
		case <-ps.room:
			if !timer.Stop() {
				<-timer.C
			}
			timer.Reset(s.cfg.WriteTimeout)
		case <-timer.C:
			ps.countSlowOnce()
			ps.closeSlow(fmt.Errorf("web: backfill write stuck for %v: %w", s.cfg.WriteTimeout, context.DeadlineExceeded))
			return context.DeadlineExceeded
		case <-s.ctx.Done():
			// The server shuts down: its requestClose found this writer
			// busy and left the close to it, as a std-engine backfill
			// closes GoingAway (wsConn.fail).
			ps.closeNow(websocket.StatusGoingAway, reasonShutdown, time.Second)
			return s.ctx.Err()
		}
		if ps.closing.Load() {
			return errPollClosed
		}
	}
	if ps.closing.Load() {
		return errPollClosed
	}
	return ps.writeFrames(b)
}

// start lists the socket, counts it and subscribes it to its hub, unless
// it has ended already.
func (ps *pollSocket) start() bool {
	s := ps.p.s
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.ended {
		return false
	}
	ps.p.mu.Lock()
	ps.p.socks[ps] = struct{}{}
	ps.p.mu.Unlock()
	ps.count().Add(1)
	ps.h = s.hubs.subscribe(ps.game, ps.c)
	ps.started = true
	return true
}

// unsubscribe undoes start, if it ran.
func (ps *pollSocket) unsubscribe() {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.ended = true
	if !ps.started {
		return
	}
	ps.started = false
	s := ps.p.s
	ps.p.mu.Lock()
	delete(ps.p.socks, ps)
	ps.p.mu.Unlock()
	// Out of the hub before out of the count, as on the std engine (its
	// defers): a socket no longer counted gets no frame of a pass that
	// began after (TestBoardFramesOnlyWhenEverySocketAsks).
	s.hubs.unsubscribe(ps.h, ps.c)
	ps.count().Add(-1)
	s.changed()
}

// what names the socket in logs.
func (ps *pollSocket) what() string {
	if ps.stream != nil {
		return "event stream"
	}
	return "websocket"
}

// count is the gauge the socket is counted in while it is started.
func (ps *pollSocket) count() *atomic.Int64 {
	if ps.stream != nil {
		return &ps.p.s.stats.streams
	}
	return &ps.p.s.stats.clients
}
