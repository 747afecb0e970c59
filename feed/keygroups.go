package feed

import (
	"slices"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/internal/untrusted"
)

// maxKeys caps the streams of one multi-key XREADGROUP.
const maxKeys = 500

// groups splits streams into the key sets of multi-key commands: at most
// maxKeys each and, on a cluster, all of one hash slot (a multi-key
// XREADGROUP over two slots fails with CROSSSLOT, even on one node), and
// one stream each in a slot whose keys a migration split (splitSlot).
// Streams keep their relative order inside a group.
func (c *Consumer) groups(sts []*streamState) [][]*streamState {
	if !c.perSlot {
		return slices.Collect(slices.Chunk(sts, maxKeys))
	}
	var split map[int]bool
	if len(c.splitSlots) > 0 {
		now := time.Now()
		split = map[int]bool{}
		for s, until := range c.splitSlots {
			if now.Before(until) {
				split[s] = true
			} else {
				delete(c.splitSlots, s)
			}
		}
	}
	bySlot := map[int][]*streamState{}
	var slots []int
	for _, st := range sts {
		if _, ok := bySlot[st.slot]; !ok {
			slots = append(slots, st.slot)
		}
		bySlot[st.slot] = append(bySlot[st.slot], st)
	}
	var out [][]*streamState
	for _, s := range slots {
		if split[s] {
			for _, st := range bySlot[s] {
				out = append(out, []*streamState{st})
			}
			continue
		}
		out = append(out, slices.Collect(slices.Chunk(bySlot[s], maxKeys))...)
	}
	return out
}

// splitFor is how long the streams of a slot whose keys a migration split
// are read one a command (splitSlot). Past it a multi-key read is tried
// again, and a migration still under way answers it TRYAGAIN once more,
// after go-redis's own retries of it (three, about 30-150 ms of the loop):
// that once every splitFor. Reading a slot's hot streams one a command
// costs a command each every hot tick, a few hundred a second, for that
// long.
const splitFor = 5 * time.Second

// splitSlot handles a multi-key read over sts, streams of one hash slot,
// refused with TRYAGAIN: a migration of the slot has moved some of their
// keys to the importing node and not the others yet. No multi-key read of
// them can be served until the migration ends; a read of one key can (the
// source serves a key it still holds, the importing node a moved one, by
// ASK, which go-redis follows). So the
// slot's streams are read one a command for splitFor, from the next turn
// on, and not set aside: their node answered. Set aside as a node that
// does not answer, they waited for the migration to end and then for
// their retry and its PING, and a game of the slot that had not moved yet
// had its entries handled 0.9 s after the move ended (a 0.5 s split; 11 s
// with a static list, whose turns wait a whole Block when nothing is
// readable), until 6 Dec 2026 (TestClusterSplitSlotReadOn).
func (c *Consumer) splitSlot(op string, sts []*streamState, err error) {
	if c.splitSlots == nil {
		c.splitSlots = map[int]time.Time{}
	}
	until := time.Now().Add(splitFor)
	for _, st := range sts {
		c.splitSlots[st.slot] = until
	}
	c.ok() // the node answered: Ready stays
	c.log.Debug("multi-key "+op+" refused with TRYAGAIN (a slot migration split its keys); its streams are read one a command",
		"slot", sts[0].slot, "count", len(sts), "for", splitFor, untrusted.Err(err))
}

// isCluster reports whether rdb is a cluster client.
func isCluster(rdb redis.UniversalClient) bool {
	_, ok := rdb.(*redis.ClusterClient)
	return ok
}
