package web

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"runtime/debug"
	"time"

	"github.com/coder/websocket"
	"github.com/go-chi/chi/v5"

	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/internal/untrusted"
)

// Close reasons the page script and operators see.
const (
	reasonSlow     = "slow client: resume from your cursor"
	reasonShutdown = "server shutting down: reconnect"
	reasonReset    = "reset: reload the page"
)

// live serves /games/{game}/live?after=SEQ: the game's lines with seq > SEQ
// in seq order, then live lines, state frames and pings.
//
// Reset policy: a cursor from another store (store=ID differs from
// Config.StoreID), a cursor above every seq this store ever gave (the
// store was rebuilt; Store.HighSeq), one whose last=EVT_ID is not this store's line at it (the store
// renumbered under its ID) or more than MaxBacklog lines behind gets
// {"t":"reset"}, and the
// page reloads instead of missing lines or replaying a long backlog line by
// line.
func (s *Server) live(w http.ResponseWriter, r *http.Request) {
	game := chi.URLParam(r, "game")
	if !event.ValidGame(game) {
		s.notFound(w, r)
		return
	}
	after, err := parseCursor(r.URL.Query().Get("after"), "after")
	if err != nil {
		mUpgradesRejected.WithLabelValues("cursor").Inc()
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if checkHandshake(w, r) {
		return
	}
	// Before admit, as for event streams: a refused handshake must not
	// spend the address's upgrade tokens (a NAT's, or an IPv6 /64's).
	if !originAllowed(r, s.cfg.AllowedOrigins) {
		mUpgradesRejected.WithLabelValues("handshake").Inc()
		// Before the upgrade rate: sampled, or a client's loop would
		// write a line per request.
		if ok, skipped := s.sampled.Allow("origin"); ok {
			s.log.Info("web: websocket refused", "game", game, "remote", s.clientKey(r),
				untrusted.Attr("origin", r.Header.Get("Origin")), untrusted.Attr("fetch_site", r.Header.Get("Sec-Fetch-Site")),
				"similar_unlogged", skipped)
		}
		http.Error(w, "origin not allowed", http.StatusForbidden)
		return
	}
	key, release, ok := s.admit(w, r)
	if !ok {
		return
	}
	// A body (none from a browser; a GET may carry one) is read now,
	// within the request's ReadTimeout, as an event stream's is: on the std
	// engine net/http read it before the 101 with the deadline cleared
	// below, so one announced and never sent held the handshake and its
	// slot for as long as the client kept the connection; on nbio what
	// net/http had buffered of it was dropped and the rest taken for the
	// client's frames (TestHandshakeRequestBody).
	if !readBody(w, r) {
		mUpgradesRejected.WithLabelValues("handshake").Inc()
		release()
		s.wg.Done()
		return
	}

	// net/http leaves clearing a hijacked connection's deadlines to the
	// hijacker: a websocket must not inherit the plain-request ReadTimeout.
	rc := http.NewResponseController(w)
	if err := errors.Join(rc.SetReadDeadline(time.Time{}), rc.SetWriteDeadline(time.Time{})); err != nil {
		s.log.Warn("web: clear deadlines", "game", game, "err", err)
	}
	c := newClient(s.cfg.SendQueue, r.URL.Query().Get("board") == "1")
	if s.poll != nil {
		s.livePoll(w, r, game, key, after, resumeOf(r, false), c, release)
		return
	}
	hw := &hijackRecorder{ResponseWriter: w}
	// originAllowed has checked the Origin above; coder/websocket's own
	// check would refuse what it allows (a default port on one side only).
	conn, err := websocket.Accept(hw, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
	if err != nil {
		release()
		s.wg.Done()
		// Accept has answered (426 for a request that is no websocket
		// handshake).
		mUpgradesRejected.WithLabelValues("handshake").Inc()
		s.log.Info("web: websocket refused", "game", game, "remote", key, untrusted.Err(err))
		return
	}
	// The connection is hijacked: it no longer needs the request's
	// goroutine, whose stack has grown through net/http, the router and the
	// middleware. A fresh goroutine serves the socket and this one returns,
	// which saves a grown stack per websocket (the fan-out's memory).
	rs := resumeOf(r, false)
	go func() {
		defer release()
		s.serveSocket(conn, hw.conn, game, after, rs, c)
	}()
}

// admit applies the limits of a live connection (a websocket or an event
// stream) to r: the client's rate of attempts, its connections open at once
// and the server's MaxClients. Both caps are taken before the handshake and
// given back by release when the connection ends (or its handshake fails):
// a burst cannot overshoot them, and a client's connections count as long
// as they live. On success the connection also holds an s.wg slot, which
// the caller gives back with s.wg.Done; otherwise admit has answered r.
func (s *Server) admit(w http.ResponseWriter, r *http.Request) (key string, release func(), ok bool) {
	key = s.clientKey(r)
	if !s.limiter.allow(key) {
		mUpgradesRejected.WithLabelValues("rate").Inc()
		w.Header().Set("Retry-After", "1")
		http.Error(w, "too many connection attempts", http.StatusTooManyRequests)
		return key, nil, false
	}
	if !s.sockets.acquire(key) {
		mUpgradesRejected.WithLabelValues("client").Inc()
		w.Header().Set("Retry-After", "5")
		http.Error(w, "too many live connections from your address", http.StatusTooManyRequests)
		return key, nil, false
	}
	if s.reserved.Add(1) > int64(s.cfg.MaxClients) {
		s.reserved.Add(-1)
		s.sockets.release(key)
		mUpgradesRejected.WithLabelValues("capacity").Inc()
		w.Header().Set("Retry-After", "5")
		http.Error(w, "server full", http.StatusServiceUnavailable)
		return key, nil, false
	}
	release = func() {
		s.reserved.Add(-1)
		s.sockets.release(key)
	}
	if !s.track() {
		release()
		http.Error(w, "server shutting down", http.StatusServiceUnavailable)
		return key, nil, false
	}
	return key, release, true
}

// hijackRecorder keeps the connection websocket.Accept hijacks, so that a
// socket can be dropped without a close handshake whatever its reader is
// doing (see wsConn.hardClose).
type hijackRecorder struct {
	http.ResponseWriter
	conn net.Conn
}

// Hijack hijacks the wrapped ResponseWriter's connection and records it.
func (h *hijackRecorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, brw, err := http.NewResponseController(h.ResponseWriter).Hijack()
	h.conn = conn
	return conn, brw, err
}

// Unwrap lets http.ResponseController reach the wrapped ResponseWriter.
func (h *hijackRecorder) Unwrap() http.ResponseWriter { return h.ResponseWriter }

// serveSocket is a websocket's life after the handshake: hub subscription,
// backfill, then the writer loop. It owns conn (over the hijacked netConn)
// and the s.wg slot that live took for it.
func (s *Server) serveSocket(conn *websocket.Conn, netConn net.Conn, game string, after int64, rs resume, c *client) {
	defer s.wg.Done()
	defer conn.CloseNow()
	// No middleware recovers this goroutine: a bug in one socket must not
	// take the replica down.
	defer func() {
		if v := recover(); v != nil {
			s.log.Error("web: websocket panicked", "game", game, untrusted.Attr("panic", fmt.Sprint(v)), "stack", string(debug.Stack()))
		}
	}()
	conn.SetReadLimit(512)
	// The socket's own life, not the request's nor the server's: shutdown is
	// signalled through s.ctx so that the close can be a polite GoingAway.
	// Cancelling readCtx ends the reader; hardClose also closes the TCP
	// connection, which ends whatever else waits on it (see closeWithin).
	readCtx, cancelRead := context.WithCancel(context.Background())
	defer cancelRead()
	hardClose := func() {
		cancelRead()
		netConn.Close()
	}

	s.stats.clients.Add(1)
	defer s.stats.clients.Add(-1)

	gone := readProbes(readCtx, conn, c, testHookReader)
	h := s.hubs.subscribe(game, c)
	defer s.changed()
	defer s.hubs.unsubscribe(h, c)
	s.joined(c, game)
	if testHookSubscribed != nil {
		testHookSubscribed(game)
	}

	ws := &wsConn{s: s, conn: conn, netConn: netConn, game: game, hardClose: hardClose}
	last, err := s.backfill(ws, game, after, rs)
	if err != nil {
		switch {
		case errors.Is(err, errWriteStuck):
			// As slow as a stuck live write (the nbio engine's backfill
			// counts its own, writeBackfill). The connection is gone, so
			// the close carries no reason; the page resumes from the
			// last line it got. (A store read that timed out is not the
			// client's doing: fail closed the socket and said so.)
			ws.closedStuck(c, after, err)
		case !errors.Is(err, errReset):
			s.log.Debug("web: websocket ended in backfill", "game", game, "seq", after, untrusted.Err(err))
		}
		return
	}
	ws.pump(c, last, gone)
}

// testHookSubscribed, when set by a test, runs between a websocket's hub
// subscription and its backfill: the window where lines must not get lost.
var testHookSubscribed func(game string)

// testHookReader, when set by a test, runs first in a std-engine socket's
// reader goroutine: a test can hold the reader back to see that the socket
// still closes in time.
var testHookReader func()

// testHookBackfillPage, when set by a test, runs after each page of lines
// a backfill wrote, with how many it has written: a test can commit lines
// between pages.
var testHookBackfillPage func(game string, sent int)

// sink is a live connection as its backfill writes to it: a websocket
// (wsConn, either engine) or an event stream (sseConn).
type sink interface {
	// write sends one frame, within WriteTimeout.
	write(f frame) error
	// reset sends a reset frame, ends the connection and returns errReset.
	reset(why string) error
	// fail ends the connection after a failed store read and returns err.
	fail(err error) error
}

// backfill runs after the hub subscription: state, then every line of game
// after the cursor from the store. Lines committed meanwhile are also queued
// by the hub; the writer drops those at or below the returned seq.
func (s *Server) backfill(k sink, game string, after int64, rs resume) (int64, error) {
	if rs.store != "" && s.cfg.StoreID != "" && rs.store != s.cfg.StoreID {
		return 0, k.reset("cursor from another store")
	}
	ctx, cancel := context.WithTimeout(s.ctx, time.Minute)
	defer cancel()
	max, err := s.cfg.Store.MaxSeq(ctx)
	if err != nil {
		return 0, k.fail(err)
	}
	if after > max {
		// A page's cursor is the max seq when it was served, maybe
		// another game's line, since deleted (TestLiveNoResetAfterNewestDeleted):
		// only a cursor beyond every seq ever given is from elsewhere.
		high, err := s.cfg.Store.HighSeq(ctx)
		if err != nil {
			return 0, k.fail(err)
		}
		if after > high {
			return 0, k.reset("cursor ahead of store")
		}
	}
	if rs.hasLast {
		id, _, err := s.cfg.Store.LastAt(ctx, game, after)
		if err != nil {
			return 0, k.fail(err)
		}
		if id != rs.last {
			// The same store ID, another numbering: a backup written into
			// the open file (a copy moved into place takes an ID of its
			// own). Lines at or below the cursor here are not the ones
			// the client holds, so resuming could skip some.
			return 0, k.reset("cursor from another numbering of this store")
		}
	}
	if max-after > int64(s.cfg.MaxBacklog) {
		// More seqs after the cursor than the backlog allows, maybe of
		// other games: count this game's lines there before sending any,
		// so that a cursor too far behind is reset at once rather than
		// after a replay of MaxBacklog lines (which the page would then
		// drop by reloading; TestLiveResetBeforeReplay).
		n, err := s.cfg.Store.CountAfter(ctx, game, after, s.cfg.MaxBacklog+1)
		if err != nil {
			return 0, k.fail(err)
		}
		if n > s.cfg.MaxBacklog {
			return 0, k.reset("too far behind")
		}
	}
	f, err := stateFrame(ctx, s.cfg.Store, game, max)
	if err != nil {
		return 0, k.fail(err)
	}
	if err := k.write(f); err != nil {
		return 0, err
	}
	// Lines committed since the count are counted as they come.
	cursor, sent := after, 0
	for {
		lines, err := s.cfg.Store.After(ctx, game, cursor, s.cfg.TailBatch)
		if err != nil {
			return 0, k.fail(err)
		}
		if sent+len(lines) > s.cfg.MaxBacklog {
			return 0, k.reset("too far behind")
		}
		for _, l := range lines {
			if err := k.write(lineFrame(l)); err != nil {
				return 0, err
			}
			cursor = l.Seq
		}
		sent += len(lines)
		if len(lines) < s.cfg.TailBatch {
			return cursor, nil
		}
		if testHookBackfillPage != nil {
			testHookBackfillPage(game, sent)
		}
	}
}
