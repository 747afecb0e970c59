package feed

import (
	"slices"
	"time"

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

	pinned   bool   // a static stream: always in the read set
	open     bool   // the group is known to exist: read and claim it
	needDoor bool   // run XGROUP CREATE before using the stream
	inspect  bool   // XINFO GROUPS after the door: pending and lag decide the rest
	recover  bool   // read the own pending list from 0 before ">"
	due      bool   // read ">" without blocking next turn
	pending  bool   // the group has pending entries here
	seenOpen bool   // the group existed once: a creation is a re-creation
	noGroup  bool   // a read's NOGROUP named it (or none of the read's streams), not read since; the door leaves it (readFailed)
	caught   bool   // the store was caught up with the group (catchup.go)
	newest   string // the newest position known given to the group: by ">", the census or the store (reread)
	rewound  string // the newest re-read position left pending before its look at the dead positions (skipDead)
	// A catch-up under way across turns (catchup.go): the XRANGE start of
	// its next page, the group's last-delivered id it runs to, and the
	// entries it handed so far.
	catchNext, catchLast string
	catchN               int
	gauged               bool // pending and lag gauges carry this game's label
	listed               bool // in the work set's list (workSet)
	hotUntil             time.Time
	score                float64 // last registry score seen (unix ms of the last event)
	seenPass             int     // the sweep pass that last listed it
	polled               int     // the poll round that last read it

	// Entries a catch-up's handler refused with a plain error, each tried
	// again MinIdle later (catchRetryAll).
	refused []refusal

	doorErr     error
	doorBackoff backoff.Backoff
	nextDoor    time.Time
	// Its node did not answer (a master down or failing over): the steps
	// pass it over until downUntil (setAside).
	downUntil   time.Time
	downBackoff backoff.Backoff
}

func (st *streamState) hot(now time.Time) bool { return st.pinned || now.Before(st.hotUntil) }

// down reports whether the stream is set aside, its node unreachable.
func (st *streamState) down(now time.Time) bool { return now.Before(st.downUntil) }

// busy reports whether the stream has a reason to stay in the work set.
func (st *streamState) busy(now time.Time) bool {
	return st.pinned || st.needDoor || st.inspect || st.recover || st.due || st.pending || (st.open && !st.caught) || st.catchLast != "" || len(st.refused) > 0 ||
		now.Before(st.hotUntil)
}

// readable reports whether the stream may be read with ">" and claimed: a
// stream whose store is not yet caught up is not (catchUpAll).
func (st *streamState) readable() bool { return st.open && st.caught && !st.inspect && !st.recover }

func gameOf(stream string) string {
	g, _ := event.GameOfKey(stream)
	return g
}

func newStream(key string) *streamState {
	return &streamState{key: key, game: gameOf(key), slot: event.Slot(key), needDoor: true, recover: true,
		doorBackoff: backoff.Backoff{Min: time.Second, Max: time.Minute},
		downBackoff: backoff.Backoff{Min: 100 * time.Millisecond, Max: downRetryMax}}
}

// Working returns the stream keys of the read set as of the last turn: the
// games being read, claimed or counted now. Status pages show these (and
// the most recent games) instead of the whole registry.
func (c *Consumer) Working() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.working)
}

// workSet is the read set: the streams with a reason to be read, by key
// and in key order. Every turn walks it several times while its members
// change far less often, so the order is restored once after a change
// rather than sorted by every walk: with thousands of hot games, per-turn
// sorts of the whole set were most of the loop's CPU and its latency
// (docs/benchmarks.md, "many hot games").
//
// The slice that all returns is never changed in place: an add appends past
// its length, and a re-sort or a removal makes a new slice, so a walk may
// go on while the set changes under it.
type workSet struct {
	byKey    map[string]*streamState
	list     []*streamState // the members, in key order unless unsorted
	unsorted bool           // members were appended since the last sort
	removed  bool           // list still holds members removed from byKey
	gen      uint64         // counts membership changes
}

func newWorkSet() workSet { return workSet{byKey: map[string]*streamState{}} }

func (w *workSet) len() int { return len(w.byKey) }

func (w *workSet) has(st *streamState) bool { return w.byKey[st.key] == st }

// add makes st a member; adding a member again does nothing.
func (w *workSet) add(st *streamState) {
	if w.byKey[st.key] == st {
		return
	}
	if _, ok := w.byKey[st.key]; ok {
		w.removed = true // another state under the same key leaves the list
	}
	w.byKey[st.key] = st
	w.gen++
	if !st.listed { // else removed and back before the list was compacted
		st.listed = true
		w.list = append(w.list, st)
		w.unsorted = true
	}
}

// remove drops the member under key, if any.
func (w *workSet) remove(key string) {
	if _, ok := w.byKey[key]; ok {
		delete(w.byKey, key)
		w.removed = true
		w.gen++
	}
}

// all returns the members in key order. The caller must not change the
// slice. After a change it builds the list anew, in one pass: removed
// members dropped, then a sort if members were appended.
func (w *workSet) all() []*streamState {
	if !w.removed && !w.unsorted {
		return w.list
	}
	kept := make([]*streamState, 0, len(w.byKey))
	for _, st := range w.list {
		if w.byKey[st.key] == st {
			kept = append(kept, st)
		} else {
			st.listed = false
		}
	}
	if w.unsorted {
		slices.SortFunc(kept, func(a, b *streamState) int { return cmpKey(a.key, b.key) })
	}
	w.list, w.removed, w.unsorted = kept, false, false
	return w.list
}

