package feed

import (
	"sync"
	"sync/atomic"
)

// Stats is a snapshot of one Consumer's counters since Open.
type Stats struct {
	Delivered        int64 // entries received with their fields, all paths (malformed ones too)
	Recovered        int64 // of which from the own pending list at start
	Claimed          int64 // entries taken over by XAUTOCLAIM
	Acked            int64 // handler returned nil, XACK confirmed
	Failed           int64 // handler error or panic, left pending
	Panics           int64 // of which panics
	Dead             int64 // dead-lettered, all reasons
	Malformed        int64 // of which malformed entries
	Trimmed          int64 // pending entries found deleted, acked (pending path)
	ClaimDeleted     int64 // deleted ids reported by XAUTOCLAIM (claim path)
	KeptAlive        int64 // idle-time refreshes of entries in hand
	GroupErrors      int64 // XGROUP CREATE failures other than BUSYGROUP
	GroupsCreated    int64 // groups created where none was
	GroupsRecreated  int64 // of which after NOGROUP
	ConsumersDeleted int64 // idle consumers removed
	LoopErrors       int64 // failed loop operations (Redis down, ...)
	Pauses           int64 // times the consumer paused on an Unavailable verdict
	DeadDuplicates   int64 // dead letters not written: one exists for that stream position
	CaughtUp         int64 // entries handed to the handler by catch-up
	CatchUpSkipped   int64 // streams behind their group only by pending entries: no re-read
	Gaps             int64 // streams found trimmed past what the store has, catch-up entries given up on
	Polled           int64 // polls of every stream that found entries the registry beat missed
	Lingered         int64 // blocking reads that waited Config.Linger after a small batch

	// The read set now (docs/reader-law.md, "The read set").
	Known   int64 // streams known (the registry's games, or the static list)
	Working int64 // of which with a reason to be read this turn
	Hot     int64 // of which in the blocking read (recently active)
}

// counters are the one place a consumer's events are counted: Stats reads
// them, and the process's Prometheus collector (metrics.go) sums them over
// the consumers. Where a metric has a label, the count is kept per label
// value and Stats adds them up.
type counters struct {
	delivered     labeled // by path (new, pending, claim)
	dead          labeled // by reason
	trimmed       labeled // by path, found by process
	groupErrors   labeled // by Redis error code
	groupsCreated labeled // by cause (new, recreated)
	loopErrors    labeled // by operation

	acked, failed, panics, claimed, keptAlive, malformed   atomic.Int64
	claimDeleted, consumersDeleted, pauses, deadDuplicates atomic.Int64
	caughtUp, gaps, polled, lingered, catchUpSkipped       atomic.Int64

	known, working, hot atomic.Int64 // gauges of the read set, not counters
}

func (c *counters) snapshot() Stats {
	return Stats{
		Delivered:        c.delivered.sum(),
		Recovered:        c.delivered.get(pathPending),
		Claimed:          c.claimed.Load(),
		Acked:            c.acked.Load(),
		Failed:           c.failed.Load(),
		Panics:           c.panics.Load(),
		Dead:             c.dead.sum(),
		Malformed:        c.malformed.Load(),
		Trimmed:          c.trimmed.sum(),
		ClaimDeleted:     c.claimDeleted.Load(),
		KeptAlive:        c.keptAlive.Load(),
		GroupErrors:      c.groupErrors.sum(),
		GroupsCreated:    c.groupsCreated.sum(),
		GroupsRecreated:  c.groupsCreated.get(causeRecreated),
		ConsumersDeleted: c.consumersDeleted.Load(),
		LoopErrors:       c.loopErrors.sum(),
		Pauses:           c.pauses.Load(),
		DeadDuplicates:   c.deadDuplicates.Load(),
		CaughtUp:         c.caughtUp.Load(),
		CatchUpSkipped:   c.catchUpSkipped.Load(),
		Gaps:             c.gaps.Load(),
		Polled:           c.polled.Load(),
		Lingered:         c.lingered.Load(),
		Known:            c.known.Load(),
		Working:          c.working.Load(),
		Hot:              c.hot.Load(),
	}
}

// Causes of a group's creation; they label codemojex_feed_groups_created_total.
const (
	causeNew       = "new"
	causeRecreated = "recreated"
)

// labeled is a counter kept per label value. The values are open-ended
// (Redis error codes, PoisonAs labels), so they are added as they come.
type labeled struct {
	m sync.Map // label value -> *atomic.Int64
}

func (l *labeled) add(label string, n int64) {
	v, ok := l.m.Load(label)
	if !ok {
		v, _ = l.m.LoadOrStore(label, new(atomic.Int64))
	}
	v.(*atomic.Int64).Add(n)
}

func (l *labeled) get(label string) int64 {
	if v, ok := l.m.Load(label); ok {
		return v.(*atomic.Int64).Load()
	}
	return 0
}

func (l *labeled) sum() int64 {
	var n int64
	for _, v := range l.each {
		n += v
	}
	return n
}

// each yields every label value with its count.
func (l *labeled) each(yield func(string, int64) bool) {
	l.m.Range(func(k, v any) bool {
		return yield(k.(string), v.(*atomic.Int64).Load())
	})
}
