package feed

import "time"

// Reading hot streams spread over several hash slots (a cluster): one
// XREADGROUP cannot block on keys of two slots, and one blocking read per
// slot would hold a connection per hot slot. So the loop reads the hot
// slots without blocking, one command per slot in one pipeline (go-redis
// sends each node's share at once, concurrently), every hot tick until the
// beat, going back to the turn as soon as a read delivers. An entry of a
// hot game then waits about one tick, not one beat (docs/reader-law.md,
// "Redis Cluster").
//
// The hot streams are read in two tiers. The liveKeys most recently active
// are read at once in every turn that reaches the hot read and every tick
// of their own, which stays at minHotTick; the others (up to blockKeys,
// games that were active within the window but not lately, such as
// thousands just drained) only every tick of all the hot slots. One tier
// made every turn a command per hot slot: with 500 slots hot, a turn cost
// 500 commands whatever it delivered, and the live games' entries waited
// behind them (docs/benchmarks.md, "two tiers of hot").
const (
	// minHotTick is the pause between two reads of the hot slots.
	minHotTick = 10 * time.Millisecond
	// hotTickPerSlot stretches the tick with the number of hot slots (50ms
	// at 500), so that the reads stay under about 10,000 commands a second.
	hotTickPerSlot = 100 * time.Microsecond
	// liveKeys is how many hot streams are read every turn and every
	// minHotTick: as many as keep that tick at its minimum.
	liveKeys = int(minHotTick / hotTickPerSlot)
	// tickKeys caps the hot streams read every tick. Past it (thousands of
	// games made hot by a catch-up, or more than one XREADGROUP's worth on
	// a single node) they are read once a beat, as the registry beat reads
	// a quiet game, so that the ticks never cost more than the drain.
	tickKeys = maxKeys
)

// hotTick is the pause between two reads of slots hot slots.
func hotTick(slots int) time.Duration {
	return max(minHotTick, time.Duration(slots)*hotTickPerSlot)
}

// readSlots reads the hot streams sts, which span several slots (or more
// keys than one command holds), without blocking, until wait is over: the
// live most recent of them (sts[:live]) at once and every tick of their
// slots, all of them every tick of all the slots (once, when there are
// more than tickKeys). Like the blocking read, it waits out the linger
// after a small batch before its first read, and a small batch starts the
// linger, counted from the read that brought it. It returns after the
// first read that delivers (the turn then runs again: beat, drain,
// claims), after wait, or when the consumer stops.
func (c *Consumer) readSlots(sts []*streamState, live, slots int, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	h := &c.hotSet
	liveSts, rest := sts[:live], len(sts)-live
	liveTick, restTick := hotTick(len(c.groups(liveSts))), hotTick(slots)
	if len(sts) > tickKeys {
		restTick = wait
	}
	// After a small batch the reads wait out the linger first, as the
	// blocking read does (readHot).
	if d := time.Until(c.gatherUntil); d > 0 {
		if !c.sleep(min(d, wait)) {
			return nil
		}
		c.stats.lingered.Add(1)
	}
	for {
		now := time.Now()
		read := liveSts
		if rest > 0 && !now.Before(h.restNext) {
			read = sts
			h.restNext = now.Add(restTick)
		}
		read = upOf(read, now) // less those an earlier tick set aside
		if len(read) > 0 {
			got, err := c.readMany(read, now)
			if got && c.cfg.Linger > 0 && len(dueOf(read)) == 0 {
				// Counted from the read, not from the end of its commit
				// as the blocking read counts it: this read is a round
				// trip to every node, and the gathering starts with it.
				// Counted from the commit, the cluster's p50 rose by 1
				// to 2 ms for no gain in p99 (docs/benchmarks.md, "The
				// linger on a cluster").
				c.gatherUntil = now.Add(c.cfg.Linger)
			}
			if err != nil || got {
				return err
			}
		}
		pause := time.Until(deadline)
		if live > 0 {
			pause = min(pause, liveTick)
		}
		if rest > 0 {
			pause = min(pause, time.Until(h.restNext))
		}
		if time.Until(deadline) <= 0 || !c.sleep(max(pause, 0)) {
			return nil
		}
		if time.Until(deadline) <= 0 {
			return nil
		}
	}
}
