package web

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/codemojex/feed/internal/untrusted"
)

// wsConn is one websocket from the point of view of its single writer.
type wsConn struct {
	s    *Server
	conn *websocket.Conn
	poll *pollSocket // instead of conn on the nbio engine (backfill only)
	game string
	// hardClose drops the TCP connection without a handshake. Cancelling
	// the reader's context alone is not enough: coder/websocket closes the
	// connection then only if a Read is under way, and a reader that has
	// not yet started leaves Close waiting 5 s for the peer's close frame.
	hardClose func()
	netConn   net.Conn // under conn: what the kernel holds of it (delivered)
	sent      int64    // bytes of the frames written to conn; the writer's alone
}

// closeWithin closes with a status and reason, waiting at most grace for the
// peer's close reply (coder/websocket alone waits up to 10 s): a client that
// does not answer must not hold up shutdown.
func (ws *wsConn) closeWithin(code websocket.StatusCode, reason string, grace time.Duration) {
	if ws.poll != nil {
		ws.poll.closeNow(code, reason, grace)
		return
	}
	t := time.AfterFunc(grace, ws.hardClose)
	defer t.Stop()
	ws.conn.Close(code, reason)
}

// closedStuck logs a std-engine socket whose write made no progress for
// WriteTimeout, in its backfill or live: a slow client, whose connection
// is already dropped. It counts it unless its hub did (claimSlow). seq is
// the last line it was sent.
func (ws *wsConn) closedStuck(c *client, seq int64, err error) {
	if c.claimSlow() {
		ws.s.countSlow(1)
	}
	ws.s.log.Info("web: slow websocket closed", "game", ws.game, "seq", seq, untrusted.Err(err))
}

// delivered is the bytes of this socket that reached the peer (see
// delivered in ping.go).
func (ws *wsConn) delivered() int64 { return delivered(ws.sent, ws.netConn) }

// write sends one frame within the write timeout.
func (ws *wsConn) write(f frame) error {
	if ws.poll != nil {
		if err := ws.poll.writeBackfill(f); err != nil {
			return err
		}
		ws.s.countSent(f.kind())
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), ws.s.cfg.WriteTimeout)
	defer cancel()
	if err := ws.conn.Write(ctx, websocket.MessageText, f.data); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("%w for %v: %w", errWriteStuck, ws.s.cfg.WriteTimeout, err)
		}
		return err
	}
	ws.sent += wireSize(f.data)
	ws.s.countSent(f.kind())
	return nil
}

// fail closes the socket after a failed store read: GoingAway when the
// server is shutting down (the read failed because of it), else an internal
// error. Either way the page reconnects from its cursor.
func (ws *wsConn) fail(err error) error {
	if ws.s.ctx.Err() != nil {
		ws.closeWithin(websocket.StatusGoingAway, reasonShutdown, time.Second)
		return err
	}
	ws.s.log.Warn("web: websocket backfill", "game", ws.game, untrusted.Err(err))
	ws.closeWithin(websocket.StatusInternalError, "store unavailable", time.Second)
	return err
}

// reset tells the page to reload and closes the socket.
func (ws *wsConn) reset(why string) error {
	ws.s.stats.resets.Add(1)
	ws.s.log.Info("web: websocket reset", "game", ws.game, "reason", why)
	if err := ws.write(frame{typ: frameReset, data: resetFrame}); err == nil {
		ws.closeWithin(websocket.StatusNormalClosure, reasonReset, time.Second)
	}
	return errReset
}

