package feed

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/codemojex/feed/internal/untrusted"
)

// quiet marks a turn's error that another log line already reports.
type quiet struct{ error }

func (q quiet) Unwrap() error { return q.error }

// sweepState is where the slow full pass over the registry stands. Its
// cursor is a score, not a rank: writes move games to the end of the
// registry and prune removes some, so ranks shift under a pass, and a
// game could slide into the part already swept (sweepPage).
type sweepState struct {
	pass  int       // 1 during the first pass after Open
	page  int       // pages of this pass taken so far
	from  float64   // score the next page starts at: the last page's highest
	skip  int64     // members scored from that this pass listed already
	pages int       // pages of the last full pass
	next  time.Time // when the next page is due
}

// run is the loop goroutine. Each turn: find games (the registry beat and
// a sweep page, or the static list), retry failed acks, open group doors,
// take the census of new streams, recover own pending lists, claim idle
// entries when due, take the census when due, read the due streams without
// blocking, and when none is due, block on the hot ones until the next
// beat. Any error of a turn backs off (capped, with jitter) before the next
// one: no failure makes the loop spin, and none makes it exit.
func (c *Consumer) run() {
	defer func() {
		c.mu.Lock()
		c.running = false
		c.mu.Unlock()
	}()
	for !c.stopping() {
		if err := c.turn(); err != nil {
			if c.stopping() {
				return // Close cancelled the call; not a failure
			}
			d := c.loopBackoff.Next()
			level := slog.LevelWarn
			if errors.As(err, new(quiet)) {
				level = slog.LevelDebug
			}
			c.log.Log(c.ctx, level, "consumer loop error; backing off", untrusted.Err(err), "backoff", d.Round(time.Millisecond))
			if !c.sleep(d) {
				return
			}
			continue
		}
		c.loopBackoff.Reset()
	}
}

// turn runs the steps of one turn. A stream whose node does not answer is
// set aside for its own retry and the turn goes on with the others
// (setAside); only when nothing answered in the whole turn does it end
// with the error, and the loop backs off as it does for any (endTurn).
func (c *Consumer) turn() error {
	answers := c.answered()
	defer func() { c.prune(time.Now()) }()
	return c.endTurn(answers, c.steps())
}

func (c *Consumer) steps() error {
	now := time.Now()
	if c.cfg.Registry != "" {
		// A failing beat or sweep keeps what is known: the games already
		// in the read set go on, and it is tried again next time.
		// Sampled: on a cluster whose registry master is down (killed,
		// failing over, or with no replica to take over) the other
		// masters answer, so the turns go on without the loop's backoff,
		// and the beat and the sweep failed every WakeEvery, several WARN
		// lines a second for the length of the outage
		// (TestClusterRegistryMasterDownLogSampled).
		// Neither asks a registry whose node did not answer, on a
		// cluster, before its retry (registryDown).
		up := c.registryUp(now)
		if !up {
			// Looked at again a beat on: left in the past, these
			// deadlines cut every blocking read to 1 ms (blockFor), and
			// the loop turned every millisecond, each turn a read of
			// every slot of the hot games, for the length of the outage
			// (until 5 Dec 2026; TestClusterRegistryMasterDownNoSpin).
			c.nextWake = later(c.nextWake, now.Add(c.cfg.WakeEvery))
			c.sweep.next = later(c.sweep.next, now.Add(c.cfg.WakeEvery))
		}
		if up && !now.Before(c.sweep.next) {
			if err := c.sweepNext(now); err != nil {
				if ok, skipped := c.sample.Allow("sweep failed"); ok {
					c.log.Warn("registry sweep failed; keeping the known games", "err", err, "streams", len(c.streams),
						"similar_unlogged", skipped)
				}
				c.sweep.next = now.Add(c.cfg.WakeEvery)
			}
		}
		if up && !now.Before(c.nextWake) {
			if err := c.wake(now); err != nil {
				if ok, skipped := c.sample.Allow("beat failed"); ok {
					c.log.Warn("registry beat failed; keeping the known games", "err", err, "streams", len(c.streams),
						"similar_unlogged", skipped)
				}
			}
			c.nextWake = now.Add(c.cfg.WakeEvery)
		}
	} else if !now.Before(c.nextFind) {
		if err := c.discover(); err != nil {
			c.log.Warn("stream discovery failed; keeping the previous list", "err", err, "streams", len(c.streams))
		}
		c.nextFind = now.Add(c.cfg.StreamsEvery)
	}
	c.probe()
	if err := c.retryAcks(); err != nil {
		return err
	}
	if err := c.lease.held(); err != nil {
		// Not ours (yet): wait for the lease keeper rather than read work
		// that another live process with this name may be handling.
		// Said once, and once again when reading resumes: until 5 Dec
		// 2026 a consumer that could not refresh its lease (on a cluster,
		// the master of the leases' slot down while the others answer)
		// read none of its games for as long as that lasted without a
		// log line (TestClusterLeaseMasterDownLogged).
		if c.leaseIdle.IsZero() {
			c.leaseIdle = time.Now()
			c.log.Warn("consumer name's lease not held; reading nothing until it is", "err", err)
		}
		c.sleep(c.cfg.LeaseTTL / 3)
		return nil
	}
	if !c.leaseIdle.IsZero() {
		c.log.Info("consumer name's lease held again; reading", "idle_for", time.Since(c.leaseIdle).Round(time.Millisecond))
		c.leaseIdle = time.Time{}
	}
	if err := c.openDoors(); err != nil {
		return err
	}
	if err := c.catchUpAll(); err != nil {
		return err
	}
	if err := c.inspectNew(); err != nil {
		return err
	}
	if err := c.recoverAll(); err != nil {
		return err
	}
	// A round that falls due while the last is under way waits for it to
	// end: replacing it could leave its tail unlooked at for good.
	if now := time.Now(); now.After(c.nextClaim) && now.After(c.nextHotLook) && len(c.hotLook.todo) == 0 {
		c.startHotLook(now)
		c.nextHotLook = now.Add(c.hotLookEvery())
	}
	if now := time.Now(); now.After(c.nextCensus) && len(c.workCensus.todo) == 0 {
		c.startCensus()
		c.nextCensus = now.Add(c.cfg.CensusEvery)
	}
	fresh, err := c.censusStep(time.Now())
	if err != nil {
		return err
	}
	if now := time.Now(); now.After(c.nextClaim) {
		if err := c.claimAll(); err != nil {
			return err
		}
		c.nextClaim = now.Add(c.cfg.ClaimEvery)
	} else {
		// Found by a later pipeline of a round: claimed now, as the
		// round's first pipeline is by the claim beat it runs before.
		var readable []*streamState
		for _, st := range fresh {
			if st.readable() {
				readable = append(readable, st)
			}
		}
		if err := c.claimStreams(readable); err != nil || c.stopping() {
			return err
		}
	}
	now = time.Now()
	drained, err := c.drain(now)
	if err != nil {
		return err
	}
	// The poll runs when due even after a drain that read something: a
	// backlog keeps some stream due turn after turn, and a poll behind
	// the drain's return never ran while it lasted, so a quiet game's
	// entry that moved no score waited that long. It costs a busy turn
	// one page per PollEvery, and skips the due streams the drain reads.
	if c.cfg.Registry != "" && !c.stopping() {
		if now = time.Now(); !now.Before(c.nextPoll) {
			c.nextPoll = now.Add(c.cfg.PollEvery)
			if got, err := c.poll(now); err != nil || got {
				return err
			}
		}
	}
	if drained {
		return nil
	}
	wait := c.blockFor(now)
	if c.catching {
		// Pages of a catch-up are left: do not block on the hot streams.
		wait = time.Millisecond
	}
	return c.readHot(now, wait)
}

