package web

import (
	"bytes"
	"context"
	"time"
)

// board is the tailer's record of one game's scoreboard frames.
//
// State frames are coalesced: after a line that can move the scoreboard,
// its game's state frame goes out at once if none went out in the last
// Config.StateEvery, else when that period ends, carrying every change
// since. And a frame whose bytes equal the last one broadcast to the hub is
// not sent, unless a websocket subscribed since (its backfill read a state
// of its own, which may differ). At 1,000 events/s over 100 games the
// tailer read and rendered a scoreboard after almost every line (10 % of
// the renderer's CPU, 1.89 frames per line).
type board struct {
	sentAt  time.Time // when the last state frame of this game was made
	last    []byte    // its bytes
	hub     *hub      // the hub it was sent to
	subs    int64     // and that hub's subscription count then
	pending bool      // a change waits for sentAt + StateEvery
	seq     int64     // the seq of the game's latest line handed off
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

// sendBoard reads and renders game's scoreboard and broadcasts it unless
// every client already has those bytes.
func (t *tailer) sendBoard(ctx context.Context, game string, b *board, now time.Time) {
	b.pending = false
	h := t.s.hubs.get(game)
	if h == nil {
		delete(t.boards, game)
		return
	}
	subs := h.subscriptions()
	f, err := stateFrame(ctx, t.s.cfg.Store, game, b.seq)
	if err != nil {
		// The lines went out; a missing scoreboard refresh heals with
		// the game's next line.
		t.s.log.Warn("web: scoreboard", "game", game, "err", err)
		return
	}
	b.sentAt = now
	if h == b.hub && subs == b.subs && bytes.Equal(f.data, b.last) {
		t.s.stats.statesSkipped.Add(1)
		return
	}
	b.last, b.hub, b.subs = f.data, h, subs
	t.s.countEncoded(frameState)
	t.broadcast(h, f)
}

// armBoards makes the tailer's board timer fire at due at the latest.
func (t *tailer) armBoards(due time.Time) {
	if t.boardTimer == nil {
		t.boardTimer = time.NewTimer(time.Until(due))
		t.boardDue = due
		return
	}
	if t.boardDue.IsZero() || due.Before(t.boardDue) {
		t.boardTimer.Reset(time.Until(due))
		t.boardDue = due
	}
}

// boardC is the board timer's channel, nil when none is armed.
func (t *tailer) boardC() <-chan time.Time {
	if t.boardTimer == nil || t.boardDue.IsZero() {
		return nil
	}
	return t.boardTimer.C
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
