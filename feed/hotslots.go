package feed

import "time"

// Reading hot streams spread over several hash slots (a cluster): one
// XREADGROUP cannot block on keys of two slots, and one blocking read per
// slot would hold a connection per hot slot. So the loop reads every hot
// slot without blocking, one command per slot in one pipeline (go-redis
// sends each node's share at once, concurrently), and repeats that every
// hot tick until the beat, going back to the turn as soon as a read
// delivers. An entry of a hot game then waits about one tick, not one
// beat (docs/reader-law.md, "Redis Cluster").
const (
	// minHotTick is the pause between two reads of the hot slots.
	minHotTick = 10 * time.Millisecond
	// hotTickPerSlot stretches the tick with the number of hot slots (50ms
	// at 500), so that the reads stay under about 10,000 commands a second.
	hotTickPerSlot = 100 * time.Microsecond
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
// keys than one command holds), without blocking: every hotTick for up to
// wait when they are at most tickKeys, else once. It returns after the
// first read that delivers (the turn then runs again: beat, drain,
// claims), after wait, or when the consumer stops.
func (c *Consumer) readSlots(sts []*streamState, slots int, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	tick := hotTick(slots)
	if len(sts) > tickKeys {
		tick = wait
	}
	for {
		got, err := c.readMany(sts, time.Now())
		if err != nil || got {
			return err
		}
		left := time.Until(deadline)
		if left <= 0 || !c.sleep(min(tick, left)) {
			return nil
		}
		if time.Until(deadline) <= 0 {
			return nil
		}
	}
}
