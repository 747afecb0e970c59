package feed

import (
	"slices"
	"time"
)

// poll reads the next page of the known streams once without blocking
// (every PollEvery; pollNext): the net under the registry beat. Streams
// not hot that deliver here are ones whose score the beat missed; a poll
// that finds entries on one is counted. A hot stream's entries are the
// hot read's and the beat's: the poll reads it too, and finds there what
// landed while a batch committed, which is no missed score. Until 6 Dec
// 2026 those were counted as well, and codemojex_feed_polls_found_total
// rose under writers that score every entry
// (TestPollFoundCountsOnlyMissedScores).
func (c *Consumer) poll(now time.Time) (bool, error) {
	sts := c.pollNext()
	if len(sts) == 0 {
		return false, nil
	}
	cold := map[string]bool{}
	for _, st := range sts {
		if !st.hot(now) {
			cold[st.key] = true
		}
	}
	missed := false
	got, err := c.readManyThen(sts, nil, now, func(first []delivery) {
		for _, d := range first {
			missed = missed || cold[d.stream]
		}
	})
	if got && missed {
		c.stats.polled.Add(1)
	}
	return got, err
}

// pollPage caps the streams one poll reads: up to pollPage known streams
// every PollEvery is the whole registry, beyond that a round over every
// stream takes several polls (at 100,000 games, 20 polls: 100s at the
// default PollEvery), so that the net's cost stays flat however long the
// history. The sweep's census (lag → due) is the slower net beneath it.
const pollPage = 10 * maxKeys

// pollNext returns the next page of the poll: up to pollPage readable
// streams, not due, that the current round has not read yet, in key
// order. When none remains past this page, the round is over and the
// next poll starts a new one. Its cost per call is one walk over the known
// streams' map, no sort of the registry.
func (c *Consumer) pollNext() []*streamState {
	if c.pollRound == 0 {
		c.pollRound = 1
	}
	out := make([]*streamState, 0, min(len(c.streams), pollPage))
	now := time.Now()
	more := false // a stream of this round is left for the next poll
	for _, st := range c.streams {
		if st.polled >= c.pollRound || !st.readable() || st.due || st.down(now) {
			continue
		}
		if len(out) == pollPage {
			more = true
			break
		}
		st.polled = c.pollRound
		out = append(out, st)
	}
	// The round ends with its last page, full or not: ended only by a
	// page short of pollPage, a round of exactly pages' worth (5,000
	// streams) left the next poll nothing to read, and the net came
	// every other PollEvery (TestPollRoundOfExactPages).
	if !more {
		c.pollRound++
	}
	slices.SortFunc(out, func(a, b *streamState) int { return cmpKey(a.key, b.key) })
	return out
}
