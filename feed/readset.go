package feed

import (
	"slices"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/internal/backoff"
	"github.com/codemojex/feed/internal/event"
)

// The read set (docs/reader-law.md, "The read set"): the loop knows every
// stream of the registry, but each turn touches only the streams in its
// work set, those with a reason to be read. A stream is in the work set
// while one of these holds:
//
//   - pinned: a static stream (Config.Streams), always read;
//   - needDoor, inspect, recover, not caught: it is on its way in (group
//     door, census of its pending and lag, the store's catch-up, own
//     pending list);
//   - due: it has entries to read now (woken, lag seen, a full read);
//   - pending: the group has pending entries on it (claimed and counted);
//   - hot: its registry score is recent or it delivered lately, so it is in
//     the blocking read.
//
// A stream with none of them leaves the work set and costs nothing per turn
// until the registry beat or the slow sweep brings it back.

// streamState is the loop's view of one stream.
type streamState struct {
	key  string
	game string
	slot int

	pinned   bool // a static stream: always in the read set
	open     bool // the group is known to exist: read and claim it
	needDoor bool // run XGROUP CREATE before using the stream
	inspect  bool // XINFO GROUPS after the door: pending and lag decide the rest
	recover  bool // read the own pending list from 0 before ">"
	due      bool // read ">" without blocking next turn
	pending  bool // the group has pending entries here
	seenOpen bool // the group existed once: a creation is a re-creation
	caught   bool // the store was caught up with the group (catchup.go)
	// A catch-up under way across turns (catchup.go): the XRANGE start of
	// its next page, the group's last-delivered id it runs to, and the
	// entries it handed so far.
	catchNext, catchLast string
	catchN               int
	gauged               bool // pending and lag gauges carry this game's label
	hotUntil             time.Time
	score                float64 // last registry score seen (unix ms of the last event)
	seenPass             int     // the sweep pass that last listed it
	polled               int     // the poll round that last read it

	doorErr     error
	doorBackoff backoff.Backoff
	nextDoor    time.Time
}

func (st *streamState) hot(now time.Time) bool { return st.pinned || now.Before(st.hotUntil) }

// busy reports whether the stream has a reason to stay in the work set.
func (st *streamState) busy(now time.Time) bool {
	return st.pinned || st.needDoor || st.inspect || st.recover || st.due || st.pending || (st.open && !st.caught) || st.catchLast != "" ||
		now.Before(st.hotUntil)
}

// readable reports whether ">" reads may go to the stream.
// readable reports whether the stream may be read with ">" and claimed: a
// stream whose store is not yet caught up is not (catchUpAll).
func (st *streamState) readable() bool { return st.open && st.caught && !st.inspect && !st.recover }

func gameOf(stream string) string {
	g, _ := event.GameOfKey(stream)
	return g
}

func newStream(key string) *streamState {
	return &streamState{key: key, game: gameOf(key), slot: event.Slot(key), needDoor: true, recover: true,
		doorBackoff: backoff.Backoff{Min: time.Second, Max: time.Minute}}
}

// Working returns the stream keys of the read set as of the last turn: the
// games being read, claimed or counted now. Status pages show these (and
// the most recent games) instead of the whole registry.
func (c *Consumer) Working() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.working)
}

// track adds st to the work set.
func (c *Consumer) track(st *streamState) { c.work[st.key] = st }

// markPending notes that the group has pending entries on stream (a handler
// failed, a dead letter could not be written): claims and the census look
// at it until the census finds its pending list empty.
func (c *Consumer) markPending(stream string) {
	if st := c.streams[stream]; st != nil {
		st.pending = true
		c.track(st)
	}
}

// seeGame records a registry member with its score. A new game is added
// and goes through the door; a game whose score moved is due for a read.
// A recent score makes it hot (in the blocking read) until ActiveWindow
// after that score, by the local clock when the writer's is ahead.
func (c *Consumer) seeGame(game string, score float64, now time.Time) *streamState {
	if !event.ValidGame(game) {
		return nil
	}
	key := event.StreamKey(game)
	st := c.streams[key]
	if st == nil {
		st = newStream(key)
		st.score = score
		c.streams[key] = st
		c.found++
	} else if score > st.score {
		st.score = score
		st.due = true
	} else {
		return st
	}
	at := time.UnixMilli(int64(score))
	if at.After(now) {
		at = now
	}
	if until := at.Add(c.cfg.ActiveWindow); until.After(st.hotUntil) && until.After(now) {
		st.hotUntil = until
	}
	c.track(st)
	return st
}

