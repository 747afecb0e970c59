package feed

import (
	"context"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/internal/backoff"
)

// hold keeps entries whose verdict was Unavailable in hand and hands them
// to the handler again, with capped, jittered backoff, until they get
// another verdict: a full disk or a store that cannot be written is not
// the entries' fault, so they are neither redelivered (which would count
// toward poison) nor read past. Meanwhile the consumer reads nothing else,
// Ready reports the reason, and the entries' idle time is kept fresh so no
// peer claims them. Close ends the hold; the entries stay pending. With
// settle false (catch-up) the other verdicts are not settled: the entries
// refused with a plain error on a retry in hand are returned, in order,
// for the catch-up to try again (catchRefused).
func (c *Consumer) hold(held []delivery, settle bool) (refused []delivery, err error) {
	// Forgive before the pause shows: whoever sees the consumer paused
	// (readiness, an operator about to restart it) may rely on the
	// delivery having been taken back already.
	if settle {
		c.forgive(held)
	}
	c.setPaused(held[0].err)
	// The entries settled meanwhile are no longer pending: keepAlive's
	// script leaves them alone. It reads its own copy: held is judged
	// and filtered while it runs.
	defer c.keepAlive(slices.Clone(held))()
	bo := backoff.Backoff{Min: 100 * time.Millisecond, Max: c.cfg.PauseMax}
	for {
		if !c.sleep(bo.Next()) {
			return refused, nil // Close: what is held stays pending
		}
		var s settlement
		again := c.judge(held, c.callHandler(held), &s)
		if !settle {
			refused = append(refused, s.failed...)
			s = settlement{}
		}
		if len(s.failed) > 0 {
			// A real failure on the retry in hand: the delivery the pause
			// took back counts again. Left forgiven, an entry whose every
			// delivery was refused as Unavailable before it failed came
			// back with the same count each time and never reached
			// PoisonAfter (TestFailureAfterPauseCounts).
			c.recount(s.failed, 0)
		}
		if err := c.settle(&s); err != nil {
			// Redis failed too: the held entries stay pending and come
			// back by the reader law; the loop backs off.
			c.setResumed()
			return nil, err
		}
		if len(again) == 0 {
			c.setResumed()
			return refused, nil
		}
		held = again
		c.setPaused(held[0].err)
	}
}

// forgiveScript sets the delivery count of the given entries that are
// still this consumer's to ARGV[3] (XCLAIM to self, min-idle 0, RETRYCOUNT,
// JUSTID), leaving alone entries a peer took.
var forgiveScript = redis.NewScript(`
local mine = {}
for i = 4, #ARGV do
  local p = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[i], ARGV[i], 1)
  if #p == 1 and p[1][2] == ARGV[2] then mine[#mine + 1] = ARGV[i] end
end
local n = #mine
if n == 0 then return 0 end
mine[n + 1] = 'RETRYCOUNT'
mine[n + 2] = ARGV[3]
mine[n + 3] = 'JUSTID'
redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[2], 0, unpack(mine))
return n
`)

// forgive takes back the delivery that ended in an Unavailable verdict:
// each held entry's delivery count goes back to what it was before it.
// Should this process die during the pause, the entries' next delivery
// then counts as the same attempt, so however many restarts an outage
// lasts, it never adds up to PoisonAfter. Best effort: on a Redis error
// the counts stay as they are. Close does not cut it short: a Close right
// after the verdict is exactly the restart this is for.
func (c *Consumer) forgive(held []delivery) { c.recount(held, 1) }

// recount sets the delivery count of each entry of ds that is still this
// consumer's to its attempts less back: forgive takes its delivery back
// (back 1), and a failure after a pause gives it back (back 0). Best
// effort, as forgive is.
func (c *Consumer) recount(ds []delivery, back int64) {
	type key struct {
		stream string
		count  int64
	}
	groups := map[key][]any{}
	for _, d := range ds {
		if d.attempts < 1 {
			continue
		}
		k := key{d.stream, d.attempts - back}
		groups[k] = append(groups[k], d.x.ID)
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(c.ctx), 5*time.Second)
	defer cancel()
	for k, ids := range groups {
		args := append([]any{c.cfg.Group, c.cfg.Consumer, k.count}, ids...)
		if err := forgiveScript.Run(ctx, c.rdb, []string{k.stream}, args...).Err(); err != nil {
			c.fail("forgive", err)
			c.log.Debug("delivery count of held entries not reset", "stream", k.stream, "err", err)
		}
	}
}

// setPaused records the pause and its reason; the first call of a pause
// logs one line, counts it and sets the gauge.
func (c *Consumer) setPaused(err error) {
	c.mu.Lock()
	was := c.pausedErr != nil
	c.pausedErr = err
	if !was {
		c.pausedAt = time.Now()
	}
	c.mu.Unlock()
	if was {
		return
	}
	c.stats.pauses.Add(1)
	mPaused.Set(1)
	c.log.Error("infrastructure unavailable; consumer paused, entries in hand stay pending and are retried", "err", err)
	c.note("consumer paused: " + err.Error())
}

// setResumed ends a pause: one log line and the gauge back to 0.
func (c *Consumer) setResumed() {
	c.mu.Lock()
	was, at := c.pausedErr != nil, c.pausedAt
	c.pausedErr = nil
	c.mu.Unlock()
	if !was {
		return
	}
	mPaused.Set(0)
	d := time.Since(at).Round(time.Millisecond)
	c.log.Info("infrastructure available again; consumer resumed", "paused_for", d)
	c.note("consumer resumed after a pause of " + d.String())
}

// Paused returns the reason the consumer is paused, or nil.
func (c *Consumer) Paused() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pausedErr
}

// Note is one thing the consumer wants an operator to know about (a pause,
// a gap, groups re-created, a store caught up), as shown on the status
// page.
type Note struct {
	At   time.Time `json:"at"`
	Text string    `json:"text"`
}

// maxNotes bounds the notes kept: the newest ones.
const maxNotes = 20

func (c *Consumer) note(text string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.notes = append(c.notes, Note{At: time.Now().UTC(), Text: text})
	if len(c.notes) > maxNotes {
		c.notes = append(c.notes[:0:0], c.notes[len(c.notes)-maxNotes:]...)
	}
}

// Notes returns what the consumer has to tell an operator, oldest first.
func (c *Consumer) Notes() []Note {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Note(nil), c.notes...)
}
