package web

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/internal/untrusted"
)

// events serves /games/{game}/events?after=SEQ[&store=ID][&board=1]: the
// live feed as a server-sent event stream (text/event-stream), for browsers
// behind a proxy that refuses or drops websockets. It is live over plain
// HTTP: the same frames, in the same order, under the same limits and rules
// (reset, slow client, write timeout, Origin), and counted among the game's
// viewers. Each frame is one event whose data is the frame's JSON; a line's
// event also carries its seq as the event id, so a client that reconnects
// by itself (an EventSource does) resumes from Last-Event-ID, which wins
// over after. A ping event (pingEvent) comes first and every PingEvery.
// The page script uses it only when websockets fail (docs/live-page.md).
//
// The std engine serves it on the request's goroutine; the nbio engine hands
// it to its poller after the headers, as it does a websocket (pollstream.go).
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	game := chi.URLParam(r, "game")
	if !event.ValidGame(game) {
		s.notFound(w, r)
		return
	}
	after, err := streamCursor(r)
	if err != nil {
		mUpgradesRejected.WithLabelValues("cursor").Inc()
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	// A browser sends Origin with a cross-site EventSource: without this
	// check another site's pages could hold streams open and inflate the
	// game's viewer count, although CORS keeps the data from them.
	if !originAllowed(r, s.cfg.AllowedOrigins) {
		mUpgradesRejected.WithLabelValues("handshake").Inc()
		http.Error(w, "origin not allowed", http.StatusForbidden)
		return
	}
	if r.Method == http.MethodHead {
		streamHeaders(w.Header())
		return
	}
	_, release, ok := s.admit(w, r)
	if !ok {
		return
	}
	if !readBody(w, r) {
		mUpgradesRejected.WithLabelValues("handshake").Inc()
		release()
		s.wg.Done()
		return
	}
	if s.poll != nil && s.pollStream(w, r, game, after, release) {
		return
	}
	defer s.wg.Done()
	defer release()
	defer func() {
		if v := recover(); v != nil {
			s.log.Error("web: event stream panicked", "game", game, untrusted.Attr("panic", fmt.Sprint(v)), "stack", string(debug.Stack()))
		}
	}()

	rc := http.NewResponseController(w)
	// The request's whole-read limit (ReadTimeout) would end the stream:
	// net/http reads on in the background to see the client go away.
	if err := rc.SetReadDeadline(time.Time{}); err != nil {
		s.log.Warn("web: clear read deadline", "game", game, "err", err)
	}
	streamHeaders(w.Header())
	w.WriteHeader(http.StatusOK)
	es := &sseConn{s: s, w: w, rc: rc, game: game}
	// The headers go at once, and a ping with them: the EventSource opens
	// before the backfill, and the page knows the ping period from the start.
	if err := es.ping(); err != nil {
		es.closedStuck(nil, after, err)
		return
	}

	s.stats.streams.Add(1)
	defer s.stats.streams.Add(-1)
	c := newClient(s.cfg.SendQueue, r.URL.Query().Get("board") == "1")
	h := s.hubs.subscribe(game, c)
	defer s.changed()
	defer s.hubs.unsubscribe(h, c)
	s.joined(c, game)
	if testHookSubscribed != nil {
		testHookSubscribed(game)
	}
	last, err := s.backfill(es, game, after, resumeOf(r, true))
	if err == nil {
		err = es.flush()
	}
	if err != nil {
		if !es.closedStuck(c, after, err) && !errors.Is(err, errReset) {
			s.log.Debug("web: event stream ended in backfill", "game", game, "seq", after, untrusted.Err(err))
		}
		return
	}
	es.pump(r, c, last)
}

// readBody reads a stream's or a websocket handshake's request body to its
// end, before the stream starts or the protocol switches: no EventSource or
// browser sends one, but a GET may carry one, and the connection must hold
// nothing of the request once the stream or the socket has it. It
// reads within the request's ReadTimeout, and at most maxBody (limitBody):
// beyond that it answers 413, as limitBody answers a Content-Length over
// it, and a body that fails or does not come in time is a 400; then it
// reports false. Unread, the body was net/http's to read before the
// response's head on the std engine, with no deadline once the stream had
// cleared it (a body announced and never sent held the stream back for
// ever), and on the nbio engine the poller took it for bytes sent after the
// request and dropped the connection (TestEventsRequestBody). A websocket
// handshake's body fared alike, with the 101 in place of the stream's head
// (TestHandshakeRequestBody).
func readBody(w http.ResponseWriter, r *http.Request) bool {
	if r.ContentLength == 0 {
		return true // none: a chunked body's length is -1
	}
	if _, err := io.Copy(io.Discard, r.Body); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
		} else {
			http.Error(w, "request body unread: a stream or websocket takes none", http.StatusBadRequest)
		}
		return false
	}
	return true
}

