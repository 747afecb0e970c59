package feed

import "time"

// hotRefresh is how long the hot read keeps its choice of streams when
// nothing new became hot and the read set kept its members.
const hotRefresh = 100 * time.Millisecond

// hotSet is the hot read's choice of streams (hotReadSet).
type hotSet struct {
	streams []*streamState // the blockKeys most recently active, hot when chosen
	live    int            // streams[:live] are the liveKeys most recent of them
	gen     uint64         // the work set's generation they were chosen from
	next    time.Time      // when to choose again
	stale   bool           // a stream became hot since: choose again
	// restNext is when readSlots reads the streams past the live ones
	// next (hotslots.go).
	restNext time.Time
}

// hotReadSet returns the streams of this turn's hot read: the blockKeys
// most recently active hot streams, readable and not due, the liveKeys
// most recent of them first (sts[:live]); a blocking read takes them all,
// the hot tick of a cluster reads those past live less often (readSlots). Choosing them walks every hot stream, thousands at times,
// while a turn can come every millisecond; so the choice is kept across
// turns, and made again when a stream became hot, the work set changed its
// members, or hotRefresh has passed (the order of recency among them
// moves). Each turn still drops from it the streams no longer hot,
// readable or due: only a readable stream may be read with ">"
// (catchup.go).
func (c *Consumer) hotReadSet(now time.Time) (sts []*streamState, live int) {
	h := &c.hotSet
	if h.stale || h.gen != c.work.gen || !now.Before(h.next) {
		// Chosen among the hot streams whether readable or not, so that
		// one that becomes readable later (door, inspect, catch-up) is
		// already in the choice.
		h.streams, h.live = byRecency(mostRecent(c.pick(func(st *streamState) bool { return st.hot(now) }), blockKeys), liveKeys)
		h.gen, h.next, h.stale = c.work.gen, now.Add(hotRefresh), false
	}
	for i, st := range h.streams {
		if st.hot(now) && st.readable() && !st.due && !st.down(now) {
			sts = append(sts, st)
			if i < h.live {
				live++
			}
		}
	}
	return sts, live
}

// mostRecent returns the k streams of sts that were active last (the
// latest hotUntil), keeping their order in sts. It costs a walk and a
// selection, not a sort: it runs over every hot stream, thousands at
// times, whenever the hot read chooses again (hotReadSet).
func mostRecent(sts []*streamState, k int) []*streamState {
	top, _ := splitRecent(sts, k)
	return top
}

// byRecency returns sts with its k most recently active streams first and
// how many those are, each part in the order it had in sts.
func byRecency(sts []*streamState, k int) ([]*streamState, int) {
	top, others := splitRecent(sts, k)
	return append(top, others...), len(top)
}

// splitRecent splits sts into its k most recently active streams (top)
// and the others, each in the order it had in sts.
func splitRecent(sts []*streamState, k int) (top, others []*streamState) {
	if len(sts) <= k {
		return sts, nil
	}
	until := make([]int64, len(sts))
	for i, st := range sts {
		until[i] = st.hotUntil.UnixNano()
	}
	cut := kthLargest(until, k)
	above := 0 // strictly later than the cut: all of them go in
	for _, st := range sts {
		if st.hotUntil.UnixNano() > cut {
			above++
		}
	}
	ties := k - above // of those at the cut, the first ones in sts
	top = make([]*streamState, 0, k)
	others = make([]*streamState, 0, len(sts)-k)
	for _, st := range sts {
		switch u := st.hotUntil.UnixNano(); {
		case u > cut:
			top = append(top, st)
		case u == cut && ties > 0:
			top = append(top, st)
			ties--
		default:
			others = append(others, st)
		}
	}
	return top, others
}

// kthLargest returns the k-th largest of xs (1 ≤ k ≤ len(xs)), reordering
// xs: a quickselect, linear on average.
func kthLargest(xs []int64, k int) int64 {
	lo, hi, want := 0, len(xs)-1, k-1 // want: the index in descending order
	for lo < hi {
		pivot := xs[lo+(hi-lo)/2]
		i, j := lo, hi
		for i <= j {
			for xs[i] > pivot {
				i++
			}
			for xs[j] < pivot {
				j--
			}
			if i <= j {
				xs[i], xs[j] = xs[j], xs[i]
				i++
				j--
			}
		}
		switch {
		case want <= j:
			hi = j
		case want >= i:
			lo = i
		default:
			return xs[want]
		}
	}
	return xs[want]
}
