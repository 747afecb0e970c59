package web

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/http"
	"runtime/debug"
	"time"

	"github.com/coder/websocket"
	"github.com/lesismal/nbio"

	"github.com/codemojex/feed/internal/untrusted"
)

// Event streams on the nbio engine. Once its headers are decided, a stream
// is only writes, like a websocket after its handshake, so it goes to the
// poller too: net/http's connection is hijacked, the response's head
// written by hand, and the connection handed to nbio. It then holds no
// goroutine and no buffer while idle, as a websocket there does, instead
// of the two goroutines and the bufio pair of a net/http response (about
// 54 KiB a stream against 7 KiB; docs/benchmarks-journal.md, "Where an
// event stream's 54 KiB go"). The frames, their order, the resume, the
// limits and the slow-client rules are the std engine's (events.go); the
// writer, the byte accounting and the sweep are the websockets'
// (poll.go, pollsocket.go).
//
// The response is delimited by the connection's close (Connection: close,
// no Content-Length, no chunking), which HTTP/1.1 allows and which is how
// a stream ends anyway. HTTP/2 and TLS connections (not a plain TCP
// connection to hand over) keep the request goroutine (events.go).

// streamSession is a stream's session on its nbio connection: nbio asks it
// to parse what the client sends and tells it when the connection closed
// (nbhttp.ParserCloser).
type streamSession struct {
	ps      *pollSocket
	release func()
}

// UnderlayerConn returns the stream's connection.
func (ss *streamSession) UnderlayerConn() net.Conn { return ss.ps.stream }

// Parse refuses anything the client sends: an event stream's client only
// reads, and a second request on the connection cannot be answered after a
// response that ends with the connection. nbio closes the connection on
// the error.
func (ss *streamSession) Parse(data []byte) error {
	return fmt.Errorf("web: event stream: the client sent %d bytes", len(data))
}

// CloseAndClean ends the stream when nbio closed its connection.
func (ss *streamSession) CloseAndClean(err error) { ss.ps.end(err, ss.release) }

// streamHead is an event stream's response head as written to a hijacked
// connection: the status, h (the stream's headers and what the middleware
// set) and Connection: close.
func streamHead(h http.Header) []byte {
	var b bytes.Buffer
	b.WriteString("HTTP/1.1 200 OK\r\n")
	h = h.Clone()
	h.Set("Date", time.Now().UTC().Format(http.TimeFormat))
	h.Set("Connection", "close")
	h.Del("Content-Length")
	h.Del("Transfer-Encoding")
	_ = h.Write(&b) // a bytes.Buffer takes every write
	b.WriteString("\r\n")
	return b.Bytes()
}

// pollStream hands an admitted event stream (the admission's slots and the
// s.wg slot are taken; release gives the slots back) to the nbio poller. It
// reports false, having done nothing, when the connection cannot go there
// (HTTP/2, TLS, a writer that cannot be hijacked): events serves it then.
func (s *Server) pollStream(w http.ResponseWriter, r *http.Request, game string, after int64, release func()) bool {
	if r.ProtoMajor != 1 || r.TLS != nil {
		return false
	}
	streamHeaders(w.Header())
	head := streamHead(w.Header())
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return false
	}
	// The client sent more after its request, its body included (events
	// read that: readBody), which a stream cannot answer (pipelining), or
	// its connection cannot go to nbio: drop it.
	var nbc *nbio.Conn
	if brw.Reader.Buffered() == 0 {
		if nbc, err = nbio.NBConn(conn); err != nil {
			s.log.Warn("web: event stream to the poller", "game", game, "err", err)
		}
	}
	if nbc == nil {
		conn.Close()
		release()
		s.wg.Done()
		return true
	}
	q := r.URL.Query()
	p := s.poll
	c := newClient(s.cfg.SendQueue, q.Get("board") == "1")
	ps := &pollSocket{p: p, game: game, c: c, room: make(chan struct{}, 1), stream: nbc}
	if newStreamCheck != nil {
		ps.wire = newStreamCheck(game)
	}
	ps.c.wake = ps.wake
	ps.c.flush = ps.flushHere
	ps.busy.Store(true) // the head and the backfill below are the first writer
	ss := &streamSession{ps: ps, release: release}
	// serveStream's own slot, taken while the socket's is surely held:
	// the socket's goes back at its close, which may come in the middle
	// of the backfill, and Close must not return while that still runs
	// (TestCloseWaitsForBackfill).
	s.wg.Add(1)
	nbc.SetSession(ss)
	nbc.OnData(func(c *nbio.Conn, data []byte) {
		if err := ss.Parse(data); err != nil {
			s.log.Debug("web: event stream closed", "game", game, untrusted.Err(err))
			c.CloseWithError(err)
		}
	})
	if err := p.eng.AddTransferredConn(nbc); err != nil {
		// nbio closed the connection without calling CloseAndClean.
		s.log.Warn("web: event stream to the poller", "game", game, "err", err)
		ps.end(err, release)
		s.wg.Done()
		return true
	}
	go s.serveStream(ps, head, after, resumeOf(r, true))
	return true
}