// resume is what a client says of where it resumes, beside its cursor:
// the store its seqs come from (store=ID), and the EVT id of the game's
// line it holds with the greatest seq at or below the cursor (last=EVT_ID;
// empty: none). Either may be absent; then it is not checked.
type resume struct {
	store   string
	last    string
	hasLast bool
}

// resumeOf reads r's resume parameters. For an event stream (stream),
// last is ignored when the cursor is its Last-Event-ID: an EventSource
// that reconnects by itself repeats the URL it was opened with, whose last
// is stale by then. A websocket's cursor is always after, so its last is
// always read.
func resumeOf(r *http.Request, stream bool) resume {
	q := r.URL.Query()
	rs := resume{store: q.Get("store")}
	if !stream || r.Header.Get("Last-Event-ID") == "" {
		rs.last, rs.hasLast = q.Get("last"), q.Has("last")
	}
	return rs
}

// streamHeaders are an event stream's response headers. no-transform and
// X-Accel-Buffering keep proxies (nginx among them) from compressing or
// holding back the events.
func streamHeaders(h http.Header) {
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-store, no-transform")
	h.Set("X-Accel-Buffering", "no")
}

// sseConn is one event stream from the point of view of its single writer,
// the request's goroutine. Frames go into net/http's buffered response and
// out at each flush.
type sseConn struct {
	s    *Server
	w    http.ResponseWriter
	rc   *http.ResponseController
	game string
	buf  []byte // one event, reused
}

// Events are "id: SEQ" (lines only), then the frame's JSON as data. Frame
// JSON has no raw line breaks (JSON escapes them); encodeEvent still splits
// on them, as the format requires, rather than trust that.
var (
	eventID   = []byte("id: ")
	eventData = []byte("data: ")
)

// pingEvent is the event a stream carries when it opens and every period
// after: "event: ping", its data the period in milliseconds. It keeps idle
// proxies from closing the stream, and it lets the page tell a stream that
// died without a word (a NAT that forgot it, the server's host cut off)
// from a quiet game: a stream cannot be probed, and a comment, which this
// was until 5 Dec 2026, never reaches a script. Named, it reaches only a
// listener for "ping", never an EventSource's onmessage, which takes frames.
func pingEvent(period time.Duration) []byte {
	ms := max(period.Milliseconds(), 1)
	return []byte("event: ping\ndata: " + strconv.FormatInt(ms, 10) + "\n\n")
}

// encodeEvent appends f as one server-sent event to b.
func encodeEvent(b []byte, f frame) []byte {
	if f.seq != 0 {
		b = append(b, eventID...)
		b = strconv.AppendInt(b, f.seq, 10)
		b = append(b, '\n')
	}
	data := f.data
	for {
		i := bytes.IndexAny(data, "\r\n")
		if i < 0 {
			break
		}
		b = append(append(b, eventData...), data[:i]...)
		b = append(b, '\n')
		if data[i] == '\r' && i+1 < len(data) && data[i+1] == '\n' {
			i++
		}
		data = data[i+1:]
	}
	b = append(append(b, eventData...), data...)
	return append(b, '\n', '\n')
}

// within runs a write of the stream under WriteTimeout: a client whose
// connection takes nothing for that long is as slow as a stuck websocket
// write, and the write fails with errWriteStuck.
func (es *sseConn) within(write func() error) error {
	timeout := es.s.cfg.WriteTimeout
	if err := es.rc.SetWriteDeadline(time.Now().Add(timeout)); err != nil {
		return err
	}
	if err := write(); err != nil {
		return stuck(err, timeout)
	}
	return nil
}

// put writes raw bytes into the response, within WriteTimeout.
func (es *sseConn) put(b []byte) error {
	return es.within(func() error { _, err := es.w.Write(b); return err })
}

