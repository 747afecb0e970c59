package web

import (
	"errors"
	"fmt"
	"time"

	"github.com/coder/websocket"
	nbws "github.com/lesismal/nbio/nbhttp/websocket"

	"github.com/codemojex/feed/internal/untrusted"
)

// How a poller socket ends: closed as slow (its writes stuck for
// WriteTimeout), as dead (a ping unanswered), on the server's request
// (shutdown, a data message from the peer, a reset), or by nbio when the
// peer goes; end gives back what it held, once.

// pollClose is a close the socket's writer is asked to send after the
// frames queued before it (requestClose).
type pollClose struct {
	code   websocket.StatusCode
	reason string
	grace  time.Duration
}

// errPollClosed is a write to a socket that has ended.
var errPollClosed = errors.New("web: connection closed")

// testHookPing, when set by a test, runs when the sweep has decided to
// ping a poller websocket, before the ping is written.
var testHookPing func()

// closeSlow closes a client that fell behind, with the reason that tells
// the page to resume from its cursor.
func (ps *pollSocket) closeSlow(err error) {
	ps.slowOnce.Do(func() {
		ps.p.s.log.Info("web: slow "+ps.what()+" closed", "game", ps.game, "seq", ps.last, untrusted.Err(err))
		ps.closeNow(websocket.StatusPolicyViolation, reasonSlow, ps.p.s.cfg.WriteTimeout)
	})
}

// countSlowOnce counts the socket in SlowCloses unless it was counted
// already: by this socket's writer, by the sweep, or by its hub (a full
// mailbox; client.claimSlow). It reports whether it counted.
func (ps *pollSocket) countSlowOnce() bool {
	if !ps.c.claimSlow() {
		return false
	}
	ps.p.s.countSlow(1)
	return true
}

// requestClose asks the writer to close the socket (code, reason), so that
// the close frame follows every frame written before it.
func (ps *pollSocket) requestClose(code websocket.StatusCode, reason string, grace time.Duration) {
	ps.closeReq.CompareAndSwap(nil, &pollClose{code: code, reason: reason, grace: grace})
	ps.wake()
}

// closeNow sends the close frame and drops the connection after grace if
// the peer has not answered by then (nbio closes it when the answer
// comes). Only the socket's writer calls it. Nothing is written after the
// close frame: every write of the socket (writeFrames, the sweep's ping,
// a pong, the answer to the peer's close) takes ctl and looks at closing
// first. Chromium fails the connection on a frame after the close ("Ping
// received after close"), and the page sees 1006, not the code sent.
func (ps *pollSocket) closeNow(code websocket.StatusCode, reason string, grace time.Duration) {
	ps.ctl.Lock()
	defer ps.ctl.Unlock()
	if ps.closing.Swap(true) {
		return
	}
	if ps.stream != nil {
		go ps.closeWhenSent(grace)
		return
	}
	ps.queued.Add(wireSize([]byte(reason)) + 2)
	if err := ps.conn.WriteClose(int(code), reason); err != nil {
		ps.hardClose()
		return
	}
	time.AfterFunc(grace, ps.hardClose)
}

// hardClose drops the connection without a handshake.
func (ps *pollSocket) hardClose() {
	ps.closing.Store(true)
	switch {
	case ps.stream != nil:
		ps.stream.Close()
	case ps.conn != nil:
		ps.conn.Close()
	}
}

// check is the sweep's look at one socket: a write that has not moved for
// WriteTimeout is a slow client, an unanswered ping a dead one; else it
// sends the ping when one is due.
func (ps *pollSocket) check(now time.Time, ping bool) {
	s := ps.p.s
	if ps.conn == nil && ps.stream == nil || ps.closing.Load() {
		return
	}
	if ps.unsent() > 0 && now.UnixNano()-ps.progress.Load() > int64(s.cfg.WriteTimeout) {
		if ps.countSlowOnce() {
			s.log.Info("web: slow "+ps.what()+" closed", "game", ps.game,
				"err", fmt.Sprintf("web: write stuck for %v", s.cfg.WriteTimeout))
		}
		ps.hardClose()
		return
	}
	if ps.stream != nil {
		// A stream has no pong: a peer that is gone stops taking bytes
		// (the stall above) or the kernel gives up on it (TCP_USER_TIMEOUT),
		// as on the std engine.
		if ping && ps.writeFrames(s.ping) != nil {
			ps.hardClose()
		}
		return
	}
	if at := ps.pingAt.Load(); at != 0 && now.UnixNano()-at > int64(s.cfg.WriteTimeout) {
		// No pong for WriteTimeout. The ping waits behind every byte
		// written before it: a peer still reading those is alive, and
		// the pong's clock restarts (the std engine's pinger does the
		// same).
		if ps.pingWait.moved(ps.delivered()) {
			ps.pingAt.CompareAndSwap(at, now.UnixNano())
			return
		}
		s.pongTimedOut(ps.game)
		ps.hardClose()
		return
	}
	if ping && ps.pingAt.CompareAndSwap(0, now.UnixNano()) {
		ps.pingWait.mark = ps.delivered()
		if testHookPing != nil {
			testHookPing()
		}
		if err := ps.control(nbws.PingMessage, nil); err != nil {
			ps.hardClose()
		}
	}
}

// control writes a control frame of nbio's framing (a ping, a pong)
// unless the close frame went out (see closeNow); then it writes nothing
// and the close handshake goes on.
func (ps *pollSocket) control(typ nbws.MessageType, b []byte) error {
	ps.ctl.Lock()
	defer ps.ctl.Unlock()
	if ps.closing.Load() {
		return nil
	}
	ps.queued.Add(wireSize(b))
	return ps.conn.WriteMessage(typ, b)
}

// delivered is the bytes of this socket that reached the peer (see
// delivered in ping.go).
func (ps *pollSocket) delivered() int64 {
	return delivered(ps.written.Load(), ps.conn.UnderlayerConn())
}

// end is the socket's close callback (or the failed handshake's): it gives
// back what the socket held, once. Why nbio closed the connection is logged
// at Debug: a socket that ends in its backfill logs only the write that
// found it closed, not what closed it.
func (ps *pollSocket) end(err error, release func()) {
	ps.endOnce.Do(func() {
		if err != nil {
			ps.p.s.log.Debug("web: "+ps.what()+" connection ended", "game", ps.game, untrusted.Err(err))
		}
		ps.closing.Store(true)
		// A backfill waiting for room must see the end now, not take
		// the silence for a slow client a WriteTimeout later.
		select {
		case ps.room <- struct{}{}:
		default:
		}
		ps.unsubscribe()
		release()
		ps.p.s.wg.Done()
	})
}
