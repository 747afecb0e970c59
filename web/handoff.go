package web

import (
	"context"
	"sync"

	"github.com/codemojex/feed/store"
)

// handoffMax bounds the lines Committed queues for the tailer. Beyond it
// the queue is dropped and the tailer reads the store instead: a tailer
// that fell that far behind gains nothing from the shortcut, and the
// process must not hold an unbounded copy of what the store already has.
const handoffMax = 4096

// handoff is the queue of lines this process committed, in commit order,
// that the tailer has not looked at yet.
type handoff struct {
	mu      sync.Mutex
	batches [][]store.Line
	n       int
	dropped bool          // lines were dropped: the tailer must read the store
	ready   chan struct{} // one slot: wakes the tailer
}

func newHandoff() *handoff { return &handoff{ready: make(chan struct{}, 1)} }

// Committed hands the tailer lines this process has just committed, with
// the seqs the store gave them, in seq order, so that its own lines reach
// its websockets without being read back from the store (the tailer's
// store.Since was 11 % of the renderer's CPU at 1,000 events/s).
//
// It must be called only after the lines' transaction has committed, so
// that a browser's backfill can find them too. The tailer still owns the
// order: it hands these lines straight to the hubs only when their seqs
// follow its cursor without a hole, i.e. when no line of another writer
// (a peer renderer sharing the store) can be missing in between; otherwise
// it reads the store as it would after a doorbell, which finds both. So
// the lines go out in seq order, once each, and the store's seqs stay the
// resume cursor.
//
// When the tailer is between passes, Committed runs the pass itself, on
// the caller's goroutine, and the frames are queued (on the nbio engine,
// written) before it returns: a line then waits for no other goroutine to
// be scheduled between its commit and its sockets, which on a busy host is
// a wait of milliseconds (docs/benchmarks.md, notes from profiles). Such a
// pass does not poll the store: a batch that does not follow the cursor,
// or a queue dropped for its size, is left to the tailer's goroutine. (Its
// state frames come from the store's board cache, read as on the tailer's
// goroutine.) Committed never waits for the tailer, nor for a socket.
func (s *Server) Committed(lines []store.Line) {
	if len(lines) == 0 {
		return
	}
	h := s.handoff
	h.mu.Lock()
	if h.n+len(lines) > handoffMax {
		h.batches, h.n, h.dropped = nil, 0, true
	} else {
		h.batches = append(h.batches, lines)
		h.n += len(lines)
	}
	h.mu.Unlock()
	if s.tail.ownNow() {
		return
	}
	h.wake()
}

// wake makes the tailer look at the queue.
func (h *handoff) wake() {
	select {
	case h.ready <- struct{}{}:
	default:
	}
}

// ownNow is Committed's pass: unless the tailer's goroutine is in a pass,
// it hands the queued lines to the hubs as takeOwn would, and reports
// whether it took them all. What needs the store (a dropped queue, a batch
// after a hole) it leaves to the tailer, which reads the store then.
func (t *tailer) ownNow() bool {
	if !t.turn.TryLock() {
		return false
	}
	defer t.turn.Unlock()
	if t.ctx.Err() != nil {
		return false // Close began: no pass after it (see Close)
	}
	batches, dropped := t.s.handoff.take()
	if dropped || !t.directAll(t.ctx, batches) {
		// Every taken line is committed: the tailer's store read from
		// its cursor covers the rest, as it does a queue too long to keep.
		t.s.handoff.drop()
		return false
	}
	return true
}

// take returns the queued batches and whether some were dropped, and
// empties the queue.
func (h *handoff) take() ([][]store.Line, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	b, d := h.batches, h.dropped
	h.batches, h.n, h.dropped = nil, 0, false
	return b, d
}

// drop makes the tailer read the store instead of the queue (see take).
func (h *handoff) drop() {
	h.mu.Lock()
	h.batches, h.n, h.dropped = nil, 0, true
	h.mu.Unlock()
}

// takeOwn hands the queued own lines to the hubs, or reads the store when
// they do not follow the cursor.
func (t *tailer) takeOwn(ctx context.Context) error {
	batches, dropped := t.s.handoff.take()
	if dropped || !t.directAll(ctx, batches) {
		// Every queued line is committed: the store read covers the
		// rest of the queue too.
		return t.poll(ctx)
	}
	return nil
}

// directAll hands batches to the hubs in order (direct) while they follow
// the cursor, and reports whether all did; the batches from the first
// that did not are counted as misses.
func (t *tailer) directAll(ctx context.Context, batches [][]store.Line) bool {
	for i, ls := range batches {
		if !t.direct(ctx, ls) {
			t.s.stats.handoffMisses.Add(int64(len(batches) - i))
			return false
		}
	}
	return true
}

// direct hands ls to the hubs when, after dropping the lines at or below
// the cursor (a store read got them first), their seqs run on from the
// cursor without a hole, and reports whether it did. A hole may be a
// peer's line not yet read, or a seq the store skipped: either way the
// store knows, and the caller asks it. A hit is counted before the
// frames go out, so a client that has them sees it in Stats.
func (t *tailer) direct(ctx context.Context, ls []store.Line) bool {
	i := 0
	for i < len(ls) && ls[i].Seq <= t.cursor {
		i++
	}
	ls = ls[i:]
	for j, l := range ls {
		if l.Seq != t.cursor+1+int64(j) {
			return false
		}
	}
	t.s.stats.handoffHits.Add(1)
	if len(ls) == 0 {
		return true
	}
	if t.s.hubs.len() > 0 {
		t.handOff(ctx, ls)
	}
	t.advance(ls[len(ls)-1].Seq)
	return true
}