// flush sends what the response buffers hold, within WriteTimeout.
func (es *sseConn) flush() error { return es.within(es.rc.Flush) }

// stuck marks a write that hit its deadline as errWriteStuck.
func stuck(err error, timeout time.Duration) error {
	var te interface{ Timeout() bool }
	if errors.As(err, &te) && te.Timeout() {
		return fmt.Errorf("%w for %v: %w", errWriteStuck, timeout, err)
	}
	return err
}

// putFrame writes f as one event into the response; flush sends it.
func (es *sseConn) putFrame(f frame) error {
	es.buf = encodeEvent(es.buf[:0], f)
	return es.put(es.buf)
}

// write queues one frame as an event (sink); flush sends it.
func (es *sseConn) write(f frame) error {
	if err := es.putFrame(f); err != nil {
		return err
	}
	es.s.countSent(f.kind())
	return nil
}

// reset sends a reset frame and ends the stream (sink).
func (es *sseConn) reset(why string) error {
	es.s.stats.resets.Add(1)
	es.s.log.Info("web: event stream reset", "game", es.game, "reason", why)
	if es.write(frame{typ: frameReset, data: resetFrame}) == nil {
		es.flush()
	}
	return errReset
}

// fail ends the stream after a failed store read (sink): the client
// reconnects from its cursor.
func (es *sseConn) fail(err error) error {
	if es.s.ctx.Err() == nil {
		es.s.log.Warn("web: event stream backfill", "game", es.game, untrusted.Err(err))
	}
	return err
}

// ping writes a ping event and flushes it, within WriteTimeout.
func (es *sseConn) ping() error {
	if err := es.put(es.s.ping); err != nil {
		return err
	}
	return es.flush()
}

// closedStuck counts and logs a stream that ended on err when err is a
// write that made no progress for WriteTimeout (errWriteStuck): a slow
// client, whatever the write, a frame or a ping (the nbio engine's sweep
// counts either; until 6 Dec 2026 a stuck ping went uncounted here,
// TestEventsStuckPingIsSlow). It is not counted when c, its mailbox (nil
// before the stream subscribed), was counted already by its hub
// (claimSlow). seq is the last line it was sent. It reports whether err
// was that.
func (es *sseConn) closedStuck(c *client, seq int64, err error) bool {
	if !errors.Is(err, errWriteStuck) {
		return false
	}
	if c == nil || c.claimSlow() {
		es.s.countSlow(1)
	}
	es.s.log.Info("web: slow event stream closed", "game", es.game, "seq", seq, untrusted.Err(err))
	return true
}

// pump is the stream's writer loop, as wsConn.pump is a websocket's: queued
// hub frames (dropping lines the backfill sent), a ping every PingEvery,
// and the ways to end: the client went away, it fell behind, or the server
// shuts down. Each ends the response; the client resumes from its cursor.
func (es *sseConn) pump(r *http.Request, c *client, last int64) {
	s := es.s
	ping := time.NewTicker(s.cfg.PingEvery)
	defer ping.Stop()
	for {
		var err error
		select {
		case <-r.Context().Done():
			return
		case <-s.ctx.Done():
			return
		case <-c.slow:
			// As a websocket's (wsConn.pump): counted once.
			if c.claimSlow() {
				s.countSlow(1)
			}
			s.log.Info("web: slow event stream closed", "game", es.game, "seq", last)
			return
		case <-c.ready:
			last, err = es.flushQueue(c, last)
		case <-ping.C:
			err = es.ping()
		}
		if err != nil {
			// Stuck for WriteTimeout, in frames or in a ping: as slow as
			// a full queue, and counted once with it (claimSlow).
			es.closedStuck(c, last, err)
			return
		}
	}
}

// flushQueue writes every frame queued in c, in order, skipping lines at or
// below last, flushes, and returns the seq of the last line written.
func (es *sseConn) flushQueue(c *client, last int64) (int64, error) {
	var sent sentCount
	defer es.s.countSentBy(&sent)
	for _, f := range c.drain() {
		c.took()
		if f.seq != 0 && f.seq <= last {
			continue
		}
		if err := es.putFrame(f); err != nil {
			return last, err
		}
		sent.add(f)
		if f.seq != 0 {
			last = f.seq
		}
	}
	return last, es.flush()
}