// later returns a, or b when a is not after it.
func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// blockFor is how long the blocking read may wait: Block, with a registry
// no later than the next beat or sweep page, and while streams are set
// aside no longer than asideWait.
func (c *Consumer) blockFor(now time.Time) time.Duration {
	d := c.cfg.Block
	if c.cfg.Registry != "" {
		d = min(d, c.nextWake.Sub(now), c.sweep.next.Sub(now))
	}
	if c.asideHeld || len(c.aside) > 0 {
		d = min(d, asideWait)
	}
	return max(d, time.Millisecond)
}

// discover refreshes the static stream list (Config.Streams). New streams
// go through the group door and recover their own pending list; vanished
// ones are dropped. Static streams are pinned: always in the read set.
func (c *Consumer) discover() error {
	ctx, cancel := context.WithTimeout(c.ctx, 5*time.Second)
	defer cancel()
	keys, err := c.cfg.Streams(ctx)
	if err != nil {
		c.fail("discover", err)
		return err
	}
	seen := make(map[string]bool, len(keys))
	var found, gone []string
	for _, k := range keys {
		if seen[k] {
			continue
		}
		seen[k] = true
		if _, ok := c.streams[k]; !ok {
			if err := c.checkDeadSlot(k); err != nil {
				// Listed after Open: not read, rather than read and
				// failing CROSSSLOT at its first poison entry.
				if ok, skipped := c.sample.Allow("dead slot"); ok {
					c.log.Error("stream not read: its dead keys are in another hash slot", "stream", k,
						"err", err, "similar_unlogged", skipped)
				}
				continue
			}
			st := newStream(k)
			st.pinned = true
			c.streams[k] = st
			c.track(st)
			found = append(found, k)
		}
	}
	for k, st := range c.streams {
		// A stream with acks in hand is kept until they are sent
		// (keptForAcks).
		if !seen[k] && !c.keptForAcks(st) {
			c.forget(st)
			gone = append(gone, k)
		}
	}
	// One line each per pass, however many streams.
	if len(found) > 0 {
		c.log.Info("streams discovered", "count", len(found), "streams", headOf(found, 5))
	}
	if len(gone) > 0 {
		c.log.Info("streams no longer listed", "count", len(gone), "streams", headOf(gone, 5))
	}
	return nil
}