// serveStream writes a stream's head and backfill, then leaves it to the
// hub's wake-ups, on a fresh goroutine: the request's, grown through
// net/http, the router and the middleware, has returned.
func (s *Server) serveStream(ps *pollSocket, head []byte, after int64, rs resume) {
	defer s.wg.Done()
	defer func() {
		if v := recover(); v != nil {
			s.log.Error("web: event stream panicked", "game", ps.game, untrusted.Attr("panic", fmt.Sprint(v)), "stack", string(debug.Stack()))
			ps.hardClose()
		}
	}()
	// A ping goes with the head, as on the std engine (events.go).
	if err := ps.writeFrames(append(head, s.ping...)); err != nil {
		return
	}
	if !ps.start() {
		return // the client went away already
	}
	if s.ctx.Err() != nil {
		ps.requestClose(websocket.StatusGoingAway, reasonShutdown, time.Second)
	}
	s.joined(ps.c, ps.game)
	if testHookSubscribed != nil {
		testHookSubscribed(ps.game)
	}
	es := &pollStreamSink{s: s, ps: ps}
	last, err := s.backfill(es, ps.game, after, rs)
	if err != nil {
		if !errors.Is(err, errReset) {
			s.log.Debug("web: event stream ended in backfill", "game", ps.game, "seq", after, untrusted.Err(err))
		}
		return
	}
	ps.last = last
	ps.flush()
}

// pollStreamSink is a stream on the poller as its backfill writes to it.
type pollStreamSink struct {
	s  *Server
	ps *pollSocket
}

func (k *pollStreamSink) write(f frame) error {
	if err := k.ps.writeBackfill(f); err != nil {
		return err
	}
	k.s.countSent(f.kind())
	return nil
}

func (k *pollStreamSink) reset(why string) error {
	k.s.stats.resets.Add(1)
	k.s.log.Info("web: event stream reset", "game", k.ps.game, "reason", why)
	if k.write(frame{typ: frameReset, data: resetFrame}) == nil {
		k.ps.closeNow(websocket.StatusNormalClosure, reasonReset, time.Second)
	}
	return errReset
}

func (k *pollStreamSink) fail(err error) error {
	if k.s.ctx.Err() == nil {
		k.s.log.Warn("web: event stream backfill", "game", k.ps.game, untrusted.Err(err))
	}
	k.ps.closeNow(websocket.StatusInternalError, "", time.Second)
	return err
}

// closeWhenSent closes a stream's connection once nbio has handed every
// byte written to the kernel, or after grace: the last event (a reset)
// goes out before the close, and a client that takes nothing does not
// hold the connection.
func (ps *pollSocket) closeWhenSent(grace time.Duration) {
	timer := time.NewTimer(grace)
	defer timer.Stop()
	for ps.unsent() > 0 {
		select {
		case <-ps.room:
		case <-timer.C:
			ps.hardClose()
			return
		}
	}
	ps.hardClose()
}
