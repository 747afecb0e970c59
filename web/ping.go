package web

import (
	"context"
	"sync"
	"syscall"
	"time"

	"github.com/coder/websocket"
)

// pinger is the std engine's liveness check. Its ping runs beside the
// socket's writer, so frames keep flowing while a pong is awaited. A ping
// waits in the socket behind every byte written before it, and a peer that
// reads a long backlog at its own pace answers late but is alive: it is
// judged gone only when neither a pong came nor any byte ahead of the ping
// reached it for WriteTimeout (the nbio engine's sweep applies the same
// rule, pollSocket.check).
type pinger struct {
	conn    *websocket.Conn
	timeout time.Duration
	done    chan error  // the ping's answer, or why there was none
	overdue *time.Timer // WriteTimeout since the ping, or since bytes last moved
	cancel  context.CancelFunc
	wait    pongWait
	wg      sync.WaitGroup
}

// pongWait is what a socket keeps of its outstanding ping, on either
// engine: the bytes delivered when the ping went out or last moved.
type pongWait struct{ mark int64 }

// moved reports whether more than pingSlack bytes reached the peer since
// the ping or the last look, and if so takes delivered as the new mark.
func (w *pongWait) moved(delivered int64) bool {
	if delivered <= w.mark+pingSlack {
		return false
	}
	w.mark = delivered
	return true
}

// pingSlack is how far delivered may move with no frame of ours having
// reached the peer: the ping itself and control frames are not counted
// in what was written, and a live peer kernel acknowledges them even when
// the client reads nothing.
const pingSlack = 256

func newPinger(conn *websocket.Conn, timeout time.Duration) *pinger {
	p := &pinger{conn: conn, timeout: timeout, done: make(chan error, 1), overdue: time.NewTimer(time.Hour)}
	p.overdue.Stop()
	return p
}

// send starts a ping unless one is out; delivered is the socket's
// delivered count now (see delivered).
func (p *pinger) send(delivered int64) {
	if p.cancel != nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	p.cancel, p.wait.mark = cancel, delivered
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		p.done <- p.conn.Ping(ctx)
	}()
	p.overdue.Reset(p.timeout)
}

// answered takes the ping's outcome from done; it reports false when the
// socket is done.
func (p *pinger) answered(err error) bool {
	p.cancel()
	p.cancel = nil
	p.overdue.Stop()
	return err == nil
}

// alive is the look when the pong is overdue: it reports whether the pong
// has just come (done holds it, for the pump to take next) or bytes ahead
// of the ping reached the peer since the last look; then the pong's clock
// restarts.
func (p *pinger) alive(delivered int64) bool {
	if len(p.done) == 0 && !p.wait.moved(delivered) {
		return false
	}
	p.overdue.Reset(p.timeout)
	return true
}

// stop ends an outstanding ping and waits for its goroutine.
func (p *pinger) stop() {
	p.overdue.Stop()
	if p.cancel != nil {
		p.cancel()
	}
	p.wg.Wait()
}

// pongTimedOut counts and logs a socket dropped for a ping that went
// unanswered while nothing written before it reached the peer: a peer that
// vanished (its host, its network), not a slow one.
func (s *Server) pongTimedOut(game string) {
	s.stats.pongTimeouts.Add(1)
	s.log.Info("web: websocket dropped: no pong", "game", game, "timeout", s.cfg.WriteTimeout)
}

// delivered is the bytes of a socket that reached the peer: the frames
// written (sent, which counts what the process wrote) less what the kernel
// still holds unsent or unacknowledged. It grows while the peer reads,
// however far behind it is, and stands still when the peer is gone.
func delivered(sent int64, c any) int64 {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return sent
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return sent
	}
	if q, ok := kernelUnsent(rc); ok {
		return sent - q
	}
	return sent
}