// pump is the socket's writer loop: queued hub frames (dropping lines the
// backfill already sent), pings, and the three ways to end: the peer went
// away, the client fell behind, the server shuts down.
func (ws *wsConn) pump(c *client, last int64, gone context.Context) {
	s := ws.s
	ping := time.NewTicker(s.cfg.PingEvery)
	defer ping.Stop()
	pg := newPinger(ws.conn, s.cfg.WriteTimeout)
	defer pg.stop()
	g := newWriteGuard(ws.hardClose)
	defer g.t.Stop()
	for {
		select {
		case <-gone.Done():
			return
		case <-s.ctx.Done():
			ws.closeWithin(websocket.StatusGoingAway, reasonShutdown, time.Second)
			return
		case <-c.slow:
			// Its mailbox filled: its hub counts it, or a probe's
			// answer found it full (whoever claims first).
			if c.claimSlow() {
				s.countSlow(1)
			}
			s.log.Info("web: slow websocket closed", "game", ws.game, "seq", last)
			ws.closeWithin(websocket.StatusPolicyViolation, reasonSlow, s.cfg.WriteTimeout)
			return
		case <-c.ready:
			var err error
			if last, err = ws.flush(c, last, g); err != nil {
				if errors.Is(err, errWriteStuck) {
					// Stuck in a write for WriteTimeout: as slow as a
					// full queue, and counted once with it.
					ws.closedStuck(c, last, err)
				}
				return
			}
		case <-ping.C:
			pg.send(ws.delivered())
		case err := <-pg.done:
			if !pg.answered(err) {
				return
			}
		case <-pg.overdue.C:
			if !pg.alive(ws.delivered()) {
				s.pongTimedOut(ws.game)
				ws.hardClose()
				return
			}
		}
	}
}

// writeGuard drops a connection whose write is stuck: one timer per socket,
// armed for each frame and stopped between flushes. The writes themselves
// take no context with a deadline: coder/websocket registers a
// context.AfterFunc per write for one (allocation per frame per client, the
// fan-out's hottest path), and closes the connection when it fires, which
// is what the timer does; a timer per flush was still one allocation per
// client per line (docs/benchmarks-journal.md, "Garbage and the tail").
type writeGuard struct {
	t     *time.Timer
	stuck atomic.Bool
}

func newWriteGuard(hardClose func()) *writeGuard {
	g := &writeGuard{}
	g.t = time.AfterFunc(time.Hour, func() { g.stuck.Store(true); hardClose() })
	g.t.Stop()
	return g
}

// flush writes every frame queued in c, in order, and returns the seq of the
// last line written (or sent before). Lines at or below last were sent by the
// backfill and are dropped. Every frame gets WriteTimeout (g): a stuck write
// drops the connection, and the write fails with errWriteStuck.
func (ws *wsConn) flush(c *client, last int64, g *writeGuard) (int64, error) {
	batch := c.drain()
	if len(batch) == 0 {
		// A wake-up for frames an earlier drain already took.
		return last, nil
	}
	timeout := ws.s.cfg.WriteTimeout
	defer g.t.Stop()
	var sent sentCount
	defer ws.s.countSentBy(&sent)
	for _, f := range batch {
		c.took()
		if f.seq != 0 && f.seq <= last {
			continue
		}
		g.t.Reset(timeout)
		if err := ws.conn.Write(context.Background(), websocket.MessageText, f.data); err != nil {
			if g.stuck.Load() {
				return last, fmt.Errorf("%w for %v", errWriteStuck, timeout)
			}
			return last, err
		}
		ws.sent += wireSize(f.data)
		sent.add(f)
		if f.seq != 0 {
			last = f.seq
		}
	}
	return last, nil
}

// readProbes reads the socket until it ends, as coder/websocket's CloseRead
// does (control frames are answered on the way), but a page may send
// {"t":"probe"} to learn whether the socket still works after its tab slept
// (a dead connection can look open for minutes): the answer is queued like
// any frame, so a page that probes and never reads is a slow client. Any
// other message closes the socket with StatusPolicyViolation. The returned
// context ends when the socket does.
func readProbes(ctx context.Context, conn *websocket.Conn, c *client, hook func()) context.Context {
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		defer cancel()
		if hook != nil {
			hook()
		}
		for {
			typ, b, err := conn.Read(ctx)
			if err != nil {
				return
			}
			if typ != websocket.MessageText || string(b) != probeMessage {
				conn.Close(websocket.StatusPolicyViolation, "unexpected data message")
				return
			}
			c.offer(probeFrame)
		}
	}()
	return ctx
}
