package feed

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// cleanupScript removes the group's consumers that have no pending entry
// and have been idle past ARGV[2] ms, except the caller. Checked and
// deleted in one script, so no pending entry is ever dropped with its
// consumer (XGROUP DELCONSUMER discards the consumer's pending entries).
var cleanupScript = redis.NewScript(`
local n = 0
local cs = redis.call('XINFO', 'CONSUMERS', KEYS[1], ARGV[1])
for _, c in ipairs(cs) do
  local f = {}
  for i = 1, #c, 2 do f[c[i]] = c[i + 1] end
  if f['name'] ~= ARGV[3] and f['pending'] == 0 and f['idle'] > tonumber(ARGV[2]) then
    redis.call('XGROUP', 'DELCONSUMER', KEYS[1], ARGV[1], f['name'])
    n = n + 1
  end
end
return n
`)

// The periodic censuses, of the work set (every CensusEvery) and of the hot
// streams (every hotLookEvery), are rounds taken one pipeline of maxKeys
// streams a turn (censusStep). Taken at once, a census of the 10,000 games
// a catch-up or a drain leaves hot was 20 pipelines in a row on the loop,
// about 100ms on a cluster, and every live entry waited behind it
// (docs/benchmarks.md, "two tiers of hot").
type censusRound struct {
	todo []*streamState
	// keep tells, when its pipeline comes, whether a stream of todo is
	// still to be looked at: one that left the work set, lost its group or
	// no longer meets the round's choice since it began is not.
	keep func(st *streamState, now time.Time) bool
}

// startCensus starts a round of the work set's census: its cost follows
// the streams with a reason to be read, not the registry.
func (c *Consumer) startCensus() {
	c.workCensus.keep = inCensus
	c.workCensus.todo = c.pick(func(st *streamState) bool { return inCensus(st, time.Time{}) })
}

func inCensus(st *streamState, _ time.Time) bool { return st.open && !st.needDoor }

// startHotLook starts a round of the census of the hot streams not known
// to have pending entries. A peer that died holding entries shows only in
// its group's pending count; without this look, reclaiming them would wait
// for the census (CensusEvery) on top of MinIdle + ClaimEvery. It costs one
// XINFO GROUPS per hot stream every hotLookEvery.
func (c *Consumer) startHotLook(now time.Time) {
	c.hotLook.keep = inHotLook
	c.hotLook.todo = c.pick(func(st *streamState) bool { return inHotLook(st, now) })
}

func inHotLook(st *streamState, now time.Time) bool {
	return st.open && !st.needDoor && !st.pending && !st.pinned && st.hot(now)
}

// censusStep takes the next pipeline of the census rounds under way, the
// hot look's first. It returns the streams it found with pending entries
// that were not known to have any: the caller claims them without waiting
// for the claim beat.
func (c *Consumer) censusStep(now time.Time) ([]*streamState, error) {
	r := &c.hotLook
	if len(r.todo) == 0 {
		r = &c.workCensus
	}
	if len(r.todo) == 0 {
		return nil, nil
	}
	// The streams passed over cost a map look-up each: a round that began
	// over thousands of games that have left the work set since ends in a
	// turn, and does not hold back the next one.
	var sts []*streamState
	n := 0
	for ; n < len(r.todo) && len(sts) < maxKeys; n++ {
		if st := r.todo[n]; c.work.has(st) && r.keep(st, now) && !st.down(now) {
			sts = append(sts, st)
		}
	}
	r.todo = r.todo[n:]
	if len(sts) == 0 {
		return nil, nil
	}
	return c.censusChunk(sts, false)
}

// hotLookEvery is the period of the hot look (startHotLook): at most
// MinIdle/2, since an entry a peer took at time t can be claimed from t +
// MinIdle on, and a look before then is all the claim beat needs to stay
// within MinIdle + ClaimEvery; never more often than the claims themselves.
func (c *Consumer) hotLookEvery() time.Duration {
	return max(c.cfg.ClaimEvery, c.cfg.MinIdle/2)
}

// inspectNew takes the census of the streams that just came through the
// door: a stream with nothing pending skips the own-pending recovery, and
// one with lag is due for a read.
func (c *Consumer) inspectNew() error {
	sts := c.pick(func(st *streamState) bool { return st.open && st.inspect })
	if len(sts) == 0 {
		return nil
	}
	return c.censusOf(sts, false)
}

