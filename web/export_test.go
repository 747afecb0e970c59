package web

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/lesismal/nbio/logging"

	"github.com/codemojex/feed/internal/nbiocheck"
)

// SetReadTimeout sets the bound of a page request's store reads, and
// returns a func that restores it. Set it before opening the server and
// restore it after closing it.
func SetReadTimeout(d time.Duration) (restore func()) {
	old := readTimeout
	readTimeout = d
	return func() { readTimeout = old }
}

// SetTestHookSubscribed installs f to run between a websocket's hub
// subscription and its backfill, and returns a func that removes it. Set it
// before opening the server.
func SetTestHookSubscribed(f func(game string)) (restore func()) {
	testHookSubscribed = f
	return func() { testHookSubscribed = nil }
}

// SetTestHookBackfillPage installs f to run after each page of lines a
// backfill wrote but its last, and returns a func that removes it. Set it
// before opening the server.
func SetTestHookBackfillPage(f func(game string, sent int)) (restore func()) {
	testHookBackfillPage = f
	return func() { testHookBackfillPage = nil }
}

// SetTestHookReader installs f to run first in each std-engine websocket's
// reader goroutine, and returns a func that removes it. Set it before
// opening the server and remove it after closing it.
func SetTestHookReader(f func()) (restore func()) {
	testHookReader = f
	return func() { testHookReader = nil }
}

// SetTestHookPing installs f to run when the nbio engine's sweep has
// decided to ping a websocket, before it writes the ping, and returns a
// func that removes it. Set it before opening the server and remove it
// after closing it.
func SetTestHookPing(f func()) (restore func()) {
	testHookPing = f
	return func() { testHookPing = nil }
}

// Mailbox is a websocket client's queue, for tests of its bound, order and
// memory.
type Mailbox struct{ c *client }

// NewMailbox returns the mailbox of a client with a SendQueue of size.
func NewMailbox(size int) *Mailbox { return &Mailbox{newClient(size, true)} }

// Offer queues a line frame with seq, as the hub does, and reports whether
// it fit.
func (m *Mailbox) Offer(seq int64) bool { return m.c.offer(frame{seq: seq}) }

// Drain takes the queued frames as the writer does and returns their seqs;
// they keep their slots until Took.
func (m *Mailbox) Drain() []int64 {
	var seqs []int64
	for _, f := range m.c.drain() {
		seqs = append(seqs, f.seq)
	}
	return seqs
}

// Took frees the slots of n drained frames, as the writer does when it
// starts to write them.
func (m *Mailbox) Took(n int) {
	for range n {
		m.c.took()
	}
}

// Ready is the writer's wake-up channel.
func (m *Mailbox) Ready() <-chan struct{} { return m.c.ready }

// Slow reports whether the client was marked slow.
func (m *Mailbox) Slow() bool { return isClosed(m.c.slow) }

// Cap is the capacity of the queue's backing array.
func (m *Mailbox) Cap() int {
	m.c.mu.Lock()
	defer m.c.mu.Unlock()
	return cap(m.c.queue)
}

// ClientKey is the bucket s counts r's client in for its per-client limits.
func ClientKey(s *Server, r *http.Request) string { return s.clientKey(r) }

// EncodeFrame is the websocket frame encoder.
func EncodeFrame(t string, seq int64, id, html string, n int64) []byte {
	return encode(wireFrame{T: t, Seq: seq, ID: id, HTML: html, N: n})
}

// EncodeFrameHTML is the encoder of frames whose HTML was rendered into a
// buffer (line and state frames).
func EncodeFrameHTML(t string, seq int64, id string, html []byte, n int64) []byte {
	return encodeHTML(wireFrame{T: t, Seq: seq, ID: id, N: n}, html)
}

// AppendTextFrame is the nbio engine's framing of a text message, RSV1 set
// when compressed.
func AppendTextFrame(b, data []byte, compressed bool) []byte {
	return appendTextFrame(b, data, compressed)
}

// Fanout is a hub and a tailer's wake list, for tests of the tailer's
// broadcast (broadcastTo and wakes.run).
type Fanout struct {
	h *hub
	w wakes
}

// NewFanout returns a hub with no clients.
func NewFanout() *Fanout {
	return &Fanout{h: &hub{game: "g", clients: map[*client]struct{}{}}}
}