func cmpKey(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// track adds st to the work set.
func (c *Consumer) track(st *streamState) { c.work.add(st) }

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
// and goes through the door; a game whose score moved (up, or down by
// hand) is due for a read.
// A recent score makes it hot (in the blocking read) until ActiveWindow
// after that score, by the local clock when the writer's is ahead.
func (c *Consumer) seeGame(game string, score float64, now time.Time) *streamState {
	if !event.ValidGame(game) {
		return nil
	}
	key := event.StreamKey(game)
	st := c.streams[key]
	if st == nil {
		if d, ok := c.deleted[key]; ok {
			if d.score == score {
				// Its stream was deleted and no writer has scored it
				// since: as a new game, it would go through the door
				// with MKSTREAM, and the deleted stream would be back,
				// empty, for good (TestDeletedStreamStaysDeleted).
				d.pass = c.sweep.pass
				c.deleted[key] = d
				return nil
			}
			delete(c.deleted, key)
		}
		st = newStream(key)
		st.score = score
		c.streams[key] = st
		c.found++
	} else if score != st.score {
		// Risen, as scores do (ZADD GT), or lowered: by hand, by a
		// failover that lost the last ZADD, or a score set back from a
		// writer's clock far ahead. Either way the baseline moves, or a
		// game once scored a day ahead would wake no beat again until its
		// new scores passed the old one (TestBeatAfterScoreLowered); and
		// its stream is read once, for what was written meanwhile.
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
		if !st.hot(now) {
			c.hotSet.stale = true // the hot read must take it in now
		}
		st.hotUntil = until
	}
	c.track(st)
	return st
}

// deletedGame is a registry game forgotten because its stream was
// deleted: its score then, and the sweep pass that last listed it.
type deletedGame struct {
	score float64
	pass  int
}

// forgetDeleted forgets st, whose stream was deleted, until a writer
// scores its game again: until then the beat and the sweep pass it over.
func (c *Consumer) forgetDeleted(st *streamState) {
	c.forget(st)
	if st.pinned || st.game == "" {
		return
	}
	if c.deleted == nil {
		c.deleted = map[string]deletedGame{}
	}
	c.deleted[st.key] = deletedGame{score: st.score, pass: c.sweep.pass}
}

// forget drops a stream the consumer no longer follows (gone from the
// registry or the static list, or deleted), with its gauges' labels: a
// label left behind would report the game's last pending and lag for good.
func (c *Consumer) forget(st *streamState) {
	delete(c.streams, st.key)
	c.work.remove(st.key)
	ungauge(st)
}

// ungauge deletes the pending and lag gauges' labels of st, if it has any.
func ungauge(st *streamState) {
	if st.gauged {
		mPending.DeleteLabelValues(labelOf(st))
		mLag.DeleteLabelValues(labelOf(st))
		st.gauged = false
	}
}

// prune drops from the work set the streams with no reason left, clears
// their gauges, and publishes the sizes, at most every pruneEvery. The keys
// for Working are published after a change of members, at most every
// workingEvery: status pages do not need them fresher, and a copy of
// thousands of keys every turn would cost the loop what the sorts did.
func (c *Consumer) prune(now time.Time) {
	if now.Before(c.nextPrune) {
		return
	}
	c.nextPrune = now.Add(pruneEvery)
	hot := 0
	for _, st := range c.work.all() {
		if st.busy(now) {
			if st.hot(now) {
				hot++
			}
			continue
		}
		c.work.remove(st.key)
		ungauge(st)
	}
	if c.work.gen != c.workingGen && !now.Before(c.nextWorking) {
		all := c.work.all()
		keys := make([]string, len(all))
		for i, st := range all {
			keys[i] = st.key
		}
		c.mu.Lock()
		c.working = keys
		c.mu.Unlock()
		c.workingGen, c.nextWorking = c.work.gen, now.Add(workingEvery)
	}
	c.stats.known.Store(int64(len(c.streams)))
	c.stats.working.Store(int64(c.work.len()))
	c.stats.hot.Store(int64(hot))
	mStreams.WithLabelValues("known").Set(float64(len(c.streams)))
	mStreams.WithLabelValues("working").Set(float64(c.work.len()))
	mStreams.WithLabelValues("hot").Set(float64(hot))
}

const (
	// pruneEvery is the most often prune walks the work set. A turn can
	// be a millisecond or two; a stream with no reason left costs the
	// turns in between only its place in their walks.
	pruneEvery = 50 * time.Millisecond
	// workingEvery is the most often prune publishes the work set's keys.
	workingEvery = time.Second
)

func labelOf(st *streamState) string {
	if st.game != "" {
		return st.game
	}
	return st.key
}

// pick returns the work-set streams for which keep is true, in key order
// (stable pipelines and logs). Streams set aside (their node unreachable)
// are left out: every caller sends them commands.
func (c *Consumer) pick(keep func(*streamState) bool) []*streamState {
	var out []*streamState
	now := time.Now()
	for _, st := range c.work.all() {
		if keep(st) && !st.down(now) {
			out = append(out, st)
		}
	}
	return out
}

// upOf returns the streams of sts not set aside (down), sts itself when
// none is.
func upOf(sts []*streamState, now time.Time) []*streamState {
	for i, st := range sts {
		if st.down(now) {
			up := slices.Clone(sts[:i])
			for _, st := range sts[i+1:] {
				if !st.down(now) {
					up = append(up, st)
				}
			}
			return up
		}
	}
	return sts
}
