package web

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
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
// a pong, the answer to the peer's close, and nbio's own close frames:
// ownWrites) takes ctl and looks at closing first. Chromium fails the
// connection on a frame after the close ("Ping received after close",
// "Close received after close"), and the page sees 1006, not the code
// sent.
func (ps *pollSocket) closeNow(code websocket.StatusCode, reason string, grace time.Duration) {
	ps.ctl.Lock()
	if ps.closing.Swap(true) {
		ps.ctl.Unlock()
		return
	}
	if ps.stream != nil {
		ps.ctl.Unlock()
		go ps.closeWhenSent(grace)
		return
	}
	err := ps.writeControl(nbws.CloseMessage, closePayload(int(code), reason))
	// The connection is closed without ctl: ctl is taken under nbio's
	// own lock of the websocket (ownWrites), and nothing of nbio's is
	// called with ctl held.
	ps.ctl.Unlock()
	if err != nil {
		ps.hardClose()
		return
	}
	time.AfterFunc(grace, ps.hardClose)
}

// closePayload is a close frame's payload: code, then reason.
func closePayload(code int, reason string) []byte {
	b := binary.BigEndian.AppendUint16(make([]byte, 0, 2+len(reason)), uint16(code))
	return append(b, reason...)
}

// writeControl writes a control frame (a ping, a pong, a close) of typ and
// payload b, at most 125 bytes, to the socket's connection; ctl is held.
// It is framed here, not by nbio's WriteMessage: nbio's writes go through
// ownWrites, which takes ctl itself, and nbio's lock of the websocket
// must never be waited for with ctl held.
func (ps *pollSocket) writeControl(typ nbws.MessageType, b []byte) error {
	f := append(make([]byte, 0, 2+len(b)), 0x80|byte(typ), byte(len(b)))
	f = append(f, b...)
	ps.queued.Add(int64(len(f)))
	_, err := ps.out().Write(f)
	return err
}

// ownWrites is a poller websocket's connection as nbio writes to it: the
// handshake's 101, then only nbio's own close frames (1009 for a message
// over MessageLengthLimit or a control frame over 125 bytes, 1002 for text
// that is not UTF-8 or a close code no peer may send), which nbio writes,
// on the goroutine that parsed the peer's bytes, just before it drops the
// connection. The socket's own writes go to the connection under it
// (pollSocket.out). Each of nbio's takes ctl, as those do: one after the
// socket's close frame is not written, and one written marks the close
// frame sent, so that nothing follows it, a ping of the sweep or a frame
// of the writer in the moments before nbio drops the connection. Without
// it a peer that broke the protocol after the server's close frame was
// sent a second one (TestNothingAfterNbioClose).
type ownWrites struct {
	net.Conn
	ws *nbws.Conn
}

// Write writes b unless the socket's close frame went out.
func (o *ownWrites) Write(b []byte) (int, error) {
	ps, _ := o.ws.Session().(*pollSocket)
	if ps == nil {
		return o.Conn.Write(b) // the handshake: no socket yet
	}
	ps.ctl.Lock()
	defer ps.ctl.Unlock()
	if ps.closing.Load() {
		// Taken as written: nbio drops the connection next.
		return len(b), nil
	}
	if len(b) > 0 && nbws.MessageType(b[0]&0x0f) == nbws.CloseMessage {
		ps.closing.Store(true)
	}
	ps.queued.Add(int64(len(b)))
	return o.Conn.Write(b)
}

// hardClose drops the connection without a handshake.
func (ps *pollSocket) hardClose() {
	ps.closing.Store(true)
	switch {
	case ps.stream != nil:
		ps.stream.Close()
	case ps.conn.Load() != nil:
		ps.conn.Load().Close()
	}
}

// check is the sweep's look at one socket: a write that has not moved for
// WriteTimeout is a slow client, an unanswered ping a dead one; else it
// sends the ping when one is due.
func (ps *pollSocket) check(now time.Time, ping bool) {
	s := ps.p.s
	if ps.conn.Load() == nil && ps.stream == nil || ps.closing.Load() {
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

// control writes a control frame (a ping, a pong) unless the close frame
// went out (see closeNow); then it writes nothing and the close handshake
// goes on.
func (ps *pollSocket) control(typ nbws.MessageType, b []byte) error {
	ps.ctl.Lock()
	defer ps.ctl.Unlock()
	if ps.closing.Load() {
		return nil
	}
	return ps.writeControl(typ, b)
}

// delivered is the bytes of this socket that reached the peer (see
// delivered in ping.go).
func (ps *pollSocket) delivered() int64 {
	return delivered(ps.written.Load(), ps.out())
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
