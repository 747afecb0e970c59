package web

import (
	"context"
	"sync"
	"time"

	"github.com/codemojex/feed/internal/backoff"
	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/internal/untrusted"
	"github.com/codemojex/feed/store"
)

// tailer follows the store by seq and hands new lines to the hubs. It is the
// only reader of the store on the live path, however many browsers watch.
//
// Its passes run on its own goroutine (run), and a pass over the lines this
// process has just committed may run on the committing goroutine instead
// (ownNow); turn makes them one at a time, and guards every field below.
type tailer struct {
	s     *Server
	ctx   context.Context // the server's: ends with Close
	turn  sync.Mutex      // held for a pass
	timer *time.Timer     // the board timer: fires when a coalesced state frame is due

	cursor int64 // highest seq handed off (or skipped while no hub existed)

	boards   map[string]*board // by game: see board
	boardDue time.Time         // when timer fires; zero when disarmed
	keep     []bool            // sendBoard's rows to stub, reused

	wakes wakes // the sockets a pass queued frames for (see broadcastTo)
}

func newTailer(ctx context.Context, s *Server, start int64) *tailer {
	// One timer for the tailer's life, stopped until a board falls due: run
	// selects on its channel while a pass on another goroutine may arm it.
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	return &tailer{s: s, ctx: ctx, timer: timer, cursor: start, boards: map[string]*board{}}
}

// run polls on every doorbell and at least every TailEvery, and takes the
// lines this process committed (Server.Committed), until the server's
// context (t.ctx) ends.
// Errors back off with jitter up to 5 s; a missed doorbell costs at most one
// TailEvery, never a line, because the cursor only moves past handed lines.
func (t *tailer) run() {
	ctx := t.ctx
	tick := time.NewTicker(t.s.cfg.TailEvery)
	defer tick.Stop()
	defer t.timer.Stop()
	bell := t.s.cfg.Doorbell
	failures := 0
	own := false // woken by Server.Committed rather than a doorbell or the ticker
	retry := backoff.Backoff{Min: 100 * time.Millisecond, Max: 5 * time.Second}
	for {
		select {
		case <-ctx.Done():
			return
		case _, ok := <-bell:
			if !ok {
				bell = nil // a closed doorbell must not spin; the ticker goes on
			}
		case <-tick.C:
			t.turn.Lock()
			t.pruneBoards()
			t.turn.Unlock()
		case <-t.s.handoff.ready:
			own = true
		case <-t.timer.C:
			t.turn.Lock()
			t.flushBoards(ctx)
			t.turn.Unlock()
			continue
		}
		var err error
		t.turn.Lock()
		if own {
			err = t.takeOwn(ctx)
			own = false
		} else {
			err = t.poll(ctx)
		}
		cursor := t.cursor
		t.turn.Unlock()
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			failures++
			t.s.stats.tailErrors.Add(1)
			wait := retry.Next()
			t.s.log.Warn("web: tail store", "seq", cursor, "attempts", failures, "retry_in", wait, untrusted.Err(err))
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
			continue
		}
		failures = 0
		retry.Reset()
	}
}

// poll hands every line after the cursor to the hubs, page by page.
func (t *tailer) poll(ctx context.Context) error {
	st := t.s.cfg.Store
	for {
		// Read the max seq before looking at the hubs: a browser that
		// subscribes after the look backfills from the store after its
		// subscription, so lines up to max are its own to read.
		if t.s.hubs.len() == 0 {
			max, err := st.MaxSeq(ctx)
			if err != nil {
				return err
			}
			if t.s.hubs.len() == 0 {
				t.advance(max)
				return nil
			}
		}
		lines, err := st.Since(ctx, t.cursor, t.s.cfg.TailBatch)
		if err != nil {
			return err
		}
		if len(lines) == 0 {
			return nil
		}
		t.handOff(ctx, lines)
		t.advance(lines[len(lines)-1].Seq)
		if len(lines) < t.s.cfg.TailBatch {
			return nil
		}
	}
}

// broadcast queues f for h's clients in the tailer's pass (see wakes) and
// counts the clients dropped as slow.
func (t *tailer) broadcast(h *hub, f frame) {
	t.s.countSlow(h.broadcastTo(f, &t.wakes))
	t.wakes.spill() // not under the hub's lock: a writer may take it
}

func (t *tailer) advance(seq int64) {
	if seq > t.cursor {
		t.cursor = seq
		t.s.stats.tailCursor.Store(seq)
	}
}

// handOff encodes each line once and offers the shared bytes to every client
// of its game's hub, then notes the games whose scoreboard may have moved
// (see board: their state frames are coalesced). Last, it writes what it
// queued for the nbio engine's sockets itself (see wakes).
func (t *tailer) handOff(ctx context.Context, lines []store.Line) {
	defer t.wakes.run()
	now := time.Now()
	var touched []string
	seen := map[string]int64{} // touched game → its latest line's seq
	for _, l := range lines {
		if !l.At.IsZero() {
			// An "at" ahead of this clock (a writer's clock ahead, or a
			// forged one) is no lag: observed negative, it took the
			// histogram's _sum down (TestTailLagOfFutureAt).
			mTailLag.Observe(max(now.Sub(l.At), 0).Seconds())
		}
		h := t.s.hubs.get(l.Game)
		if h == nil {
			continue
		}
		f := lineFrame(l)
		t.s.countEncoded(frameLine)
		t.broadcast(h, f)
		if changesScoreboard(l.Kind) {
			if _, ok := seen[l.Game]; !ok {
				touched = append(touched, l.Game)
			}
			seen[l.Game] = l.Seq
		}
	}
	for _, game := range touched {
		t.boardChanged(ctx, game, seen[game], now)
	}
}

// changesScoreboard reports whether a line of kind can move the scoreboard
// panel. Chat and unknown kinds cannot (the store applies no state for
// them), and skipping their state frame halves the frames of a chatty game
// and spares the tailer a scoreboard read and render per touched game on
// the live path (docs/benchmarks.md, notes from profiles).
func changesScoreboard(kind string) bool {
	return kind != event.KindChat && event.Known(kind)
}
