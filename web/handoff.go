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
// resume cursor. Committed never blocks.
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
	select {
	case h.ready <- struct{}{}:
	default:
	}
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

// takeOwn hands the queued own lines to the hubs, or reads the store when
// they do not follow the cursor.
func (t *tailer) takeOwn(ctx context.Context) error {
	batches, dropped := t.s.handoff.take()
	if dropped {
		return t.poll(ctx)
	}
	for i, ls := range batches {
		if !t.direct(ctx, ls) {
			t.s.stats.handoffMisses.Add(int64(len(batches) - i))
			// Every queued line is committed: the store read covers the
			// rest of the queue too.
			return t.poll(ctx)
		}
	}
	return nil
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