// prune drops from the work set the streams with no reason left, clears
// their gauges, and publishes the sizes.
func (c *Consumer) prune(now time.Time) {
	hot := 0
	for k, st := range c.work {
		if st.busy(now) {
			if st.hot(now) {
				hot++
			}
			continue
		}
		delete(c.work, k)
		if st.gauged {
			mPending.DeleteLabelValues(labelOf(st))
			mLag.DeleteLabelValues(labelOf(st))
			st.gauged = false
		}
	}
	keys := make([]string, 0, len(c.work))
	for k := range c.work {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	c.mu.Lock()
	c.working = keys
	c.mu.Unlock()
	c.stats.known.Store(int64(len(c.streams)))
	c.stats.working.Store(int64(len(c.work)))
	c.stats.hot.Store(int64(hot))
	mStreams.WithLabelValues("known").Set(float64(len(c.streams)))
	mStreams.WithLabelValues("working").Set(float64(len(c.work)))
	mStreams.WithLabelValues("hot").Set(float64(hot))
}

func labelOf(st *streamState) string {
	if st.game != "" {
		return st.game
	}
	return st.key
}

// pick returns the work-set streams for which keep is true, in key order
// (stable pipelines and logs).
func (c *Consumer) pick(keep func(*streamState) bool) []*streamState {
	var out []*streamState
	for _, st := range c.work {
		if keep(st) {
			out = append(out, st)
		}
	}
	slices.SortFunc(out, func(a, b *streamState) int {
		switch {
		case a.key < b.key:
			return -1
		case a.key > b.key:
			return 1
		}
		return 0
	})
	return out
}

// maxKeys caps the streams of one multi-key XREADGROUP.
const maxKeys = 500

// pollPage caps the streams one poll reads: up to pollPage known streams
// every PollEvery is the whole registry, beyond that a round over every
// stream takes several polls (at 100,000 games, 20 polls: 100s at the
// default PollEvery), so that the net's cost stays flat however long the
// history. The sweep's census (lag → due) is the slower net beneath it.
const pollPage = 10 * maxKeys

// pollNext returns the next page of the poll: up to pollPage readable
// streams, not due, that the current round has not read yet, in key
// order. When fewer than pollPage remain, the round is over and the next
// poll starts a new one. Its cost per call is one walk over the known
// streams' map, no sort of the registry.
func (c *Consumer) pollNext() []*streamState {
	if c.pollRound == 0 {
		c.pollRound = 1
	}
	out := make([]*streamState, 0, min(len(c.streams), pollPage))
	for _, st := range c.streams {
		if st.polled >= c.pollRound || !st.readable() || st.due {
			continue
		}
		st.polled = c.pollRound
		out = append(out, st)
		if len(out) == pollPage {
			break
		}
	}
	if len(out) < pollPage {
		c.pollRound++
	}
	slices.SortFunc(out, func(a, b *streamState) int { return cmpKey(a.key, b.key) })
	return out
}

// groups splits streams into the key sets of multi-key commands: at most
// maxKeys each and, on a cluster, all of one hash slot (a multi-key
// XREADGROUP over two slots fails with CROSSSLOT, even on one node).
// Streams keep their relative order inside a group.
func (c *Consumer) groups(sts []*streamState) [][]*streamState {
	if !c.perSlot {
		return slices.Collect(slices.Chunk(sts, maxKeys))
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
		out = append(out, slices.Collect(slices.Chunk(bySlot[s], maxKeys))...)
	}
	return out
}

// isCluster reports whether rdb is a cluster client.
func isCluster(rdb redis.UniversalClient) bool {
	_, ok := rdb.(*redis.ClusterClient)
	return ok
}

// streamsArgs is the STREAMS part of an XREADGROUP: keys, then one id each.
func streamsArgs(sts []*streamState, id func(*streamState) string) []string {
	args := make([]string, 0, 2*len(sts))
	for _, st := range sts {
		args = append(args, st.key)
	}
	for _, st := range sts {
		args = append(args, id(st))
	}
	return args
}