// censusOf runs XINFO GROUPS on each stream (pipelined, 500 a pipeline)
// and sets from it: the pending flag (claims and the census follow it),
// due when the group lags behind the stream, the pending and lag gauges of
// the streams that have either. With cleanup, or for a static stream, it
// then runs the idle-consumer cleanup (a second pipeline) on the streams
// whose group has more than one consumer: a lone consumer is this process
// or one it could at most replace, and a quiet game's census then costs
// one command, not three (docs/reader-law.md, "The read set").
func (c *Consumer) censusOf(sts []*streamState, cleanup bool) error {
	for chunk := range slices.Chunk(sts, maxKeys) {
		if _, err := c.censusChunk(chunk, cleanup); err != nil || c.stopping() {
			return err
		}
	}
	return nil
}

// censusChunk is censusOf for one pipeline's worth of streams. It also
// returns those it found with pending entries that were not known to have
// any.
func (c *Consumer) censusChunk(sts []*streamState, cleanup bool) ([]*streamState, error) {
	ctx, cancel := context.WithTimeout(c.ctx, 5*time.Second)
	defer cancel()
	p := c.pipes()
	groups := make([]*redis.XInfoGroupsCmd, len(sts))
	for i, st := range sts {
		groups[i] = p.of(st.key).XInfoGroups(ctx, st.key)
	}
	p.exec(ctx)
	var crowded []*streamState // groups with consumers to clean up
	var fresh []*streamState   // pending found where none was known
	answered := false
	for i, st := range sts {
		if err := groups[i].Err(); err != nil {
			c.fail("census", err)
			if !serverError(err) {
				if err := c.setAside([]*streamState{st}, err); err != nil {
					return fresh, err
				}
				continue
			}
			answered = true
			c.reopen(st, err)
			continue
		}
		answered = true
		st.downBackoff.Reset()
		found := false
		for _, g := range groups[i].Val() {
			if g.Name != c.cfg.Group {
				continue
			}
			found = true
			// The group's last-delivered id is a position ">" gave the
			// group before: one no newer is a rewind (reread), also for a
			// process that ">" never gave a position of the stream (it
			// started after the game's last entry, or a peer read them).
			st.newest = newerID(st.newest, g.LastDeliveredID)
			if g.Pending > 0 && !st.pending {
				fresh = append(fresh, st)
			}
			st.pending = g.Pending > 0
			if st.inspect && !st.pending {
				st.recover = false // nothing pending, nothing of ours to recover
			}
			st.inspect = false
			if g.Lag != 0 {
				st.due = true // read once readable (after recovery)
			}
			if g.Pending > 0 || g.Lag != 0 || st.gauged {
				mPending.WithLabelValues(labelOf(st)).Set(float64(g.Pending))
				mLag.WithLabelValues(labelOf(st)).Set(float64(g.Lag))
				st.gauged = true
			}
			if st.busy(time.Now()) {
				c.track(st)
			}
			if (cleanup || st.pinned) && g.Consumers > 1 {
				crowded = append(crowded, st)
			}
		}
		if !found {
			// The group vanished without an error (a failover lost it):
			// the door re-creates it.
			c.reopen(st, nil)
		}
	}
	if answered {
		c.ok()
	}
	if len(crowded) > 0 {
		c.cleanUp(ctx, crowded)
	}
	return fresh, nil
}

// cleanUp runs the idle-consumer cleanup script on sts, pipelined. A
// failure is logged and left to the next census: no entry depends on it.
func (c *Consumer) cleanUp(ctx context.Context, sts []*streamState) {
	p := c.pipes()
	cleans := make([]*redis.Cmd, len(sts))
	for i, st := range sts {
		// EVALSHA: a pipeline cannot fall back on NOSCRIPT by itself, and
		// sending the body 500 times a page is what it would cost.
		cleans[i] = cleanupScript.EvalSha(ctx, p.of(st.key), []string{st.key},
			c.cfg.Group, c.cfg.ConsumerMaxIdle.Milliseconds(), c.cfg.Consumer)
	}
	p.exec(ctx)
	noScript := false
	for i, st := range sts {
		n, err := cleans[i].Int64()
		if err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT") {
			noScript = true // loaded below; the next census cleans up
			continue
		}
		if err != nil {
			c.fail("cleanup", err)
			c.log.Warn("idle consumer cleanup failed", "stream", st.key, "err", err)
			continue
		}
		if n > 0 {
			c.stats.consumersDeleted.Add(n)
			c.log.Info("idle consumers removed", "stream", st.key, "game", st.game, "count", n,
				"idle_over", c.cfg.ConsumerMaxIdle)
		}
	}
	if noScript {
		if err := cleanupScript.Load(ctx, c.rdb).Err(); err != nil {
			c.log.Warn("idle consumer cleanup script not loaded", "err", err)
		}
	}
}
