package web

import (
	"context"
	"slices"
	"time"

	"github.com/codemojex/feed/store"
	"github.com/codemojex/feed/templates"
)

// board is the tailer's record of one game's scoreboard frames.
//
// State frames are coalesced: after a line that can move the scoreboard,
// its game's panel goes out at once if none went out in the last
// Config.StateEvery, else when that period ends, carrying every change
// since. A panel equal to the last one broadcast to the hub is not sent,
// and one that differs goes out as a board frame, its unchanged rows
// stubbed (templates.ScoreboardPatch), since every client of the hub shows
// the last one. Both hold only while no websocket subscribed since: its
// backfill sent a state of its own, which may differ, so the next panel
// goes out whole, as a state frame. So do the panels of a hub with a
// socket that did not ask for board frames (board=1: the page script does;
// a client written to the contract before them did not). At 1,000
// events/s over 100 games the tailer read and rendered a scoreboard after
// almost every line (10 % of the renderer's CPU, 1.89 frames per line),
// and whole panels were most of the bytes on the wire and the tail of the
// latency (docs/benchmarks-journal.md, "Board frames").
type board struct {
	sentAt  time.Time        // when the last panel of this game was made
	last    store.Scoreboard // the panel last broadcast
	hub     *hub             // the hub it was sent to
	subs    int64            // and that hub's subscription count then
	pending bool             // a change waits for sentAt + StateEvery
	seq     int64            // the seq of the game's latest line handed off
}

// boardChanged notes that a line of game, of seq, that can move the
// scoreboard was handed off at now.
func (t *tailer) boardChanged(ctx context.Context, game string, seq int64, now time.Time) {
	b := t.boards[game]
	if b == nil {
		b = &board{}
		t.boards[game] = b
	}
	b.seq = max(b.seq, seq)
	due := b.sentAt.Add(t.s.cfg.StateEvery)
	if !now.Before(due) {
		t.sendBoard(ctx, game, b, now)
		return
	}
	b.pending = true
	t.armBoards(due)
}

// sendBoard reads game's scoreboard and broadcasts it, as a state or a
// board frame, unless every client already shows it.
func (t *tailer) sendBoard(ctx context.Context, game string, b *board, now time.Time) {
	b.pending = false
	h := t.s.hubs.get(game)
	if h == nil {
		delete(t.boards, game)
		return
	}
	subs := h.subscriptions()
	sb, err := scoreboard(ctx, t.s.cfg.Store, game, b.seq)
	if err != nil {
		// The lines went out; a missing scoreboard refresh heals with
		// the game's next line.
		t.s.log.Warn("web: scoreboard", "game", game, "err", err)
		return
	}
	b.sentAt = now
	shown := h == b.hub && subs == b.subs // every client shows b.last
	if shown && templates.SamePanel(b.last, sb) {
		t.s.stats.statesSkipped.Add(1)
		return
	}
	var keep []bool // nil: the whole panel
	if shown && h.takeBoards() {
		t.keep = templates.PatchRows(b.last, sb, t.keep)
		if slices.Contains(t.keep, true) {
			keep = t.keep
		}
	}
	f, err := boardFrame(ctx, sb, keep)
	if err != nil {
		t.s.log.Warn("web: scoreboard", "game", game, "err", err)
		return
	}
	b.last, b.hub, b.subs = sb, h, subs
	t.s.countEncoded(f.kind())
	t.broadcast(h, f)
	if keep != nil && h.subscriptions() != subs {
		// A websocket subscribed while the patch was made: it may have
		// got it on top of a panel of its own, read at another time (one
		// that takes whole panels only did not get it: broadcastTo
		// skips it). A whole panel follows within the period.
		b.pending = true
		t.armBoards(now.Add(t.s.cfg.StateEvery))
	}
}

// armBoards makes the tailer's board timer fire at due at the latest.
func (t *tailer) armBoards(due time.Time) {
	if t.boardDue.IsZero() || due.Before(t.boardDue) {
		t.timer.Reset(time.Until(due))
		t.boardDue = due
	}
}

// flushBoards sends the pending state frames that are due and re-arms the
// timer for the rest.
func (t *tailer) flushBoards(ctx context.Context) {
	defer t.wakes.run()
	t.boardDue = time.Time{}
	now := time.Now()
	var next time.Time
	for game, b := range t.boards {
		if !b.pending {
			continue
		}
		due := b.sentAt.Add(t.s.cfg.StateEvery)
		if !now.Before(due) {
			t.sendBoard(ctx, game, b, now)
			continue
		}
		if next.IsZero() || due.Before(next) {
			next = due
		}
	}
	if !next.IsZero() {
		t.armBoards(next)
	}
}

// pruneBoards forgets the games that no websocket watches any more.
func (t *tailer) pruneBoards() {
	for game, b := range t.boards {
		if !b.pending && t.s.hubs.get(game) == nil {
			delete(t.boards, game)
		}
	}
}