// Join subscribes a client with a SendQueue of size. With flush set it is
// a client of the nbio engine, whose writer the tailer runs itself (flush
// is called instead) and wake a goroutine's; without, the std engine's.
func (f *Fanout) Join(size int, wake, flush func()) *Mailbox {
	c := newClient(size, true)
	c.wake, c.flush = wake, flush
	f.h.clients[c] = struct{}{}
	return &Mailbox{c}
}

// JoinWhole subscribes a std-engine client that did not ask for board
// frames, as subscribe does.
func (f *Fanout) JoinWhole(size int) *Mailbox {
	c := newClient(size, false)
	f.h.clients[c] = struct{}{}
	f.h.whole.Add(1)
	return &Mailbox{c}
}

// BroadcastBoard offers a board frame (seq 0) as the tailer does.
func (f *Fanout) BroadcastBoard() int {
	return f.h.broadcastTo(frame{typ: frameBoard, data: []byte(`{"t":"board"}`)}, &f.w)
}

// TakeBoards reports whether every client of the hub takes board frames.
func (f *Fanout) TakeBoards() bool { return f.h.takeBoards() }

// Broadcast offers a line frame with seq as the tailer does and returns how
// many clients were dropped as slow.
func (f *Fanout) Broadcast(seq int64) int { return f.h.broadcastTo(frame{seq: seq}, &f.w) }

// Clients is how many clients the hub holds.
func (f *Fanout) Clients() int { return len(f.h.clients) }

// Run ends the tailer's pass: the writers of the clients it queued frames
// for run.
func (f *Fanout) Run() { f.w.run() }

// Spill hands the pass's listed clients to a goroutine once they are
// SpillAt, as the tailer does between broadcasts.
func (f *Fanout) Spill() { f.w.spill() }

// SpillAt is how many listed sockets a pass writes to on its own goroutine.
const SpillAt = spillAt

// EncodeEvent is a frame's server-sent event: id seq (lines only) and data.
func EncodeEvent(seq int64, data []byte) []byte {
	return encodeEvent(nil, frame{seq: seq, data: data})
}

// AwaitPollers is awaitPollers, for a test of engines with several pollers
// (a server on a small machine has one).
var AwaitPollers = awaitPollers

// NbioMallocs returns how many buffers nbio has taken from its pool in
// this test process (TestMain checks every one): what a test must see grow
// to know it made nbio keep bytes the kernel did not take.
func NbioMallocs() int64 { return nbioAllocator.(*nbiocheck.Allocator).Mallocs() }

// OffersDeflate reports whether a handshake with these
// Sec-WebSocket-Extensions values gets compressed frames.
func OffersDeflate(values ...string) bool {
	r := &http.Request{Header: http.Header{}}
	for _, v := range values {
		r.Header.Add("Sec-WebSocket-Extensions", v)
	}
	return offersDeflate(r)
}

// ReadyWaiting returns how many /readyz probes wait on the check in flight.
func (s *Server) ReadyWaiting() int {
	if s.ready == nil {
		return 0
	}
	s.ready.mu.Lock()
	defer s.ready.mu.Unlock()
	return s.ready.waiting
}

// HoldTail holds the tailer's turn, as a pass of its own goroutine does,
// until release is called.
func HoldTail(s *Server) (release func()) {
	s.tail.turn.Lock()
	return s.tail.turn.Unlock
}

// NbioLogger returns the logger through which the nbio engine's lines
// reach l (installed once per process, by the first server on nbio).
func NbioLogger(l *slog.Logger) logging.Logger { return nbioLogger{l} }

// Retained returns the sizes of s's per-game and per-client state: what a
// replica that runs for weeks must give back once its games and clients
// are gone.
func Retained(s *Server) map[string]int {
	out := map[string]int{"hubs": s.hubs.len()}
	s.tail.turn.Lock()
	out["boards"] = len(s.tail.boards)
	s.tail.turn.Unlock()
	s.watch.mu.Lock()
	out["watching_sent"] = len(s.watch.sent)
	out["watching_others"] = len(s.watch.others)
	s.watch.mu.Unlock()
	s.limiter.mu.Lock()
	out["rate_buckets"] = len(s.limiter.buckets)
	s.limiter.mu.Unlock()
	s.sockets.mu.Lock()
	out["socket_slots"] = len(s.sockets.held)
	s.sockets.mu.Unlock()
	s.requests.mu.Lock()
	out["request_slots"] = len(s.requests.held)
	s.requests.mu.Unlock()
	out["reserved"] = int(s.reserved.Load())
	if s.poll != nil {
		s.poll.mu.Lock()
		out["poll_sockets"] = len(s.poll.socks)
		s.poll.mu.Unlock()
	}
	return out
}
